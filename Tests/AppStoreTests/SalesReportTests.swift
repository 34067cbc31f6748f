// Apple's daily Summary Sales Report read by header name (both column orders Apple writes),
// every value checked, any problem making the whole day an error; the
// report days of a night in Pacific time (across the DST change of 2026-11-01) and the two-day
// 404 rule; the request and App Store Connect's error bodies. No network.

import Foundation
import Testing

@testable import AppStore

@Suite("Apple's Summary Sales Report")
struct SalesReportTests {
    /// Order A (28 columns).
    static let orderA = ["Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier",
                         "Units", "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code",
                         "Currency of Proceeds", "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier",
                         "Subscription", "Period", "Category", "CMB", "Device", "Supported Platforms", "Proceeds Reason",
                         "Preserved Pricing", "Client", "Order Type"]
    /// Order B: without Parent Identifier and Order Type, Customer Currency and Country Code after Customer Price.
    static let orderB: [String] = {
        var b = orderA.filter { !["Parent Identifier", "Order Type", "Customer Currency", "Country Code"].contains($0) }
        let at = b.firstIndex(of: "Customer Price")! + 1
        b.insert(contentsOf: ["Customer Currency", "Country Code"], at: at)
        return b
    }()

    static let day = ReportDay("2026-11-20")!

    /// One row as name → value; the columns a header lacks are left out.
    static func row(sku: String = "com.example.game.coins100", type: String = "IA1", units: String = "3",
                    proceeds: String = "0.70", begin: String = "11/20/2026", end: String = "11/20/2026",
                    customerCurrency: String = "USD", country: String = "US", proceedsCurrency: String = "USD",
                    price: String = "0.99", cmb: String = "") -> [String: String] {
        ["Provider": "APPLE", "Provider Country": "US", "SKU": sku, "Developer": "Example Ltd", "Title": "Coins",
         "Version": "", "Product Type Identifier": type, "Units": units, "Developer Proceeds": proceeds,
         "Begin Date": begin, "End Date": end, "Customer Currency": customerCurrency, "Country Code": country,
         "Currency of Proceeds": proceedsCurrency, "Apple Identifier": "1234567890", "Customer Price": price,
         "Promo Code": "", "Parent Identifier": "game", "Subscription": "", "Period": "", "Category": "Games", "CMB": cmb,
         "Device": "iPhone", "Supported Platforms": "iOS", "Proceeds Reason": "", "Preserved Pricing": "", "Client": "",
         "Order Type": ""]
    }

    static func file(_ header: [String], _ rows: [[String: String]], newline: String = "\n", finalNewline: Bool = true) -> [UInt8] {
        let lines = [header.joined(separator: "\t")] + rows.map { r in header.map { r[$0] ?? "" }.joined(separator: "\t") }
        return Array((lines.joined(separator: newline) + (finalNewline ? newline : "")).utf8)
    }

    static func parse(_ bytes: [UInt8], day: ReportDay = day) -> Result<[SalesReportRow], SalesReportProblem> {
        SummarySalesReport.parse(bytes, day: day)
    }

    static func problem(_ bytes: [UInt8], day: ReportDay = day) -> String? {
        if case .failure(let p) = parse(bytes, day: day) { return p.reason }
        return nil
    }

    @Test("both column orders give the same rows, read by header name; CRLF and no final newline accepted")
    func bothOrders() throws {
        let rows = [Self.row(), Self.row(sku: "com.example.game.coins500", type: "IA1", units: "-1", proceeds: "105",
                                         customerCurrency: "JPY", country: "JP", proceedsCurrency: "JPY", price: "-160"),
                    Self.row(sku: "com.example.game.vip", type: "IA3", units: "1", proceeds: "0", price: "0"),
                    Self.row(sku: "game", type: "1F", units: "4", proceeds: "0", price: "0"),
                    Self.row(units: "-1.00", price: "-0.99", cmb: "CMB")]
        let a = try Self.parse(Self.file(Self.orderA, rows)).get()
        let b = try Self.parse(Self.file(Self.orderB, rows, newline: "\r\n", finalNewline: false)).get()
        #expect(a == b)
        #expect(a.count == 5)
        #expect(a[1] == SalesReportRow(sku: "com.example.game.coins500", productType: "IA1", units: "-1", developerProceeds: "105",
                                       proceedsCurrency: "JPY", customerPrice: "-160", customerCurrency: "JPY",
                                       countryCode: "JP", cmb: nil))
        #expect(a.map(\.isInAppPurchase) == [true, true, true, false, true])
        #expect(a.map(\.isRestore) == [false, false, true, false, false])
        #expect(a[4].cmb == "CMB")
        // ISO dates accepted as well; CMB optional (a header without it).
        let iso = Self.file(Self.orderA.filter { $0 != "CMB" }, [Self.row(begin: "2026-11-20", end: "2026-11-20")])
        #expect(try Self.parse(iso).get().first?.cmb == nil)
        // A header-only file: a day with no rows.
        #expect(try Self.parse(Self.file(Self.orderA, [])).get().isEmpty)
    }

    @Test("a wrong or missing header, a duplicate column name, a row of the wrong width: the day is an error")
    func headers() {
        let missing = Self.orderA.filter { $0 != "Developer Proceeds" }
        #expect(Self.problem(Self.file(missing, [Self.row()]))?.contains("lacks column Developer Proceeds") == true)
        let renamed = Self.orderA.map { $0 == "Units" ? "Quantity" : $0 }
        #expect(Self.problem(Self.file(renamed, [Self.row()]))?.contains("Units") == true)
        let twice = Self.orderA + ["SKU"]
        #expect(Self.problem(Self.file(twice, [Self.row()]))?.contains("names column \"SKU\" twice") == true)
        var short = Self.file(Self.orderA, [Self.row()])
        short.removeLast()  // the newline
        short.append(contentsOf: Array("\n\t\t\n".utf8))
        #expect(Self.problem(short)?.contains("line 3: 3 fields, the header has 28") == true)
        #expect(Self.problem([])?.contains("empty") == true)
        #expect(Self.problem(Array("<html>Service Unavailable</html>".utf8))?.contains("lacks") == true)
    }

    @Test("invalid UTF-8 is an error")
    func utf8() {
        var bytes = Self.file(Self.orderA, [Self.row(sku: "com.example.game.coinsX")])
        let x = bytes.firstIndex(of: UInt8(ascii: "X"))!
        bytes[x] = 0xC3  // a lead byte without its continuation
        #expect(Self.problem(bytes) == "the file is not UTF-8 text")
    }

    @Test("dates: another day, another form, an impossible date")
    func dates() {
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(begin: "11/19/2026")]))?.contains("Begin Date 2026-11-19 is not the day asked, 2026-11-20") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(end: "11/21/2026")]))?.contains("End Date 2026-11-21") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(begin: "20/11/2026")]))?.contains("is not a date") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(begin: "2026/11/20")]))?.contains("is not a date") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(begin: "02/30/2026")]))?.contains("is not a date") == true)
    }

    @Test("numbers: huge, malformed, too many decimals are errors; negative units and prices are refunds")
    func numbers() {
        for units in ["12345678901234567", "1e3", "1,000", "+1", "1.", ".5", "1.234", "--1", "1-", "(1)", "", "NaN"] {
            #expect(Self.problem(Self.file(Self.orderA, [Self.row(units: units)]))?.contains("Units") == true, "\(units)")
        }
        for proceeds in ["123456789012345", "0.12345", "-", "0,70", "$0.70"] {
            #expect(Self.problem(Self.file(Self.orderA, [Self.row(proceeds: proceeds)]))?.contains("Developer Proceeds") == true,
                    "\(proceeds)")
        }
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(price: "99999999999999999")]))?.contains("Customer Price") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(units: "-2", price: "-0.99")])) == nil)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(units: "1234567890123456.00", proceeds: "12345678901234.1234")])) == nil)
    }

    @Test("country and currency codes")
    func codes() {
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(country: "USA")]))?.contains("Country Code") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(country: "us")]))?.contains("Country Code") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(customerCurrency: "US")]))?.contains("Customer Currency") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(proceedsCurrency: "usd")]))?.contains("Currency of Proceeds") == true)
        #expect(Self.problem(Self.file(Self.orderA, [Self.row(sku: "")]))?.contains("SKU is empty") == true)
    }

    // MARK: days

    static let pacific = ReportDays(zone: TimeZone(identifier: "America/Los_Angeles")!)
    static func ms(_ iso: String) -> Int64 {
        let f = ISO8601DateFormatter()
        return Int64(f.date(from: iso)!.timeIntervalSince1970 * 1000)
    }
    static func days(_ texts: [String]) -> [ReportDay] { texts.map { ReportDay($0)! } }

    @Test("the window's days in Pacific time across the end of daylight saving time (2026-11-01)")
    func windowAcrossDST() {
        let p = Self.pacific
        // 2026-11-01 runs from 07:00Z (PDT, UTC-7) to 08:00Z the next day (PST, UTC-8): 25 hours.
        #expect(p.start(of: ReportDay("2026-11-01")!) == Self.ms("2026-11-01T07:00:00Z"))
        #expect(p.end(of: ReportDay("2026-11-01")!) == Self.ms("2026-11-02T08:00:00Z"))
        #expect(p.end(of: ReportDay("2026-10-31")!) - p.start(of: ReportDay("2026-10-31")!) == 24 * 3_600_000)
        // 23:30 PST on 11-01: that day has not ended, the last day asked is 10-31.
        #expect(p.window(asOf: Self.ms("2026-11-02T07:30:00Z"), windowDays: 3) == Self.days(["2026-10-30", "2026-10-31"]))
        // Midnight PST: 11-01 is over.
        #expect(p.window(asOf: Self.ms("2026-11-02T08:00:00Z"), windowDays: 3) == Self.days(["2026-10-30", "2026-10-31", "2026-11-01"]))
        // 23:59 PDT on 10-31 (06:59Z on 11-01): the day before is 10-30.
        #expect(p.window(asOf: Self.ms("2026-11-01T06:59:00Z"), windowDays: 1) == Self.days(["2026-10-30"]))
        // At most 365 days, ending the day before as-of's day.
        let year = p.window(asOf: Self.ms("2026-11-21T15:00:00Z"), windowDays: 5000)
        #expect(year.count == 365 && year.last == ReportDay("2026-11-20") && year.first == ReportDay("2025-11-21"))
        // UTC gives other days at the same instant.
        let utc = ReportDays(zone: TimeZone(identifier: "UTC")!)
        #expect(utc.window(asOf: Self.ms("2026-11-02T07:30:00Z"), windowDays: 1) == Self.days(["2026-11-01"]))
    }

    @Test("a 404 is an empty day only once the day ended more than two days before as-of")
    func twoDayRule() {
        let p = Self.pacific
        let day = ReportDay("2026-11-01")!  // ends 2026-11-02T08:00Z
        #expect(!p.mayKeepEmpty(day, asOf: Self.ms("2026-11-04T08:00:00Z")))  // exactly 48 h
        #expect(p.mayKeepEmpty(day, asOf: Self.ms("2026-11-04T08:00:01Z")))
        #expect(!p.mayKeepEmpty(ReportDay("2026-11-20")!, asOf: Self.ms("2026-11-21T15:00:00Z")))
        #expect(p.mayKeepEmpty(ReportDay("2026-11-18")!, asOf: Self.ms("2026-11-21T15:00:00Z")))
        #expect(!p.mayKeepEmpty(ReportDay("2026-11-19")!, asOf: Self.ms("2026-11-21T15:00:00Z")))
    }

    @Test("report days: text, ordinal, impossible dates")
    func reportDays() {
        #expect(ReportDay("2026-02-29") == nil && ReportDay("2028-02-29") != nil && ReportDay("2026-13-01") == nil)
        #expect(ReportDay("1970-01-01")!.ordinal == 0)
        #expect(ReportDay("2026-12-31")!.adding(days: 1) == ReportDay("2027-01-01"))
        #expect(ReportDay("2028-03-01")!.adding(days: -1).text == "2028-02-29")
    }

    // MARK: the request and error bodies

    @Test("the request names every filter, percent-encoded; Apple's 400 names the version to ask")
    func request() {
        let r = SalesReportRequest.request(vendorNumber: "85012345", day: ReportDay("2026-11-20")!, version: "1_0")
        #expect(r.service == .connect && r.method == .get)
        #expect(r.path == "/v1/salesReports?filter%5Bfrequency%5D=DAILY&filter%5BreportType%5D=SALES&filter%5BreportSubType%5D=SUMMARY"
            + "&filter%5BvendorNumber%5D=85012345&filter%5BreportDate%5D=2026-11-20&filter%5Bversion%5D=1_0")
        #expect(SalesReportRequest.version(of: r) == "1_0")
        let body = Array(#"{"errors":[{"status":"400","code":"PARAMETER_ERROR.INVALID","title":"A parameter has an invalid value","detail":"The version parameter you have specified is invalid. The latest version for this report is 1_1."}]}"#.utf8)
        let detail = SalesReportRequest.errorDetail(body)
        #expect(detail?.hasPrefix("The version parameter") == true)
        #expect(SalesReportRequest.latestVersion(inDetail: detail!) == "1_1")
        #expect(SalesReportRequest.latestVersion(inDetail: "The latest version for this report is 1_1&x=2.") == nil)
        #expect(SalesReportRequest.latestVersion(inDetail: "no version here") == nil)
        #expect(SalesReportRequest.errorDetail(Array("<html>".utf8)) == nil)
        #expect(SalesReportRequest.errorDetail(Array(#"{"errors":[{"title":"T"}]}"#.utf8)) == "T")
    }
}
