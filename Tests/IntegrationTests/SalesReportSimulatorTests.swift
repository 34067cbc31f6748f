// App Store Connect's daily Summary Sales Report as `iap-sim serve --connect-key` answers it
// over real HTTP (the job's libcurl client) from a real `iap-sim serve`: the
// file is gzip (read back by gzip(1), not by the simulator's code) with Apple's header names in
// order A on even days and order B on odd days; a day falls in America/Los_Angeles across the DST
// change; refunds are rows on their revocation day; and the 400, 401, 403, 404 and 429 answers
// with their bodies and the X-Rate-Limit header. And `iap-sim seed --unseen-share`: purchases the
// shop never saw are in the truth and the report, and nothing else the seed writes changes.

import AppStore
import AppStoreSimulator
import Foundation
import HTTP
import Reconciliation
import Testing

@Suite("simulated App Store Connect: sales reports", .serialized)
struct SalesReportSimulatorTests {
    static let keyID = "TEAMKEY123"
    static let issuer = "69a6de7a-aaaa-47e3-e053-5b8c7c11a4d1"
    static let vendor = "88012345"
    static let bundle = "com.example.game"
    static let keyPEM = APICredentials.newPrivateKeyPEM()

    static func ms(_ iso: String) -> Int64 { UTC.parse(iso)! }

    /// The truth of the hand-made tests: purchases around the end of DST in Los Angeles
    /// (2026-11-01 02:00 PDT → 01:00 PST, i.e. 09:00Z), a refund, a sandbox purchase, a purchase
    /// not published yet.
    static func truthRows(now: Int64) -> [AppleTruthRow] {
        let coins = bundle + ".coins100", big = bundle + ".coins500"
        func row(_ tid: String, _ product: String, qty: Int = 1, at: Int64, store: SimStorefront = .usa,
                 env: AppStoreEnvironment = .production, refund: SimRefund? = nil) -> AppleTruthRow {
            let unit: Int64 = store.currency == "JPY" ? (product == big ? 800_000 : 160_000) : (product == big ? 4_990 : 990)
            return AppleTruthRow(transactionID: tid, productID: product, productType: .consumable, quantity: qty,
                                 purchaseDateMs: at, environment: env, bundleID: bundle, customer: "U" + tid,
                                 refund: refund, storefront: store, price: unit * Int64(qty))
        }
        return [
            // 23:30 PDT on Oct 31.
            row("3000000000000001", coins, at: ms("2026-11-01T06:30:00Z")),
            // 01:30 PDT on Nov 1 (before the change) and 23:30 PST on Nov 1 (after it: UTC-8).
            row("3000000000000002", coins, qty: 2, at: ms("2026-11-01T08:30:00Z")),
            row("3000000000000003", coins, at: ms("2026-11-02T07:30:00Z")),
            // 00:30 PST on Nov 2.
            row("3000000000000004", coins, at: ms("2026-11-02T08:30:00Z")),
            // Bought in Japan on Oct 20, refunded on Oct 31 at 13:00 PDT.
            row("3000000000000005", big, at: ms("2026-10-20T18:00:00Z"), store: SimStorefront.named("JPN")!,
                refund: SimRefund(cancellationDateMs: ms("2026-10-31T20:00:00Z"), reason: "1")),
            // Sandbox: never in a sales report.
            row("3000000000000006", coins, at: ms("2026-11-02T18:00:00Z"), env: .sandbox),
            // Two days ahead of the wall clock: not published.
            row("3000000000000007", coins, at: now + 2 * 86_400_000),
        ]
    }

    /// A simulator serving the sales reports from `rows` (or `truthFile`), with its key file.
    static func serve(rows: [AppleTruthRow]? = nil, truthFile: URL? = nil, _ extra: [String] = []) throws -> SimulatorProcess {
        let dir = try Harness.scratchDirectory("sales")
        let key = dir.appendingPathComponent("team.p8")
        try Data(keyPEM.utf8).write(to: key)
        var truth = truthFile
        if let rows {
            let file = dir.appendingPathComponent("truth.tsv")
            try Data((AppleTruthFile.header + rows.map(AppleTruthFile.line).joined()).utf8).write(to: file)
            truth = file
        }
        return try SimulatorProcess(["--apple-truth", truth!.path, "--api-key", key.path, "--api-key-id", "IAPKEY",
                                     "--api-issuer", issuer, "--api-bundle", bundle, "--pki", dir.appendingPathComponent("pki").path,
                                     "--connect-key", key.path, "--connect-key-id", keyID, "--connect-issuer", issuer,
                                     "--connect-vendor", vendor] + extra)
    }

    struct Answer {
        var status: Int
        var body: [UInt8]
        var headers: [String: String]
        var text: String { String(decoding: body, as: UTF8.self) }
        var rateLimit: String? { headers["X-Rate-Limit"] }
        var error: [String: Any]? {
            ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])
                .flatMap { ($0["errors"] as? [[String: Any]])?.first }
        }
    }

    /// The design's request, names percent-encoded as the job sends them.
    static func query(date: String?, version: String? = "1_0", vendor: String = vendor, frequency: String = "DAILY",
                      subType: String = "SUMMARY") -> String {
        var q = "filter%5Bfrequency%5D=\(frequency)&filter%5BreportType%5D=SALES&filter%5BreportSubType%5D=\(subType)"
            + "&filter%5BvendorNumber%5D=\(vendor)"
        if let date { q += "&filter%5BreportDate%5D=\(date)" }
        if let version { q += "&filter%5Bversion%5D=\(version)" }
        return q
    }

    /// The team key's token, as the job makes it.
    static func token() throws -> String {
        try AppStoreJWT.teamKey(privateKeyPEM: keyPEM, keyID: keyID, issuerID: issuer).token(now: Int64(Date().timeIntervalSince1970))
    }

    /// A token with its claims as given (`kid` too).
    static func token(claims: String, kid: String = keyID) throws -> String {
        try ES256Signer(pkcs8PEM: keyPEM, keyID: kid, type: "JWT").sign(json: claims)
    }

    static func get(_ sim: SimulatorProcess, _ query: String, token: String? = nil) throws -> Answer {
        HTTPGlobal.initialize()
        let multi = HTTPMulti()
        defer { multi.close() }
        let bearer = try token ?? Self.token()
        try multi.add(HTTPRequest(tag: 1, method: .get, url: "http://127.0.0.1:\(sim.port)/v1/salesReports?" + query,
                                  headers: ["Authorization: Bearer " + bearer, "Accept: application/a-gzip"], timeoutMs: 10_000,
                                  wantedHeaders: ["Content-Type", "X-Rate-Limit"]))
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline {
            for done in multi.poll(timeoutMs: 200) {
                switch done.outcome {
                case .response(let status, let body): return Answer(status: status, body: body, headers: done.headers)
                case .failure(_, let message, _): throw SimulatorStartError(message: message)
                }
            }
        }
        throw SimulatorStartError(message: "no answer")
    }

    /// gzip(1)'s reading of a body: an implementation other than the simulator's.
    static func gunzip(_ bytes: [UInt8]) throws -> String {
        let dir = try Harness.scratchDirectory("gz")
        let file = dir.appendingPathComponent("report.gz")
        try Data(bytes).write(to: file)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        p.arguments = ["-dc", file.path]
        let out = dir.appendingPathComponent("report.tsv")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: out)
        try p.run()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "gzip -dc failed")
        return try String(contentsOf: out, encoding: .utf8)
    }

    /// A report's rows as dictionaries by header name, and the header.
    static func rows(_ text: String) -> (header: [String], rows: [[String: String]]) {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.last == "", "every line ends with \\n")
        lines.removeLast()
        let header = lines.first.map { $0.components(separatedBy: "\t") } ?? []
        let rows = lines.dropFirst().map { line -> [String: String] in
            let cells = line.components(separatedBy: "\t")
            #expect(cells.count == header.count, "\(line)")
            return Dictionary(zip(header, cells), uniquingKeysWith: { a, _ in a })
        }
        return (header, rows)
    }

    static let orderA = ["Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier",
                         "Units", "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code",
                         "Currency of Proceeds", "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier",
                         "Subscription", "Period", "Category", "CMB", "Device", "Supported Platforms", "Proceeds Reason",
                         "Preserved Pricing", "Client", "Order Type"]

    static func report(_ sim: SimulatorProcess, _ day: String) throws -> (header: [String], rows: [[String: String]]) {
        let a = try get(sim, query(date: day))
        #expect(a.status == 200, "\(day): \(a.status) \(a.text)")
        #expect(a.headers["Content-Type"] == "application/a-gzip")
        #expect(Array(a.body.prefix(2)) == [0x1F, 0x8B], "a gzip file")
        return rows(try gunzip(a.body))
    }

    /// In-app rows (not the app's own, not IA3) by SKU: units.
    static func iapUnits(_ rows: [[String: String]], sign: Int = 1) -> [String: Int] {
        var out: [String: Int] = [:]
        for r in rows where r["Product Type Identifier"]?.hasPrefix("IA") == true && r["Product Type Identifier"] != "IA3" {
            let u = Int(r["Units"] ?? "") ?? 0
            if u * sign > 0 { out[r["SKU"]!, default: 0] += u }
        }
        return out
    }

    @Test("a day's file is gzip with Apple's header: order A on an even day, order B on an odd one; purchases fall on their Los Angeles day across the DST change")
    func ordersAndDays() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let sim = try Self.serve(rows: Self.truthRows(now: now))
        defer { sim.stop() }
        let coins = Self.bundle + ".coins100"
        // Nov 2 (even): order A, the purchase of 00:30 PST only.
        let nov2 = try Self.report(sim, "2026-11-02")
        #expect(nov2.header == Self.orderA)
        #expect(Self.iapUnits(nov2.rows) == [coins: 1], "\(nov2.rows)")
        let sale = try #require(nov2.rows.first { $0["SKU"] == coins })
        #expect(sale["Begin Date"] == "11/02/2026" && sale["End Date"] == "11/02/2026")
        #expect(sale["Customer Price"] == "0.99" && sale["Developer Proceeds"] == "0.69" && sale["Product Type Identifier"] == "IA1")
        #expect(sale["Country Code"] == "US" && sale["Customer Currency"] == "USD" && sale["Currency of Proceeds"] == "USD")
        #expect(sale["Parent Identifier"] == Self.bundle)
        // The app's own row is there, to be ignored.
        #expect(nov2.rows.contains { $0["Product Type Identifier"] == "1F" && $0["SKU"] == Self.bundle })
        // Nov 1 (odd): order B; 01:30 PDT (2 units) and 23:30 PST are one row of 3 units.
        let nov1 = try Self.report(sim, "2026-11-01")
        #expect(nov1.header.count == 26 && Set(nov1.header) == Set(Self.orderA).subtracting(["Parent Identifier", "Order Type"]))
        #expect(nov1.header != Self.orderA.filter { $0 != "Parent Identifier" && $0 != "Order Type" }, "Customer Currency and Country Code moved")
        #expect(nov1.header.firstIndex(of: "Country Code")! > nov1.header.firstIndex(of: "Customer Price")!)
        #expect(Self.iapUnits(nov1.rows) == [coins: 3], "\(nov1.rows)")
        #expect(nov1.rows.filter { $0["SKU"] == coins }.count == 1, "a summary: one row for the same sale")
        // Oct 31 (odd): 23:30 PDT's purchase, and the Japanese refund at 13:00 PDT.
        let oct31 = try Self.report(sim, "2026-10-31")
        #expect(Self.iapUnits(oct31.rows) == [coins: 1])
        #expect(Self.iapUnits(oct31.rows, sign: -1) == [Self.bundle + ".coins500": -1])
        let refund = try #require(oct31.rows.first { $0["SKU"] == Self.bundle + ".coins500" })
        #expect(refund["Customer Price"] == "-800" && refund["Developer Proceeds"] == "560", "yen: no decimals, proceeds positive")
        #expect(refund["Country Code"] == "JP" && refund["Customer Currency"] == "JPY" && refund["Begin Date"] == "10/31/2026")
        // Oct 20 (even): the Japanese purchase itself.
        #expect(Self.iapUnits(try Self.report(sim, "2026-10-20").rows) == [Self.bundle + ".coins500": 1])
    }

    @Test("404 with Apple's body for a day without sales and for a day not published yet; 400 for another version, naming the one served, and for a wrong vendor, report or date")
    func notFoundAndBadParameters() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let sim = try Self.serve(rows: Self.truthRows(now: now))
        defer { sim.stop() }
        let none = try Self.get(sim, Self.query(date: "2026-10-25"))
        #expect(none.status == 404 && none.error?["code"] as? String == "NOT_FOUND")
        #expect(none.error?["detail"] as? String == "There were no sales for the date specified.")
        #expect(none.error?["title"] as? String == "The specified resource does not exist")
        // A day with a purchase, two days ahead: not published (and so is yesterday until 08:00 PT).
        let ahead = UTC.date(now + 2 * 86_400_000 - 8 * 3_600_000)
        let future = try Self.get(sim, Self.query(date: ahead))
        #expect(future.status == 404 && future.error?["detail"] as? String == "There were no sales for the date specified.", "\(ahead)")
        let version = try Self.get(sim, Self.query(date: "2026-11-02", version: "1_3"))
        #expect(version.status == 400 && version.error?["code"] as? String == "PARAMETER_ERROR.INVALID")
        #expect(version.error?["detail"] as? String
            == "The version parameter you have specified is invalid. The latest version for this report is 1_0.")
        let noVersion = try Self.get(sim, Self.query(date: "2026-11-02", version: nil))
        #expect(noVersion.status == 400 && (noVersion.error?["detail"] as? String)?.hasSuffix("is 1_0.") == true)
        for bad in [Self.query(date: "2026-11-02", vendor: "999"), Self.query(date: "2026-11-02", frequency: "WEEKLY"),
                    Self.query(date: "2026-11-02", subType: "DETAILED"), Self.query(date: "2026-02-30"),
                    Self.query(date: "11/02/2026")] {
            let a = try Self.get(sim, bad)
            #expect(a.status == 400 && a.error?["code"] as? String == "PARAMETER_ERROR.INVALID", "\(bad): \(a.status) \(a.text)")
            #expect(a.rateLimit?.hasPrefix("user-hour-lim:3500;user-hour-rem:") == true)
        }
    }

    @Test("401 NOT_AUTHORIZED for a token with bid, another kid or iss, a lifetime past 1200 s, an expired one, an In-App Purchase key's shape")
    func tokens() throws {
        let sim = try Self.serve(rows: Self.truthRows(now: Int64(Date().timeIntervalSince1970 * 1000)))
        defer { sim.stop() }
        let now = Int64(Date().timeIntervalSince1970)
        func claims(iss: String = Self.issuer, iat: Int64 = now, life: Int64 = 600, extra: String = "") -> String {
            #"{"iss":"\#(iss)","iat":\#(iat),"exp":\#(iat + life),"aud":"appstoreconnect-v1"\#(extra)}"#
        }
        let good = try Self.get(sim, Self.query(date: "2026-11-02"), token: Self.token(claims: claims(life: 1200)))
        #expect(good.status == 200, "a 20-minute token is good: \(good.text)")
        let bad = [
            ("bid", try Self.token(claims: claims(extra: #","bid":"com.example.game""#))),
            ("kid", try Self.token(claims: claims(), kid: "OTHERKEY99")),
            ("iss", try Self.token(claims: claims(iss: "someone-else"))),
            ("lifetime", try Self.token(claims: claims(life: 1201))),
            ("exp", try Self.token(claims: claims(iat: now - 1300, life: 1200))),
        ]
        for (what, token) in bad {
            let a = try Self.get(sim, Self.query(date: "2026-11-02"), token: token)
            #expect(a.status == 401 && a.error?["code"] as? String == "NOT_AUTHORIZED", "\(what): \(a.status) \(a.text)")
            #expect(a.rateLimit != nil, "\(what): every answer has X-Rate-Limit")
        }
        // Another key with the right kid: the signature.
        let other = try ES256Signer(pkcs8PEM: APICredentials.newPrivateKeyPEM(), keyID: Self.keyID, type: "JWT").sign(json: claims())
        #expect(try Self.get(sim, Self.query(date: "2026-11-02"), token: other).status == 401)
        let log = (try? String(contentsOf: sim.callLog, encoding: .utf8)) ?? ""
        for reason in ["401:bid", "401:kid", "401:iss", "401:lifetime", "401:exp", "401:signature"] {
            #expect(log.contains("sales_reports\t" + reason), "call log: \(reason)")
        }
    }

    @Test("--connect-forbidden: 403 FORBIDDEN_ERROR; the hour's budget counts down in X-Rate-Limit and runs out in 429; --sales-report-version is named in the 400")
    func forbiddenAndRateLimit() throws {
        let rows = Self.truthRows(now: Int64(Date().timeIntervalSince1970 * 1000))
        let forbidden = try Self.serve(rows: rows, ["--connect-forbidden"])
        let f = try Self.get(forbidden, Self.query(date: "2026-11-02"))
        forbidden.stop()
        #expect(f.status == 403 && f.error?["code"] as? String == "FORBIDDEN_ERROR", "\(f.status) \(f.text)")
        #expect(f.error?["detail"] as? String == "The API key in use does not allow this request")

        let limited = try Self.serve(rows: rows, ["--connect-hour-limit", "3", "--sales-report-version", "1_1"])
        defer { limited.stop() }
        var seen: [String] = []
        for day in ["2026-11-02", "2026-11-01", "2026-10-25"] {
            let a = try Self.get(limited, Self.query(date: day, version: "1_1"))
            #expect(a.status == 200 || a.status == 404)
            seen.append(a.rateLimit ?? "none")
        }
        #expect(seen == ["user-hour-lim:3;user-hour-rem:2;", "user-hour-lim:3;user-hour-rem:1;", "user-hour-lim:3;user-hour-rem:0;"])
        let over = try Self.get(limited, Self.query(date: "2026-11-02", version: "1_1"))
        #expect(over.status == 429 && over.error?["code"] as? String == "RATE_LIMIT_EXCEEDED", "\(over.status) \(over.text)")
        #expect(over.rateLimit == "user-hour-lim:3;user-hour-rem:0;")
        // Still none left: the refused request took no place, and the next is refused too.
        #expect(try Self.get(limited, Self.query(date: "2026-11-02", version: "1_0")).status == 429)
    }

    @Test("--sales-report-version 1_1: 1_0 gets the 400 naming 1_1")
    func servedVersion() throws {
        let sim = try Self.serve(rows: Self.truthRows(now: Int64(Date().timeIntervalSince1970 * 1000)),
                                 ["--sales-report-version", "1_1"])
        defer { sim.stop() }
        let a = try Self.get(sim, Self.query(date: "2026-11-02", version: "1_0"))
        #expect(a.status == 400 && a.error?["detail"] as? String
            == "The version parameter you have specified is invalid. The latest version for this report is 1_1.")
        #expect(try Self.get(sim, Self.query(date: "2026-11-02", version: "1_1")).status == 200)
    }

    /// The units the truth says, by (day in Los Angeles, SKU, country, currency): sales and refunds.
    /// Counted here with Foundation's calendar, not the simulator's day arithmetic.
    /// Per day, product, country and currency: what the truth says Apple sold and refunded, the
    /// refunds of the consumption requests nobody answers included (the simulator decides those
    /// when it serves their day).
    static func truthUnits(_ truth: AppleTruth) -> (sold: [String: Int], refunded: [String: Int]) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "America/Los_Angeles")!
        func day(_ ms: Int64) -> String {
            let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(ms) / 1000))
            return String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!)
        }
        let alpha2 = ["USA": "US", "JPN": "JP", "DEU": "DE"]
        var sold: [String: Int] = [:], refunded: [String: Int] = [:]
        for r in truth.rows where r.environment == .production && r.bundleID == bundle && !r.familyShared {
            let tail = "|\(r.productID)|\(alpha2[r.storefront.code]!)|\(r.storefront.currency)"
            sold[day(r.purchaseDateMs) + tail, default: 0] += r.quantity
            if let refund = r.refund, refund.reversedMs == nil, refund.type != "FAMILY_REVOKE" {
                refunded[day(refund.cancellationDateMs) + tail, default: 0] += r.quantity
            }
            // A refund request nobody answered: Apple's outcome (ConsumptionOutcomes.swift) on its day.
            if r.refund == nil, let request = r.consumptionRequest,
               ConsumptionOutcomeModel.decide(transactionID: r.transactionID, answer: nil) == .refund {
                let at = ConsumptionOutcomeModel.outcomeMs(transactionID: r.transactionID, request: request)
                refunded[day(at) + tail, default: 0] += r.quantity
            }
        }
        return (sold, refunded)
    }

    @Test("a small seed: every day's in-app units and refund rows are what the truth says, purchases the shop never saw included; --unseen-share 0 changes nothing else the seed writes", .enabled(if: Harness.hasDatabase))
    func seededTruth() throws {
        let dir = try Harness.scratchDirectory("sales-seed")
        var truths: [String: URL] = [:]
        var expected: [String: URL] = [:]
        var refundLists: [String: URL] = [:]
        for share in ["0", "0.05"] {
            let t = try TestDatabase("sales_seed")
            defer { t.drop() }
            let out = dir.appendingPathComponent("share-" + share)
            try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
            truths[share] = out.appendingPathComponent("truth.tsv")
            expected[share] = out.appendingPathComponent("expected")
            refundLists[share] = out.appendingPathComponent("refund-list.csv")
            let seeded = try runTool("iap-sim", ["seed", "--users", "400", "--seed", "11", "--as-of", "2026-11-21T03:00:00Z",
                                                 "--bundle", Self.bundle, "--refunds", refundLists[share]!.path,
                                                 "--expected", expected[share]!.path, "--apple-truth", truths[share]!.path,
                                                 "--unseen-share", share], environment: t.environment())
            #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        }
        // The expected reports and the refund list are the same files; the truth gains lines at its end.
        // coverage.csv alone shows the unseen purchases: Apple sold them, the job never learns them.
        let files = try FileManager.default.contentsOfDirectory(atPath: expected["0"]!.path).sorted()
        let filesWith = try FileManager.default.contentsOfDirectory(atPath: expected["0.05"]!.path).sorted()
        #expect(files.contains("compensate.csv") && files.contains("coverage.csv") && files == filesWith)
        #expect(try Data(contentsOf: expected["0"]!.appendingPathComponent("coverage.csv"))
                != Data(contentsOf: expected["0.05"]!.appendingPathComponent("coverage.csv")))
        for f in files where f != "coverage.csv" {
            let a = try Data(contentsOf: expected["0"]!.appendingPathComponent(f))
            let b = try Data(contentsOf: expected["0.05"]!.appendingPathComponent(f))
            #expect(a == b, "\(f)")
        }
        let listA = try Data(contentsOf: refundLists["0"]!), listB = try Data(contentsOf: refundLists["0.05"]!)
        #expect(listA == listB)
        let without = try String(contentsOf: truths["0"]!, encoding: .utf8)
        let with = try String(contentsOf: truths["0.05"]!, encoding: .utf8)
        #expect(with.hasPrefix(without) && with.count > without.count)
        let all = try AppleTruth.load(path: truths["0.05"]!.path)
        let unseen = all.rows.filter { !$0.notified }
        let production = all.rows.count(where: { $0.environment == .production && $0.notified })
        #expect(unseen.count == Int((Double(production) * 0.05).rounded()) && unseen.count > 5, "\(unseen.count) of \(production)")
        #expect(unseen.allSatisfy { $0.customer.hasPrefix("S") && $0.transactionID.hasPrefix("1000002") })
        // Nobody of the shop's knows them: no expected row names them.
        let expectedText = try files.map { try String(contentsOf: expected["0.05"]!.appendingPathComponent($0), encoding: .utf8) }.joined()
        #expect(unseen.allSatisfy { !expectedText.contains($0.transactionID) })

        let sim = try Self.serve(truthFile: truths["0.05"]!)
        defer { sim.stop() }
        let (sold, refunded) = Self.truthUnits(all)
        var reportSold: [String: Int] = [:], reportRefunded: [String: Int] = [:]
        let days = Set((Array(sold.keys) + Array(refunded.keys)).map { String($0.prefix(10)) })
        var orders = Set<Int>()
        for day in days.sorted() {
            let report = try Self.report(sim, day)
            orders.insert(report.header.count)
            for r in report.rows where r["Product Type Identifier"]?.hasPrefix("IA") == true && r["Product Type Identifier"] != "IA3" {
                let key = day + "|\(r["SKU"]!)|\(r["Country Code"]!)|\(r["Customer Currency"]!)"
                let units = Int(r["Units"]!)!
                if units > 0 { reportSold[key, default: 0] += units } else { reportRefunded[key, default: 0] -= units }
                let p = day.split(separator: "-")
                #expect(r["Begin Date"] == "\(p[1])/\(p[2])/\(p[0])")
            }
        }
        #expect(reportSold == sold)
        #expect(reportRefunded == refunded)
        #expect(!refunded.isEmpty && orders == [26, 28], "refunds, and both orders: \(orders)")
        // The unseen purchases are in the report: their units count in `sold` above.
        let soldKeys = Array(sold.keys)
        #expect(unseen.allSatisfy { row in soldKeys.contains { $0.contains("|" + row.productID + "|") } })
    }
}
