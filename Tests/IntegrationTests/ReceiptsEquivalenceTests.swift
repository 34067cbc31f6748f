import Foundation
import Testing

/// `--receipts auto` against `--receipts verify-receipt` on the same data: the simulator issues
/// PKCS#7 receipts (`iap-sim seed --pkcs7-receipts`), the Server API key is set, no faults. The
/// two nights, in two fresh job schemas, must publish the same lists, save for the receipts
/// verifyReceipt answers 21010 or 211xx: offline, a well-signed receipt cannot know them
/// (docs/contract.md, "What offline cannot know").
@Suite("Receipts verified offline or by verifyReceipt: the same lists", .serialized, .enabled(if: Harness.hasDatabase))
struct ReceiptsEquivalenceTests {
    static let lists = ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv", "closed.csv"]

    @Test("auto and verify-receipt publish the same lists, save the receipts answered 21010/211xx, which are named")
    func sameLists() throws {
        let w = try ServerAPINightTests.world("receipts_equivalence", users: 400, share: "0.25", seedArguments: ["--pkcs7-receipts"])
        defer { w.stop() }
        let pki = w.dir.appendingPathComponent("pki")
        var env = w.env
        env["IAP_RECEIPT_ROOT_CERTIFICATES"] = pki.appendingPathComponent("receipt-root.pem").path
        func night(_ mode: String) throws -> URL {
            let out = try Harness.scratchDirectory("receipts_equivalence-\(mode)")
            let r = try w.run(
                ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress", "--timeout-ms", "3000",
                 "--retry-base-ms", "20", "--receipts", mode, "--job-schema", "recon_\(mode.replacingOccurrences(of: "-", with: "_"))"],
                environment: env)
            #expect(r.status == 0, "\(mode): \(r.stderr)")
            return out.appendingPathComponent("2026-11-21")
        }
        // One more upload: a PKCS#7 receipt of the data with its signature's last byte changed.
        let some = try #require(try w.t.scalar("""
            SELECT receipt_data FROM public.iap_receipts WHERE receipt_data LIKE 'MII%' AND user_id IS NOT NULL
            ORDER BY receipt_id LIMIT 1
            """))
        var flipped = [UInt8](try #require(Data(base64Encoded: some)))
        flipped[flipped.count - 1] ^= 0x01
        try w.t.db.query("""
            INSERT INTO public.iap_receipts VALUES ('RFLIPPED', 'U999999998', NULL, NULL, \(Data(flipped).base64EncodedString()),
                '2026-11-20T12:00:00Z', NULL)
            """)
        let asked = try night("verify-receipt"), auto = try night("auto")
        // verifyReceipt reads the PKCS#7 receipts as it read the JSON tokens: the truth.
        NightTests.expectReportsMatchTruth(asked, expected: w.expected)

        // What verifyReceipt alone can say: these receipts' users are set aside, by name.
        let r = try w.t.db.query("""
            SELECT DISTINCT r.user_id FROM recon_verify_receipt.receipt_state s
            JOIN public.iap_receipts r ON r.receipt_id = s.receipt_id
            WHERE s.last_status = 21010 OR s.last_status BETWEEN 21100 AND 21199
            """)
        let namedUsers = Set((0..<r.rowCount).compactMap { r.value($0, 0) })
        #expect(!namedUsers.isEmpty, "the data holds no 21010/211xx receipt: the test would compare nothing special")
        func rows(_ day: URL, _ file: String) throws -> [String] {
            try csvRecords(day.appendingPathComponent(file)).map { record in record.joined(separator: ",") }
                .filter { line in !namedUsers.contains { line.contains(",\($0),") || line.hasPrefix("\($0),") } }
        }
        for file in Self.lists {
            let a = try rows(asked, file), b = try rows(auto, file)
            #expect(a == b, "\(file): verify-receipt has \(a.count) rows, auto \(b.count)\n\(NightTests.diff(a.joined(separator: "\r\n"), b.joined(separator: "\r\n")))")
        }

        // Auto did settle receipts here: verified and rejected offline, the rest sent on by cause.
        let summary = try ManyAppsNightTests.summary(auto)
        let offline = (summary["verification"] as? [String: Any])?["receipts_offline"] as? [String: Any] ?? [:]
        #expect((offline["verified"] as? Int ?? 0) > 50, "\(offline)")
        // Receipt by receipt: what was settled offline got verifyReceipt's verdict (21010/211xx
        // aside), and a receipt refused for its signature is one verifyReceipt answered 21003.
        #expect(try w.t.int("""
            SELECT count(*) FROM recon_auto.receipt_state a JOIN recon_verify_receipt.receipt_state v USING (receipt_id)
            WHERE a.kind = 'receipt' AND a.definitive
              AND NOT EXISTS (SELECT 1 FROM recon_auto.verify_attempts x WHERE x.receipt_id = a.receipt_id)
              AND a.verdict IS DISTINCT FROM v.verdict
              AND NOT (v.last_status = 21010 OR v.last_status BETWEEN 21100 AND 21199)
            """) == 0)
        let unexplained = try w.t.scalar("""
            SELECT string_agg(a.receipt_id || ' ' || coalesce(v.last_status::text, '-') || ' ' || coalesce(v.verdict, '-'), '; ')
            FROM recon_auto.receipt_state a JOIN recon_verify_receipt.receipt_state v USING (receipt_id)
            WHERE a.kind = 'receipt' AND a.rejection = 'bad_signature' AND v.last_status IS DISTINCT FROM 21003
            """)
        #expect(unexplained == nil, "refused offline for the signature, not 21003 at verifyReceipt: \(unexplained ?? "")")
        #expect(try w.t.scalar("SELECT last_status FROM recon_verify_receipt.receipt_state WHERE receipt_id = 'RFLIPPED'") == "21003")
        #expect(try w.t.scalar("SELECT rejection FROM recon_auto.receipt_state WHERE receipt_id = 'RFLIPPED'") == "bad_signature")
        #expect(try w.t.int("SELECT count(*) FROM recon_auto.verify_attempts")
            < w.t.int("SELECT count(*) FROM recon_verify_receipt.verify_attempts") / 2)
    }
}
