// Proceeds end to end: Apple's proceeds beside the price in refunds.csv, from the days of
// Apple's sales reports a night downloaded (a loopback App Store Connect), against refunded
// transactions of the job's set row by row, so every rule of the contract's proceeds section has a
// row that shows it; and the money totals are the sums of the printed cells.

import Foundation
@testable import NightLearn
import Postgres
import Testing

@Suite("Proceeds: Apple's developer proceeds beside the price", .serialized, .enabled(if: Harness.hasDatabase))
struct ProceedsNightTests {
    typealias S = SalesReportNightTests
    typealias T = SalesFixtures

    /// The report days (window 2026-11-15 … 11-19 in Los Angeles): sale rows of two price tiers, a
    /// day with other proceeds, refund and restore rows (never a rate), a CMB row, a key whose
    /// rows disagree.
    static func files(_ p0: String, _ p1: String) -> [String: [UInt8]] {
        func day(_ d: Int, _ rows: [[String: String]], _ header: [String] = T.orderA) -> [UInt8] {
            let date = "11/\(d)/2026"
            return Gzip.compress(T.file(header, rows.map { var r = $0; r["Begin Date"] = date; r["End Date"] = date; return r }))
        }
        let jp: (String, String) -> [String: String] = { price, proceeds in
            T.row(sku: p1, type: "IAY", units: "1", proceeds: proceeds, customerCurrency: "JPY", country: "JP",
                  proceedsCurrency: "JPY", price: price)
        }
        return [
            "2026-11-15": day(15, [
                T.row(sku: p0, units: "3", proceeds: "0.70", price: "0.99"),
                T.row(sku: p0, units: "1", proceeds: "1.40", price: "1.99"),
                jp("150", "105"),
                // One key, two proceeds: which one a purchase earned cannot be told.
                T.row(sku: p0, units: "1", proceeds: "0.69", customerCurrency: "EUR", country: "DE", proceedsCurrency: "EUR"),
                T.row(sku: p0, units: "1", proceeds: "0.71", customerCurrency: "EUR", country: "DE", proceedsCurrency: "EUR"),
            ]),
            "2026-11-16": day(16, [
                T.row(sku: p0, units: "1", proceeds: "0.65", price: "0.99"),
                // Never a rate: a refund row, a restore, a CMB row.
                T.row(sku: p0, units: "-1", proceeds: "0.80", price: "-0.99"),
                T.row(sku: p0, type: "IA3", units: "1", proceeds: "9.99", price: "2.99"),
                T.row(sku: p1, type: "IAY", units: "1", proceeds: "0.75", customerCurrency: "EUR", country: "DE",
                      proceedsCurrency: "EUR", price: "1.09", cmb: "CMB"),
            ], T.orderB),
            "2026-11-17": day(17, [jp("150", "106")]),
        ]
    }

    /// UNIX ms of a wall time in Los Angeles (November 2026: PST).
    static func pst(_ day: Int, _ hour: Int) -> Int64 { CoverageNightTests.pst(day, hour) }

    @Test("refunds.csv: the held day nearest the purchase, its product, country, currency and unit price; empty without a storefront, a price, a matching row or one agreed proceeds; totals are the cells' sums")
    func proceedsRuleByRule() throws {
        let w = try S.world("proceeds")
        defer { w.stop() }
        let (p0, p1) = (w.products[0], w.products[1])
        w.apple.files = Self.files(p0, p1)
        let first = try w.run()
        #expect(first.status == 0, "\(first.stderr)")
        let db = w.night.t.db
        try db.execute("DELETE FROM recon.apple_transactions")
        let refunded = Self.pst(18, 9)
        func add(_ id: String, _ product: String, purchased: Int64, quantity: Int = 1, storefront: String? = "USA",
                 price: Int64? = 990, currency: String? = "USD", ownership: String? = nil, percentage: Int? = nil,
                 reversed: Int64? = nil) throws {
            _ = try db.query("""
                INSERT INTO recon.apple_transactions (transaction_id, environment, original_transaction_id, product_id, quantity,
                    purchase_date_ms, storefront, price_milliunits, currency, in_app_ownership_type, revocation_date_ms,
                    revocation_type, revocation_percentage, reversed_date_ms)
                VALUES (\(id), 'production', \(id), \(product), \(quantity), \(purchased), \(storefront), \(price), \(currency),
                        \(ownership), \(refunded), \(percentage == nil ? "REFUND_FULL" : "REFUND_PRORATED"), \(percentage), \(reversed))
                """)
        }
        try add("8001", p0, purchased: Self.pst(15, 10))                          // its own day: 0.70
        try add("8002", p0, purchased: Self.pst(16, 10))                          // its own day: 0.65
        try add("8003", p0, purchased: Self.pst(1, 10))                           // before the window: nearest 11-15
        try add("8004", p0, purchased: Self.pst(19, 10), quantity: 3, price: 2970) // 0.99 a unit; nearest 11-16: 3 × 0.65
        try add("8005", p0, purchased: Self.pst(15, 10), price: 1990)             // the other tier: 1.40
        try add("8006", p0, purchased: Self.pst(15, 10), price: 2990)             // no row at 2.99 (the restore's): empty
        try add("8007", p1, purchased: Self.pst(15, 10), storefront: "JPN", price: 150_000, currency: "JPY",
                percentage: 33_333)                                                // 105 × 33.333% = 34.99965 → 35
        try add("8008", p0, purchased: Self.pst(15, 10), storefront: "DEU", currency: "EUR") // two proceeds: empty
        try add("8009", p0, purchased: Self.pst(15, 10), storefront: nil)         // verifyReceipt's: no storefront
        try add("8010", p0, purchased: Self.pst(15, 10), price: nil, currency: nil) // no signed price
        try add("8011", p1, purchased: Self.pst(16, 10), storefront: "DEU", price: 1090, currency: "EUR") // only a CMB row
        try add("8012", p0, purchased: Self.pst(15, 10), ownership: "FAMILY_SHARED") // Apple sold it to the organizer
        try add("8013", p1, purchased: Self.pst(16, 10), storefront: "JPN", price: 150_000, currency: "JPY") // 11-15 and 11-17 as near: the earlier, 105
        try add("8014", p0, purchased: Self.pst(15, 10), reversed: Self.pst(19, 10)) // reversed: listed, not in the totals
        let second = try w.run(["--no-verify"])
        #expect(second.status == 0, "\(second.stderr)")
        let rows = LookupAgreesTests.report(w.night.out.appendingPathComponent("2026-11-21"), "refunds.csv")
        var got: [String: String] = [:]
        for r in rows { got[r["transaction_id"] ?? ""] = "\(r["proceeds"] ?? "nil") \(r["proceeds_currency"] ?? "nil")" }
        #expect(got == [
            "8001": "0.70 USD", "8002": "0.65 USD", "8003": "0.70 USD", "8004": "1.95 USD", "8005": "1.40 USD",
            "8006": " ", "8007": "35 JPY", "8008": " ", "8009": " ", "8010": " ", "8011": " ", "8012": " ",
            "8013": "105 JPY", "8014": "0.70 USD",
        ], "\(got)")
        #expect(rows.first { $0["transaction_id"] == "8007" }?["refunded_amount"] == "50")
        // summary.json: the proceeds of the rows not reversed, per proceeds currency, = the cells' sums.
        let money = try #require(try w.summary()["money"] as? [String: [String: String]])
        #expect(money["USD"]?["proceeds_refunded"] == "5.40" && money["JPY"]?["proceeds_refunded"] == "140", "\(money)")
        var sums: [String: Decimal] = [:]
        for r in rows where r["state"] != "reversed" && !(r["proceeds"] ?? "").isEmpty {
            sums[r["proceeds_currency"]!, default: 0] += Decimal(string: r["proceeds"]!)!
        }
        for (currency, sum) in sums {
            #expect(Decimal(string: money[currency]?["proceeds_refunded"] ?? "") == sum, "\(currency): \(sum) vs \(money)")
        }
        // Without the ASC_* variables the columns are there, empty, and no total names proceeds.
        var env = w.env
        for key in ["ASC_ISSUER_ID", "ASC_KEY_ID", "ASC_PRIVATE_KEY_FILE", "ASC_VENDOR_NUMBER"] { env.removeValue(forKey: key) }
        let third = try w.run(["--no-verify"], environment: env)
        #expect(third.status == 0, "\(third.stderr)")
        let plain = LookupAgreesTests.report(w.night.out.appendingPathComponent("2026-11-21"), "refunds.csv")
        #expect(plain.count == rows.count && plain.allSatisfy { $0["proceeds"] == "" && $0["proceeds_currency"] == "" })
        let plainMoney = try #require(try w.summary()["money"] as? [String: [String: String]])
        #expect(!plainMoney.values.contains { $0.keys.contains { $0.hasPrefix("proceeds") } }, "\(plainMoney)")
    }
}
