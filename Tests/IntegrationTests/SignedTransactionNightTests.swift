import AppStoreSimulator
import Foundation
import Testing

/// StoreKit 2 signed transactions in a night, with the built executables against a
/// real Postgres (no App Store is needed to verify them).
@Suite("Signed transactions in a night", .serialized, .enabled(if: Harness.hasDatabase))
struct SignedTransactionNightTests {
    static let asOf = NightTests.asOf

    @Test("wrong IAP_ROOT_CERTIFICATES: exit 78 naming it, no upload rejected; the right roots then match the truth")
    func wrongRootsBlameNoUpload() throws {
        let w = try NightTests.world("roots", users: 200)
        defer { w.stop() }
        // Another test PKI: a root that signed none of the uploads.
        let other = try Harness.scratchDirectory("roots-other-pki")
        _ = try TestPKI.loadOrCreate(directory: other.path)
        var env = w.env
        env["IAP_ROOT_CERTIFICATES"] = other.appendingPathComponent("root.pem").path
        let wrong = try w.run(environment: env)
        #expect(wrong.status == 78, "\(wrong.stderr)")
        let lines = wrong.stderr.split(separator: "\n").filter { !$0.hasPrefix("20") && !$0.contains(" info ") }
        #expect(lines.count == 1 && lines[0].contains("IAP_ROOT_CERTIFICATES"), "\(wrong.stderr)")
        #expect(try w.t.int("""
            SELECT count(*) FROM recon.receipt_state WHERE kind = 'signed_transaction' AND definitive
            """) == 0, "an upload was blamed for the wrong roots")
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("2026-11-21").path))

        // A root file that cannot be read: the same exit, the file named.
        env["IAP_ROOT_CERTIFICATES"] = "/nonexistent/root.pem"
        let missing = try w.run(environment: env)
        #expect(missing.status == 78 && missing.stderr.contains("/nonexistent/root.pem"), "\(missing.stderr)")

        let right = try w.run()
        #expect(right.status == 0, "\(right.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        NightTests.expectReportsMatchTruth(day, expected: w.expected)
        // Each failure kind is stored with its specific reason.
        let reasons = try w.t.db.query("""
            SELECT DISTINCT rejection FROM recon.receipt_state WHERE kind = 'signed_transaction' AND verdict <> 'valid'
            ORDER BY 1
            """)
        let stored = (0..<reasons.rowCount).compactMap { reasons.value($0, 0) }
        #expect(stored == ["bad_signature", "unknown_root", "wrong_bundle"], "\(stored)")
    }

    @Test("once an upload verified, a forged one alone in a later night is rejected, not a reason to stop")
    func aLoneForgeryDoesNotStopTheJob() throws {
        let w = try NightTests.world("forgery", users: 200)
        defer { w.stop() }
        let first = try w.run()
        #expect(first.status == 0, "\(first.stderr)")
        // The next night brings one new upload only: signed by a root nobody trusts.
        let foreign = try TestPKI.create()
        let payload = SignedTransactionPayload(
            transactionId: "2000000000000001", originalTransactionId: "2000000000000001", bundleId: NightTests.bundle,
            productId: "com.example.game.coins100", purchaseDate: 1_763_650_000_000,
            originalPurchaseDate: 1_763_650_000_000, quantity: 1, type: "Consumable", inAppOwnershipType: "PURCHASED",
            signedDate: 1_763_650_001_000, environment: "Production")
        let jws = foreign.signTransaction(payload)
        try w.t.db.query("""
            INSERT INTO public.iap_receipts VALUES ('RFORGED', 'U999999999', NULL, '2000000000000001', \(jws),
                '2026-11-21T12:00:00Z', NULL)
            """)
        let next = try w.run(asOf: NightTests.nextNight)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try w.t.scalar("SELECT rejection FROM recon.receipt_state WHERE receipt_id = 'RFORGED'") == "unknown_root")
    }
}
