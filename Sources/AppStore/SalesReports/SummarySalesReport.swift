// Apple's daily Summary Sales Report (its columns as Apple documents them for App Store Connect's
// sales reports): the text of the file once it is decompressed, read strictly.
// Tab-separated, first line the header, columns found by their header name (their order varies
// between copies of the file), every value checked. Any problem makes the whole day an error:
// the job stores nothing of it and asks again the next night. No I/O.

import Reconciliation

/// One row of the file, as the job keeps it. Numbers stay as the decimal text Apple wrote (checked
/// to be one), so nothing is rounded on the way to the database's `numeric`.
public struct SalesReportRow: Sendable, Equatable {
    /// For an in-app purchase, its product id (`iap_products.product_id`).
    public var sku: String
    /// `Product Type Identifier`: `IA1`, `IAY`, `IA3` (a restore), `1F` (an app)…
    public var productType: String
    /// Signed decimal, at most two decimals: negative for a refund or a CMB credit.
    public var units: String
    /// Per unit, in `proceedsCurrency`.
    public var developerProceeds: String
    public var proceedsCurrency: String
    /// Per unit, tax included, in `customerCurrency` (negative on refund rows).
    public var customerPrice: String
    public var customerCurrency: String
    /// ISO 3166-1 alpha-2.
    public var countryCode: String
    /// The `CMB` column's value when the file has the column and the row fills it (a credit).
    public var cmb: String?

    public init(sku: String, productType: String, units: String, developerProceeds: String, proceedsCurrency: String,
                customerPrice: String, customerCurrency: String, countryCode: String, cmb: String?) {
        (self.sku, self.productType, self.units, self.developerProceeds, self.proceedsCurrency) =
            (sku, productType, units, developerProceeds, proceedsCurrency)
        (self.customerPrice, self.customerCurrency, self.countryCode, self.cmb) = (customerPrice, customerCurrency, countryCode, cmb)
    }

    /// An in-app purchase row of Apple's product type table (restores included: `isRestore`).
    public var isInAppPurchase: Bool { SummarySalesReport.inAppPurchaseTypes.contains(productType) || isRestore }
    /// `IA3`: a restored non-consumable, never a sale (kept apart).
    public var isRestore: Bool { productType == SummarySalesReport.restoreType }
}

/// Why a day's file was not believed: said in the run's warnings and stored with the day's error.
public struct SalesReportProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

public enum SummarySalesReport {
    /// The columns the job reads; a file without one of them is an error.
    public static let requiredColumns = ["SKU", "Product Type Identifier", "Units", "Developer Proceeds", "Begin Date",
                                         "Customer Currency", "Country Code", "Currency of Proceeds", "Customer Price"]
    /// Read when present.
    public static let optionalColumns = ["End Date", "CMB"]

    /// In-app purchase types of Apple's table (H-PTI): iOS/iPadOS/visionOS, Mac, non-renewing,
    /// auto-renewable. `IAC` is only in an old third-party list: not ours.
    public static let inAppPurchaseTypes: Set<String> = ["IA1", "IA1-M", "FI1", "IA9", "IA9-M", "IAY", "IAY-M"]
    public static let restoreType = "IA3"

    /// Units are Apple's `DECIMAL(18,2)`: at most 16 digits before the point.
    static let unitIntegerDigits = 16
    /// Money: at most 14 digits before the point and 4 after (the job's `numeric(18,4)`).
    static let moneyIntegerDigits = 14, moneyFractionDigits = 4

    /// The rows of the file of `day` (`text`: the decompressed bytes), or the problem that makes
    /// the day an error. Lines end in `\n` (`\r\n` accepted; the final newline optional).
    public static func parse(_ text: [UInt8], day: ReportDay) -> Result<[SalesReportRow], SalesReportProblem> {
        guard String(validating: text, as: UTF8.self) != nil else {
            return .failure(SalesReportProblem("the file is not UTF-8 text"))
        }
        // Split on the bytes: in a Swift String "\r\n" is one Character, never equal to "\n".
        var bytes = text[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let headerLine = lines.first, !headerLine.isEmpty else { return .failure(SalesReportProblem("the file is empty")) }
        let header = fields(headerLine)
        var index: [String: Int] = [:]
        for (i, name) in header.enumerated() {
            let name = trimmed(name)
            guard index[name] == nil else { return .failure(SalesReportProblem("the header names column \"\(shown(name))\" twice")) }
            index[name] = i
        }
        let missing = requiredColumns.filter { index[$0] == nil }
        guard missing.isEmpty else {
            return .failure(SalesReportProblem("the header lacks column" + (missing.count > 1 ? "s " : " ")
                + missing.joined(separator: ", ") + " (not a Summary Sales Report)"))
        }
        func column(_ name: String) -> Int { index[name]! }
        let sku = column("SKU"), type = column("Product Type Identifier"), units = column("Units")
        let proceeds = column("Developer Proceeds"), begin = column("Begin Date"), end = index["End Date"]
        let customerCurrency = column("Customer Currency"), country = column("Country Code")
        let proceedsCurrency = column("Currency of Proceeds"), price = column("Customer Price"), cmb = index["CMB"]

        var rows: [SalesReportRow] = []
        rows.reserveCapacity(lines.count - 1)
        for (n, line) in lines.enumerated().dropFirst() {
            let lineNumber = n + 1
            func problem(_ what: String) -> Result<[SalesReportRow], SalesReportProblem> {
                .failure(SalesReportProblem("line \(lineNumber): \(what)"))
            }
            let f = fields(line)
            guard f.count == header.count else {
                return problem("\(f.count) fields, the header has \(header.count)")
            }
            let v = f.map(trimmed)
            guard !v[sku].isEmpty else { return problem("SKU is empty") }
            guard !v[type].isEmpty else { return problem("Product Type Identifier is empty") }
            guard isDecimal(v[units], integerDigits: unitIntegerDigits, fractionDigits: 2) else {
                return problem("Units \"\(shown(v[units]))\" is not a decimal number of at most 16 digits and 2 decimals")
            }
            for (name, i) in [("Developer Proceeds", proceeds), ("Customer Price", price)]
            where !isDecimal(v[i], integerDigits: moneyIntegerDigits, fractionDigits: moneyFractionDigits) {
                return problem("\(name) \"\(shown(v[i]))\" is not a decimal number of at most 14 digits and 4 decimals")
            }
            for (name, i) in [("Begin Date", begin)] + (end.map { [("End Date", $0)] } ?? []) {
                guard let d = reportDay(v[i]) else {
                    return problem("\(name) \"\(shown(v[i]))\" is not a date (MM/DD/YYYY or YYYY-MM-DD)")
                }
                guard d == day else { return problem("\(name) \(d.text) is not the day asked, \(day.text)") }
            }
            guard isLetters(v[country], count: 2) else {
                return problem("Country Code \"\(shown(v[country]))\" is not two capital letters")
            }
            for (name, i) in [("Customer Currency", customerCurrency), ("Currency of Proceeds", proceedsCurrency)]
            where !isLetters(v[i], count: 3) {
                return problem("\(name) \"\(shown(v[i]))\" is not three capital letters")
            }
            let credit = cmb.map { v[$0] }.flatMap { $0.isEmpty ? nil : $0 }
            rows.append(SalesReportRow(sku: v[sku], productType: v[type], units: v[units], developerProceeds: v[proceeds],
                                       proceedsCurrency: v[proceedsCurrency], customerPrice: v[price],
                                       customerCurrency: v[customerCurrency], countryCode: v[country], cmb: credit))
        }
        return .success(rows)
    }

    /// A line's fields, split on tabs (a `\r` before the line's `\n` taken off).
    static func fields(_ line: ArraySlice<UInt8>) -> [Substring] {
        var line = line
        if line.last == 0x0D { line.removeLast() }
        return line.split(separator: 0x09, omittingEmptySubsequences: false).map { Substring(String(decoding: $0, as: UTF8.self)) }
    }

    static func trimmed(_ s: Substring) -> String {
        var s = s
        while let c = s.first, c == " " { s.removeFirst() }
        while let c = s.last, c == " " { s.removeLast() }
        return String(s)
    }

    /// `-?digits(.digits)?`, within the digit counts (no exponent, no grouping, no `+`).
    static func isDecimal(_ s: String, integerDigits: Int, fractionDigits: Int) -> Bool {
        var u = Substring(s).utf8
        if u.first == UInt8(ascii: "-") { u = u.dropFirst() }
        let parts = u.split(separator: UInt8(ascii: "."), maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= integerDigits, whole.allSatisfy(isDigit) else { return false }
        if parts.count == 2 {
            let fraction = parts[1]
            guard !fraction.isEmpty, fraction.count <= fractionDigits, fraction.allSatisfy(isDigit) else { return false }
        }
        return true
    }

    static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

    static func isLetters(_ s: String, count: Int) -> Bool {
        s.utf8.count == count && s.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
    }

    /// `MM/DD/YYYY` or `YYYY-MM-DD`.
    static func reportDay(_ s: String) -> ReportDay? {
        let u = Array(s.utf8)
        guard u.count == 10 else { return nil }
        func number(_ r: Range<Int>) -> Int? {
            guard u[r].allSatisfy(isDigit) else { return nil }
            return u[r].reduce(0) { $0 * 10 + Int($1 - 48) }
        }
        if u[2] == UInt8(ascii: "/"), u[5] == UInt8(ascii: "/"), let m = number(0..<2), let d = number(3..<5), let y = number(6..<10) {
            return ReportDay(year: y, month: m, day: d)
        }
        if u[4] == UInt8(ascii: "-"), u[7] == UInt8(ascii: "-"), let y = number(0..<4), let m = number(5..<7), let d = number(8..<10) {
            return ReportDay(year: y, month: m, day: d)
        }
        return nil
    }

    /// At most 20 characters of a value, control characters shown as `?`, for a problem text.
    static func shown(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.prefix(20).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
            + (s.unicodeScalars.count > 20 ? "…" : "")
    }
}
