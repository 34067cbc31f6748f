// Coverage end to end: coverage.csv, summary.json `coverage` and the page, from the days of
// Apple's sales reports a night downloaded (a loopback App Store Connect, SalesReportNightTests'
// files) against transactions of the job's set row by row, so every rule of the contract's
// coverage section has a row that shows it.

import Foundation
import Postgres
import Testing

@Suite("Coverage: Apple's sales reports against what the job knows", .serialized, .enabled(if: Harness.hasDatabase))
struct CoverageNightTests {
    typealias S = SalesReportNightTests

    /// UNIX ms of a wall time in Los Angeles (November 2026: PST, UTC-8).
    static func pst(_ day: Int, _ hour: Int, _ minute: Int = 0) -> Int64 {
        Int64(((day - 1) * 86_400 + (hour + 8) * 3_600 + minute * 60)) * 1000 + 1_793_491_200_000
    }

    @Test("one row per group that differs, in the report zone's days; family sharing, CMB credits, restores, reversed refunds, sandbox and days not held count nowhere")
    func coverage() throws {
        #expect(Self.pst(1, 0) == 1_793_520_000_000)  // 2026-11-01T08:00:00Z
        let w = try S.world("coverage")
        defer { w.stop() }
        w.apple.files = S.files(w.products)
        let first = try w.run()
        #expect(first.status == 0, "\(first.stderr)")
        // Held: 11-15 (p0 US USD 3 sold; p1 JP JPY 1 sold; a restore; other SKUs), 11-16 (p0 US USD 1
        // refunded; a CMB credit in DE), 11-17 empty. 11-18 not yet published, 11-19 an error.
        let (p0, p1) = (w.products[0], w.products[1])
        let db = w.night.t.db
        try db.execute("DELETE FROM recon.apple_transactions")
        func add(_ id: String, _ product: String, purchased: Int64, quantity: Int = 1, environment: String = "production",
                 storefront: String? = "USA", currency: String? = "USD", ownership: String? = nil, cancelled: Int64? = nil,
                 revoked: Int64? = nil, revocationType: String? = nil, reversed: Int64? = nil) throws {
            _ = try db.query("""
                INSERT INTO recon.apple_transactions (transaction_id, environment, original_transaction_id, product_id, quantity,
                    purchase_date_ms, storefront, currency, in_app_ownership_type, cancellation_date_ms, revocation_date_ms,
                    revocation_type, reversed_date_ms)
                VALUES (\(id), \(environment), \(id), \(product), \(quantity), \(purchased), \(storefront), \(currency), \(ownership),
                        \(cancelled), \(revoked), \(revocationType), \(reversed))
                """)
        }
        try add("9001", p0, purchased: Self.pst(15, 10), quantity: 2)            // 11-15 US: 2 …
        try add("9002", p0, purchased: Self.pst(15, 23, 30))                      // … and 1 at 23:30 PST (11-16 in UTC): 3 = Apple's
        try add("9003", p1, purchased: Self.pst(15, 12), storefront: "JPN", currency: "JPY", ownership: "FAMILY_SHARED")
        try add("9004", p0, purchased: Self.pst(10, 9), cancelled: Self.pst(16, 10))   // refunded 11-16: 1 = Apple's
        try add("9005", p0, purchased: Self.pst(16, 9), storefront: nil, currency: nil) // verifyReceipt's: unknown
        try add("9006", p0, purchased: Self.pst(17, 9))                           // an empty day: Apple sold none
        try add("9007", p0, purchased: Self.pst(18, 9))                           // not held: compared nowhere
        try add("9008", p0, purchased: Self.pst(15, 11), environment: "sandbox")  // sandbox: nowhere
        try add("9009", p1, purchased: Self.pst(11, 9), storefront: "JPN", currency: "JPY", revoked: Self.pst(16, 8),
                revocationType: "REFUND_FULL", reversed: Self.pst(16, 20))        // refund reversed: no refund
        try add("9010", p1, purchased: Self.pst(12, 9), storefront: "JPN", currency: "JPY", revoked: Self.pst(16, 8),
                revocationType: "FAMILY_REVOKE")                                  // family revoke: no refund
        let second = try w.run(["--no-verify"])
        #expect(second.status == 0, "\(second.stderr)")
        let csv = N.read(w.night.out.appendingPathComponent("2026-11-21/coverage.csv"))
        #expect(csv == [
            "report_date,product_id,country,currency,apple_units_sold,job_units_sold,apple_units_refunded,job_units_refunded",
            "2026-11-15,\(p1),JP,JPY,1,0,0,0",
            "2026-11-16,\(p0),unknown,unknown,0,1,0,0",
            "2026-11-17,\(p0),US,USD,0,1,0,0",
        ].map { $0 + "\r\n" }.joined(), "\(csv)")
        let c = try #require(try w.summary()["coverage"] as? [String: Any])
        #expect(c["days_held"] as? Int == 3 && c["from"] as? String == "2026-11-15" && c["to"] as? String == "2026-11-19")
        #expect(c["apple_units_sold"] as? Int == 4 && c["job_units_sold"] as? Int == 5, "\(c)")
        #expect(c["apple_units_refunded"] as? Int == 1 && c["job_units_refunded"] as? Int == 1, "\(c)")
        #expect(c["percent_known"] as? String == "125", "\(c)")
        let products = (c["products"] as? [[String: Any]] ?? []).reduce(into: [String: [String: Any]]()) {
            $0[$1["product_id"] as? String ?? ""] = $1
        }
        #expect(products[p0]?["days_differing"] as? [String] == ["2026-11-16", "2026-11-17"], "\(products)")
        #expect(products[p0]?["percent_known"] as? String == "166.7" && products[p1]?["percent_known"] as? String == "0")
        #expect(products[p1]?["days_differing"] as? [String] == ["2026-11-15"])
        #expect(try w.summary()["counts"].flatMap { ($0 as? [String: Int])?["coverage"] } == 3)
        let page = N.read(w.night.out.appendingPathComponent("2026-11-21/summary.html"))
        #expect(page.contains("Apple sold 4 units in the window (2026-11-15 to 2026-11-19, America/Los_Angeles, 3 days"), "\(page)")
        #expect(page.contains("the job knows 5 (125%)"))
    }

    typealias N = NightTests
}
