import Foundation
import Testing

/// App receipts verified on our own machine in a night (`--receipts`), with the built executables
/// against a real Postgres: Apple's two real receipts (Tests/AppStoreTests/Fixtures/receipts,
/// provenance there) and verifyReceipt out of reach.
@Suite("App receipts offline in a night", .serialized, .enabled(if: Harness.hasDatabase))
struct AppReceiptNightTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../AppStoreTests/Fixtures/receipts").standardized
    static let sandbox = "com.mbaasy.ios.demo", production = "org.getpure.pure-iphone"
    /// Nothing listens on port 9 of loopback: every request to verifyReceipt fails at once.
    static let unreachable = ["IAP_VERIFY_URL_PRODUCTION": "http://127.0.0.1:9/verifyReceipt",
                              "IAP_VERIFY_URL_SANDBOX": "http://127.0.0.1:9/verifyReceipt"]

    static func receipt(_ name: String) throws -> String {
        try String(contentsOf: fixtures.appendingPathComponent("\(name).b64"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A small night (too small to be held) with the real receipts added as uploads of one user:
    /// RSANDBOX (2015, SHA-1), RPRODUCTION (2024, SHA-256), RTAMPERED (the 2024 one with one
    /// content byte changed) and RJSON (base64 of a JSON text, as iOS 6 and the simulator send).
    static func world(_ label: String) throws -> NightTests.World {
        var w = try NightTests.world(label, users: 20)
        var tampered = [UInt8](Data(base64Encoded: try receipt("production-2024"), options: .ignoreUnknownCharacters)!)
        // Inside the signed content (the payload starts after the container's first 60 bytes).
        tampered[200] ^= 0x01
        let rows: [(String, String)] = [
            ("RSANDBOX", try receipt("sandbox-2015")), ("RPRODUCTION", try receipt("production-2024")),
            ("RTAMPERED", Data(tampered).base64EncodedString()),
            ("RJSON", Data(#"{"receipt":"an iOS 6 receipt"}"#.utf8).base64EncodedString()),
        ]
        for (id, data) in rows {
            try w.t.db.query("""
                INSERT INTO public.iap_receipts VALUES (\(id), 'U999999999', NULL, NULL, \(data),
                    '2026-11-20T12:00:00Z', NULL)
                """)
        }
        w.env["IAP_BUNDLE_IDS"] = [NightTests.bundle, sandbox, production].joined(separator: ",")
        return w
    }

    static func state(_ w: NightTests.World, _ id: String) throws -> [String?] {
        let r = try w.t.db.query("""
            SELECT definitive::text, verdict, environment, rejection, last_error FROM recon.receipt_state WHERE receipt_id = \(id)
            """)
        return r.rowCount == 0 ? [] : (0..<5).map { r.value(0, $0) }
    }

    @Test("--receipts offline, verifyReceipt unreachable: both real receipts settled, the tampered one rejected, exit 0")
    func realReceiptsOffline() throws {
        let w = try Self.world("receipts-offline")
        defer { w.stop() }
        let night = try w.run(["--receipts", "offline"], environment: w.env.merging(Self.unreachable) { $1 })
        #expect(night.status == 0, "\(night.stderr)")
        #expect(try Self.state(w, "RSANDBOX").prefix(3) == ["true", "valid", "sandbox"])
        #expect(try Self.state(w, "RPRODUCTION").prefix(3) == ["true", "valid", "production"])
        #expect(try Self.state(w, "RTAMPERED").prefix(4) == ["true", "invalid_receipt", "production", "bad_signature"])
        // Not PKCS#7: unresolved, its reason kept, read again next night.
        let json = try Self.state(w, "RJSON")
        #expect(json.first == "false" && (json.last??.contains("not settled offline") ?? false), "\(json)")
        // Every purchase the receipts hold is learned, with no request sent for them.
        #expect(try w.t.int("""
            SELECT count(DISTINCT transaction_id) FROM recon.receipt_transactions
            WHERE receipt_id IN ('RSANDBOX', 'RPRODUCTION')
            """) == Self.goldenTransactionCount())
        #expect(try w.t.int("""
            SELECT count(*) FROM recon.verify_attempts WHERE receipt_id IN ('RSANDBOX', 'RPRODUCTION', 'RTAMPERED', 'RJSON')
            """) == 0)
        let summary = try ManyAppsNightTests.summary(w.out.appendingPathComponent("2026-11-21"))
        let offline = (summary["verification"] as? [String: Any])?["receipts_offline"] as? [String: Any]
        #expect(offline?["mode"] as? String == "offline")
        #expect(offline?["rejected"] as? [String: Int] == ["bad_signature": 1], "\(offline ?? [:])")
        #expect(offline?["verified"] as? Int == 2, "\(offline ?? [:])")
        let skipped = summary["skipped_checks"] as? [String] ?? []
        #expect(skipped.contains { $0.hasPrefix("receipt_refunds ") } && skipped.contains { $0.hasPrefix("receipt_renewals ") })
        #expect(night.stderr.contains("--receipts offline: verifyReceipt was asked nothing"))
    }

    @Test("receipts that fail only on the root: exit 78 naming IAP_RECEIPT_ROOT_CERTIFICATES, none rejected")
    func wrongReceiptRoots() throws {
        let w = try Self.world("receipts-roots")
        defer { w.stop() }
        // The test PKI's root signed none of Apple's receipts (the simulator's receipts are JSON).
        var env = w.env.merging(Self.unreachable) { $1 }
        env["IAP_RECEIPT_ROOT_CERTIFICATES"] = env["IAP_ROOT_CERTIFICATES"]
        let wrong = try w.run(["--receipts", "offline"], environment: env)
        #expect(wrong.status == 78, "\(wrong.stderr)")
        let lines = wrong.stderr.split(separator: "\n").filter { $0.hasPrefix("iap-reconcile: ") }
        #expect(lines.count == 1 && lines[0].contains("IAP_RECEIPT_ROOT_CERTIFICATES"), "\(wrong.stderr)")
        for id in ["RSANDBOX", "RPRODUCTION", "RTAMPERED"] {
            #expect(try Self.state(w, id).first != "true", "\(id) was settled under the wrong roots")
        }

        env["IAP_RECEIPT_ROOT_CERTIFICATES"] = "/nonexistent/receipt-root.pem"
        let missing = try w.run(["--receipts", "offline"], environment: env)
        #expect(missing.status == 78, "\(missing.stderr)")
        #expect(missing.stderr.contains("IAP_RECEIPT_ROOT_CERTIFICATES: /nonexistent/receipt-root.pem: no such file"), "\(missing.stderr)")

        // Usage errors: exit 64, naming the option or the variable.
        let option = try w.run(["--receipts", "sometimes"], environment: env)
        #expect(option.status == 64 && option.stderr.contains("--receipts"), "\(option.stderr)")
        env["IAP_RECEIPTS"] = "offline "
        let variable = try w.run([], environment: env)
        #expect(variable.status == 64 && variable.stderr.contains("IAP_RECEIPTS"), "\(variable.stderr)")
    }

    @Test("auto: what offline settles is settled here, the rest goes on to verifyReceipt")
    func autoSendsTheRestOn() throws {
        let w = try Self.world("receipts-auto")
        defer { w.stop() }
        // With the simulator: its JSON receipts are `malformed` offline and verifyReceipt answers
        // them; Apple's real receipts hold auto-renewable subscriptions, so they are asked too.
        let night = try w.run(["--receipts", "auto"])
        #expect(night.status == 0, "\(night.stderr)")
        let summary = try ManyAppsNightTests.summary(w.out.appendingPathComponent("2026-11-21"))
        let offline = (summary["verification"] as? [String: Any])?["receipts_offline"] as? [String: Any]
        let sent = offline?["to_verify_receipt"] as? [String: Int] ?? [:]
        #expect((sent["malformed"] ?? 0) > 1 && sent["renewals"] == 2, "\(offline ?? [:])")
        #expect(offline?["rejected"] as? [String: Int] == ["bad_signature": 1], "\(offline ?? [:])")
        #expect(try Self.state(w, "RTAMPERED").prefix(4) == ["true", "invalid_receipt", "production", "bad_signature"])
        #expect(try w.t.int("SELECT count(*) FROM recon.verify_attempts WHERE receipt_id = 'RTAMPERED'") == 0)
        #expect(try w.t.int("SELECT count(*) FROM recon.verify_attempts WHERE receipt_id = 'RSANDBOX'") >= 1)
    }

    /// The distinct transaction ids of the two receipts' in-app entries (golden.json).
    static func goldenTransactionCount() throws -> Int {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("golden.json"))
        let golden = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let receipts = golden?["receipts"] as? [String: [String: Any]] ?? [:]
        var ids = Set<String>()
        for (_, r) in receipts {
            let inApp = (r["receipt"] as? [String: Any])?["in_app"] as? [[String: Any]] ?? []
            for entry in inApp { if let id = entry["transaction_id"] as? String { ids.insert(id) } }
        }
        return ids.count
    }
}
