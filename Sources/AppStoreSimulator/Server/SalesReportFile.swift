// Apple's daily Summary Sales Report made from the truth, as Apple writes it (its columns as Apple
// documents them; the job reads it as docs/contract.md, "Apple's daily sales reports", says).
//
// A report day is a calendar day in the report time zone (`--sales-report-timezone`, default
// America/Los_Angeles). Every production transaction of an app served is a sale of `quantity`
// units on the day of its purchase, in its storefront's country and currency; every refund the
// truth holds (not reversed, not a FAMILY_REVOKE) is a row on the day of its revocation with
// negative units, a negative customer price and positive proceeds. Family-shared transactions are
// no sale (the family member paid nothing). Customer price per unit = the truth's price / quantity,
// else the product's list price, else 0; proceeds per unit = 70% of it, rounded half up to the
// currency's minor unit (JPY none). Rows that agree on every column but Units are one row with
// their units added up (a summary report). Each day with sales also has the app's own row
// (product type `1F`, SKU the bundle id, a few units) and, on about one day in three, an `IA3` row
// (a restored non-consumable, never a sale): the job must ignore both.
//
// The columns come in two orders, both Apple's: order A (28 columns) on even days of the month,
// order B (26: no Parent Identifier and Order Type, Customer Currency and Country Code after
// Customer Price) on odd days, so that one demo reads both. Begin Date and End Date are the day as
// MM/DD/YYYY; units are whole numbers (`3`, `-1`); text is tab-separated, `\n` after every line.

import Foundation
import Reconciliation

/// The report's rows, indexed by day once: the truth does not change while serving.
package struct SalesReportBook: Sendable {
    /// Report day (`YYYY-MM-DD`) → its events (a sale or a refund of a truth row).
    private let days: [String: [Event]]
    let truth: AppleTruth
    /// The apps served, in order: the n-th one's Apple ID is `appAppleID + n`.
    let bundleIDs: [String]
    let appAppleID: Int64

    struct Event: Sendable {
        var row: Int
        var refund: Bool
    }

    /// Report day → the rows whose consumption request's outcome falls on it
    /// (ConsumptionOutcomes.swift): a REFUND outcome is a refund Apple made that day. Outcomes are
    /// decided when first needed, so the day's report decides those of its day when it is served
    /// (`SalesReportService`): the day has ended, and so has every 12-hour window of its outcomes'
    /// requests, so no answer can still change them.
    private let outcomeRows: [String: [Int]]

    /// Order A: the full header (28 names).
    static let orderA = [
        "Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier", "Units",
        "Developer Proceeds", "Begin Date", "End Date", "Customer Currency", "Country Code", "Currency of Proceeds",
        "Apple Identifier", "Customer Price", "Promo Code", "Parent Identifier", "Subscription", "Period", "Category",
        "CMB", "Device", "Supported Platforms", "Proceeds Reason", "Preserved Pricing", "Client", "Order Type",
    ]

    /// Order B: without Parent Identifier and Order Type, Customer Currency and Country Code after
    /// Customer Price (26 names).
    static let orderB = [
        "Provider", "Provider Country", "SKU", "Developer", "Title", "Version", "Product Type Identifier", "Units",
        "Developer Proceeds", "Begin Date", "End Date", "Currency of Proceeds", "Apple Identifier", "Customer Price",
        "Customer Currency", "Country Code", "Promo Code", "Subscription", "Period", "Category", "CMB", "Device",
        "Supported Platforms", "Proceeds Reason", "Preserved Pricing", "Client",
    ]

    /// The order of a day (`YYYY-MM-DD`): A on even days of the month, B on odd ones.
    static func columns(of day: String) -> [String] {
        (Int(day.suffix(2)) ?? 0) % 2 == 0 ? orderA : orderB
    }

    init(truth: AppleTruth, bundleIDs: [String], appAppleID: Int64, timeZone: TimeZone) {
        self.truth = truth
        self.bundleIDs = bundleIDs
        self.appAppleID = appAppleID
        let served = Set(bundleIDs)
        var days: [String: [Event]] = [:], outcomeRows: [String: [Int]] = [:]
        for (i, row) in truth.rows.enumerated()
        where row.environment == .production && served.contains(row.bundleID) && !row.familyShared {
            days[Self.day(of: row.purchaseDateMs, in: timeZone), default: []].append(Event(row: i, refund: false))
            if let refund = row.refund, refund.reversedMs == nil, refund.type != "FAMILY_REVOKE" {
                days[Self.day(of: refund.cancellationDateMs, in: timeZone), default: []].append(Event(row: i, refund: true))
            }
            // A request of a transaction the truth refunds gets no outcome (ConsumptionOutcomes.swift).
            if row.refund == nil, let request = row.consumptionRequest {
                let at = ConsumptionOutcomeModel.outcomeMs(transactionID: row.transactionID, request: request)
                outcomeRows[Self.day(of: at, in: timeZone), default: []].append(i)
            }
        }
        self.days = days
        self.outcomeRows = outcomeRows
    }

    /// The calendar day (`YYYY-MM-DD`) of an instant in a zone.
    package static func day(of ms: Int64, in zone: TimeZone) -> String {
        let offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000)))
        return UTC.date(ms + offset * 1000)
    }

    /// When day `day` (`YYYY-MM-DD`) is published: 08:00 America/Los_Angeles the day after (UNIX ms).
    package static func publishedMs(_ day: String) -> Int64? {
        guard let start = UTC.parse(day + "T00:00:00Z"), let la = TimeZone(identifier: "America/Los_Angeles") else {
            return nil
        }
        // 08:00 of the next day as if it were UTC, then moved by Los Angeles' offset at that time
        // (never near a DST change: those happen at 02:00).
        let wall = start + Span.day + 8 * Span.hour
        let guess = wall - Int64(la.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall) / 1000))) * 1000
        return wall - Int64(la.secondsFromGMT(for: Date(timeIntervalSince1970: Double(guess) / 1000))) * 1000
    }

    /// The rows whose consumption request's outcome falls on `day`.
    func outcomes(on day: String) -> [Int] { outcomeRows[day] ?? [] }

    /// The report of one day as text (header first), or nil for a day without sales. `refunded`:
    /// rows refunded that day by a consumption outcome.
    func report(day: String, refunded: [Int] = []) -> String? {
        let events = (days[day] ?? []) + refunded.map { Event(row: $0, refund: true) }
        guard !events.isEmpty else { return nil }
        let dateText = Self.mmddyyyy(day)
        var units: [[String: String]: Int64] = [:]
        var apps = Set<String>()
        for e in events {
            let row = truth.rows[e.row]
            apps.insert(row.bundleID)
            let unit = Self.unitPrice(row)
            let currency = row.storefront.currency
            let proceeds = Self.proceeds(unit: unit, currency: currency)
            var cells = common(row.bundleID, date: dateText)
            cells["SKU"] = row.productID
            cells["Title"] = Self.title(row.productID)
            cells["Product Type Identifier"] = Self.productType(row.productType)
            cells["Developer Proceeds"] = MoneyText.text(proceeds, currency: currency)
            cells["Customer Currency"] = currency
            cells["Currency of Proceeds"] = currency
            cells["Country Code"] = Self.alpha2(row.storefront)
            cells["Apple Identifier"] = String(Self.appleIdentifier(row.productID))
            cells["Customer Price"] = (e.refund ? "-" : "") + MoneyText.text(unit, currency: currency)
            cells["Parent Identifier"] = row.bundleID
            if row.productType == .autoRenewable {
                cells["Subscription"] = row.transactionID == row.originalTransactionID ? "New" : "Renewal"
                cells["Period"] = row.productID.hasSuffix("week") ? "7 Days" : "1 Month"
            }
            units[cells, default: 0] += Int64(row.quantity) * (e.refund ? -1 : 1)
        }
        // What the job must ignore: the app's own row and, now and then, a restore.
        let dayHash = SimHash.fnv(day)
        for app in apps.sorted() {
            var cells = common(app, date: dateText)
            cells["SKU"] = app
            cells["Title"] = app
            cells["Product Type Identifier"] = "1F"
            cells["Version"] = "1.0"
            cells["Developer Proceeds"] = "0"
            cells["Customer Price"] = "0"
            cells["Apple Identifier"] = String(appAppleID + Int64(bundleIDs.firstIndex(of: app) ?? 0))
            units[cells, default: 0] += Int64(1 + SimHash.combine(dayHash, SimHash.fnv(app)) % 5)
            if SimHash.combine(dayHash, SimHash.fnv(app), 0x1A3) % 3 == 0 {
                var restore = common(app, date: dateText)
                restore["SKU"] = app + ".no_ads"
                restore["Title"] = "no_ads"
                restore["Product Type Identifier"] = "IA3"
                restore["Developer Proceeds"] = "0"
                restore["Customer Price"] = "0"
                restore["Apple Identifier"] = String(Self.appleIdentifier(app + ".no_ads"))
                restore["Parent Identifier"] = app
                units[restore, default: 0] += 1
            }
        }
        let columns = Self.columns(of: day)
        var lines: [String] = []
        for (cells, n) in units {
            var full = cells
            full["Units"] = String(n)
            lines.append(columns.map { full[$0] ?? "" }.joined(separator: "\t"))
        }
        lines.sort()
        return columns.joined(separator: "\t") + "\n" + lines.map { $0 + "\n" }.joined()
    }

    /// The cells every row of an app has.
    private func common(_ app: String, date: String) -> [String: String] {
        ["Provider": "APPLE", "Provider Country": "US", "Developer": "Example Games Ltd", "Begin Date": date,
         "End Date": date, "Customer Currency": "USD", "Country Code": "US", "Currency of Proceeds": "USD",
         "Category": "Games", "Device": "iPhone", "Supported Platforms": "iOS"]
    }

    /// One unit's price in milliunits of the storefront's currency: the truth's price / quantity,
    /// else the product's list price there, else 0.
    package static func unitPrice(_ row: AppleTruthRow) -> Int64 {
        if let price = row.price {
            return MoneyText.prorated(price, 1, Int64(max(1, row.quantity)), currency: row.storefront.currency)
        }
        return PriceList.unit(row.productID, at: row.storefront) ?? 0
    }

    /// Developer Proceeds of one unit: 70% of its price, rounded to the currency's minor unit.
    package static func proceeds(unit: Int64, currency: String) -> Int64 { MoneyText.prorated(unit, 7, 10, currency: currency) }

    static func productType(_ type: ProductType) -> String {
        switch type {
        case .consumable, .nonConsumable: return "IA1"
        case .autoRenewable: return "IAY"
        case .nonRenewing: return "IA9"
        }
    }

    /// ISO 3166-1 alpha-2 of a storefront.
    package static func alpha2(_ s: SimStorefront) -> String {
        switch s.code {
        case "JPN": return "JP"
        case "DEU": return "DE"
        default: return "US"
        }
    }

    /// The in-app purchase's Apple ID: a number derived from its product id.
    static func appleIdentifier(_ productID: String) -> Int64 {
        1_500_000_000 + Int64(SimHash.fnv(productID) % 100_000_000)
    }

    /// The last part of a product id (`coins100`).
    static func title(_ productID: String) -> String {
        productID.split(separator: ".").last.map(String.init) ?? productID
    }

    /// `YYYY-MM-DD` → `MM/DD/YYYY`.
    static func mmddyyyy(_ day: String) -> String {
        let p = day.split(separator: "-")
        return p.count == 3 ? "\(p[1])/\(p[2])/\(p[0])" : day
    }
}
