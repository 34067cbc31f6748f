import AppStoreSimulator
import Foundation
import Testing

/// The App Store Server API end to end: the job and `lookup` against the simulator's
/// Server API over real HTTP, with a real `.p8` key, real JWTs and signed answers.
@Suite("The App Store Server API end to end", .serialized, .enabled(if: Harness.hasDatabase))
struct ServerAPINightTests {
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let keyID = "TESTKEY001"
    static let secret = "api-test-shared-secret-4711"

    struct World {
        let t: TestDatabase
        let sim: SimulatorProcess
        let dir: URL
        let out: URL
        var env: [String: String]
        /// What `iap-sim seed` printed (its `scenarios:` census).
        var seeded = ""

        var truth: URL { dir.appendingPathComponent("apple-truth.tsv") }
        var expected: URL { dir }

        func run(_ arguments: [String], environment: [String: String]? = nil) throws -> ProcessResult {
            try runTool("iap-reconcile", arguments, environment: environment ?? env)
        }

        func night(_ extra: [String] = []) throws -> ProcessResult {
            try run(["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress", "--timeout-ms", "3000",
                     "--retry-base-ms", "20"] + extra)
        }

        /// Server API lines of the call log: (ms, environment, endpoint, outcome, id).
        func apiCalls() -> [(ms: Int64, env: String, endpoint: String, outcome: String, id: String)] {
            let text = (try? String(contentsOf: sim.callLog, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { line in
                let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                guard f.count >= 5, let ms = Int64(f[0]) else { return nil }
                return (ms, f[1], f[2], f[3], f[4])
            }
        }

        func stop() {
            sim.stop()
            t.drop()
        }
    }

    /// A seeded database, a key, and the simulator serving verifyReceipt and the Server API from
    /// the same truth. `simKey` is the key the simulator checks tokens with (another one: 401).
    static func world(_ label: String, users: Int = 300, share: String = "1", simArguments: [String] = [],
                      simKey: URL? = nil, seedArguments: [String] = []) throws -> World {
        let t = try TestDatabase(label)
        let dir = try Harness.scratchDirectory("\(label)-api")
        let key = dir.appendingPathComponent("key.p8")
        let made = try runTool("iap-sim", ["keygen", "--out", key.path], environment: t.environment())
        #expect(made.status == 0, "iap-sim keygen: \(made.stderr)")
        let pki = dir.appendingPathComponent("pki"), refunds = dir.appendingPathComponent("refund-list.csv")
        let truth = dir.appendingPathComponent("apple-truth.tsv")
        let seeded = try runTool("iap-sim", ["seed", "--users", String(users), "--seed", "7", "--as-of", NightTests.asOf,
                                             "--bundle", NightTests.bundle, "--refunds", refunds.path, "--expected", dir.path,
                                             "--pki", pki.path, "--storekit2-share", share, "--apple-truth", truth.path]
                                     + seedArguments,
                                 environment: t.environment())
        #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        let sim = try SimulatorProcess(["--refunds", refunds.path, "--apple-truth", truth.path, "--pki", pki.path,
                                        "--shared-secret", secret,
                                        "--api-key", (simKey ?? key).path, "--api-key-id", keyID, "--api-issuer", issuer,
                                        "--api-bundle", NightTests.bundle] + simArguments)
        let out = try Harness.scratchDirectory("\(label)-reports")
        let env = t.environment(sim.urls.merging([
            "IAP_BUNDLE_IDS": NightTests.bundle, "IAP_SHARED_SECRET": secret,
            "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
            "IAP_ISSUER_ID": issuer, "IAP_KEY_ID": keyID, "IAP_PRIVATE_KEY_FILE": key.path,
            "IAP_API_URL_PRODUCTION": "http://127.0.0.1:\(sim.port)/production",
            "IAP_API_URL_SANDBOX": "http://127.0.0.1:\(sim.port)/sandbox",
        ]) { $1 })
        return World(t: t, sim: sim, dir: dir, out: out, env: env, seeded: seeded.stdout + seeded.stderr)
    }

    @Test("with the API, the night matches the truth and the refund sweep asks Get Transaction Info for signed transactions")
    func nightWithTheAPI() throws {
        let w = try Self.world("api_night")
        defer { w.stop() }
        let first = try w.night()
        #expect(first.status == 0, "\(first.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        NightTests.expectReportsMatchTruth(day, expected: w.expected)
        let info = w.apiCalls().filter { $0.endpoint == "transaction_info" }
        #expect(!info.isEmpty && info.allSatisfy { $0.outcome == "200" || $0.outcome.hasPrefix("404") }, "\(info.prefix(5))")
    }

    @Test("HTTP 401: exit 78 with one line naming the credentials, and no receipt blamed")
    func unauthorized() throws {
        let other = try Harness.scratchDirectory("api-401-key").appendingPathComponent("other.p8")
        _ = try runTool("iap-sim", ["keygen", "--out", other.path], environment: ProcessInfo.processInfo.environment)
        let w = try Self.world("api_401", simKey: other)
        defer { w.stop() }
        let result = try w.night()
        #expect(result.status == 78, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("IAP_KEY_ID") && lines[0].contains("401"), "\(result.stderr)")
        #expect(w.apiCalls().contains { $0.outcome.hasPrefix("401") }, "the API was never asked")
        // Nothing the 401 touched was rejected or marked: the signed transactions keep their verdicts.
        #expect(try w.t.int("SELECT count(*) FROM recon.verify_attempts WHERE problem LIKE '%401%'") == 0)
        #expect(try w.t.int("""
            SELECT count(*) FROM recon.receipt_state WHERE kind = 'signed_transaction' AND verdict <> 'valid'
              AND rejection NOT IN ('bad_signature', 'unknown_root', 'wrong_bundle')
            """) == 0)
    }

    @Test("a 429 storm: after each 429 nothing goes to that endpoint before its Retry-After")
    func rateLimitStorm() throws {
        let w = try Self.world("api_429", simArguments: ["--api-rate", "transaction_info=3"])
        defer { w.stop() }
        let result = try w.night(["--api-rate", "transaction_info=50", "--concurrency", "1", "--retry-base-ms", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let calls = w.apiCalls().filter { $0.endpoint == "transaction_info" && $0.env == "production" }
        let limited = calls.enumerated().filter { $0.element.outcome.hasPrefix("429") }
        #expect(limited.count >= 1, "the simulator's limit never bit: \(calls.count) calls")
        for (i, call) in limited {
            guard let until = call.outcome.components(separatedBy: "until=").last.flatMap(Int64.init) else {
                Issue.record("no until= in \(call.outcome)")
                continue
            }
            if i + 1 < calls.count {
                #expect(calls[i + 1].ms >= until, "a request \(until - calls[i + 1].ms) ms before the Retry-After time")
            }
        }
    }

    @Test("lookup: each verdict in words and in JSON; 4040010 in production asks the sandbox once; bad ids, no key")
    func lookup() throws {
        let w = try Self.world("api_lookup", share: "0.25")
        defer { w.stop() }
        #expect(try w.night().status == 0)
        let truth = try String(contentsOf: w.truth, encoding: .utf8).split(separator: "\n")
            .filter { !$0.hasPrefix("#") }.map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = truth[0]
        func column(_ name: String) -> Int { header.firstIndex(of: name) ?? -1 }
        let rows = Array(truth.dropFirst())
        let compensate = NightTests.read(w.expected.appendingPathComponent("compensate.csv")).components(separatedBy: "\r\n")
            .dropFirst().first { $0.contains(",paid_not_granted,") && $0.contains(",production,") }!.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let clawback = NightTests.read(w.expected.appendingPathComponent("clawback.csv")).components(separatedBy: "\r\n")
            .dropFirst().first { $0.contains(",refunded,") }!.split(separator: ",", omittingEmptySubsequences: false).map(String.init)

        // Paid, never granted: compensate, by the order ID of the invoice.
        let missedTID = compensate[5]
        let orderOfMissed = try #require(rows.first { $0[column("transaction_id")] == missedTID })[column("order_id")]
        let found = try w.run(["lookup", orderOfMissed])
        #expect(found.status == 0 && found.stdout.contains("compensate") && found.stdout.contains("to user \(compensate[1])"),
                "\(found.stdout)\(found.stderr)")
        let json = try w.run(["lookup", orderOfMissed, "--json"])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let items = try #require(parsed["transactions"] as? [[String: Any]])
        #expect(parsed["apple"] as? String == "found" && items.contains { $0["verdict"] as? String == "compensate"
            && $0["user_id"] as? String == compensate[1] && $0["transaction_id"] as? String == missedTID })

        // Refunded, still granted: claw back.
        let refunded = try w.run(["lookup", "--transaction", clawback[6], "--json"])
        #expect(refunded.status == 0 && refunded.stdout.contains("\"claw_back\""), "\(refunded.stdout)\(refunded.stderr)")
        #expect(try w.run(["lookup", "--transaction", clawback[6]]).stdout.contains("claw back"))

        // Granted: nothing to do.
        let grantedTID = try #require(try w.t.scalar("""
            SELECT g.transaction_id FROM iap_grants g JOIN iap_orders o ON o.transaction_id = g.transaction_id
            JOIN iap_receipts r ON r.transaction_id = g.transaction_id AND r.verify_status = 0
            WHERE g.revoked_at IS NULL AND o.status = 'delivered' AND o.quantity = g.quantity
              -- not one Apple refunded (the night learned consumable refunds from notification history)
              AND NOT EXISTS (SELECT 1 FROM recon.apple_transactions t WHERE t.transaction_id = g.transaction_id
                              AND (t.cancellation_date_ms IS NOT NULL OR t.revocation_date_ms IS NOT NULL))
            GROUP BY 1 HAVING count(DISTINCT g.grant_id) = 1 ORDER BY 1 LIMIT 1
            """))
        let granted = try w.run(["lookup", "--transaction", grantedTID])
        #expect(granted.status == 0 && granted.stdout.contains("granted to user") && granted.stdout.contains("nothing to do"),
                "\(granted.stdout)\(granted.stderr)")
        let grantedJSON = try w.run(["lookup", "--transaction", grantedTID, "--json"])
        let grantedItems = try #require(try JSONSerialization.jsonObject(with: Data(grantedJSON.stdout.utf8)) as? [String: Any])
        #expect((grantedItems["transactions"] as? [[String: Any]])?.first?["verdict"] as? String == "granted",
                "\(grantedJSON.stdout)")

        // Apple knows it, we do not: our rows of a granted purchase are gone.
        try w.t.db.execute("""
            DELETE FROM iap_grants WHERE transaction_id = \(literal: .text(grantedTID));
            DELETE FROM iap_receipts WHERE transaction_id = \(literal: .text(grantedTID));
            DELETE FROM iap_orders WHERE transaction_id = \(literal: .text(grantedTID))
            """)
        let unknown = try w.run(["lookup", "--transaction", grantedTID, "--json"])
        #expect(unknown.status == 0 && unknown.stdout.contains("\"unknown_to_us\""), "\(unknown.stdout)\(unknown.stderr)")
        #expect(try w.run(["lookup", "--transaction", grantedTID]).stdout.contains("ask the customer for their user id"))

        // A sandbox transaction: production says 4040010, the sandbox is asked once.
        let sandboxTID = try #require(rows.first { $0[column("environment")] == "sandbox" })[column("transaction_id")]
        let before = w.apiCalls().count
        let sandbox = try w.run(["lookup", "--transaction", sandboxTID])
        #expect(sandbox.status == 0 && sandbox.stdout.contains("sandbox"), "\(sandbox.stdout)\(sandbox.stderr)")
        let asked = w.apiCalls().dropFirst(before).filter { $0.id == sandboxTID }
        #expect(asked.map(\.env) == ["production", "sandbox"] && asked[0].outcome.hasPrefix("404"), "\(asked)")

        // Apple has no such order: found nothing, exit 0.
        let none = try w.run(["lookup", "ZZZZZZZZZZ"])
        #expect(none.status == 0 && none.stdout.contains("Apple has no order ZZZZZZZZZZ"), "\(none.stdout)\(none.stderr)")
        // Bad ids: 64. No credentials: 78 naming them.
        #expect(try w.run(["lookup", "../etc"]).status == 64)
        #expect(try w.run(["lookup", "--transaction", "12a"]).status == 64)
        var noKey = w.env
        noKey["IAP_PRIVATE_KEY_FILE"] = nil
        let missing = try w.run(["lookup", orderOfMissed], environment: noKey)
        #expect(missing.status == 78 && missing.stderr.contains("IAP_PRIVATE_KEY_FILE"), "\(missing.stderr)")
    }

    @Test("the .p8 key, the JWTs and the shared secret appear in no log, stderr, report or table")
    func secretsStaySecret() throws {
        let w = try Self.world("api_secrets", share: "0.5")
        defer { w.stop() }
        let night = try w.night(["--log-level", "trace"])
        #expect(night.status == 0, "\(night.stderr)")
        let key = try String(contentsOf: URL(fileURLWithPath: w.env["IAP_PRIVATE_KEY_FILE"]!), encoding: .utf8)
        let keyLines = key.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
        #expect(!keyLines.isEmpty)
        // Every JWT of ours starts with this header segment (ES256, our kid, typ JWT).
        let jwtHeader = Data(#"{"alg":"ES256","kid":"\#(Self.keyID)","typ":"JWT"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let lookups = [try w.run(["lookup", "ZZZZZZZZZZ"]),
                       try w.run(["lookup", "ZZZZZZZZZZ", "--json", "--log-level", "trace"])]
        var texts = [night.stdout, night.stderr] + lookups.flatMap { [$0.stdout, $0.stderr] }
        let reports = FileManager.default.enumerator(at: w.out, includingPropertiesForKeys: nil)
        while let file = reports?.nextObject() as? URL {
            if let text = try? String(contentsOf: file, encoding: .utf8) { texts.append(text) }
        }
        let tables = try w.t.db.query("""
            SELECT string_agg(t::text, E'\\n') FROM (
              SELECT row_to_json(a)::text AS t FROM recon.verify_attempts a
              UNION ALL SELECT row_to_json(s)::text FROM recon.receipt_state s
              UNION ALL SELECT row_to_json(x)::text FROM recon.apple_transactions x
              UNION ALL SELECT row_to_json(r)::text FROM recon.runs r) all_rows
            """)
        texts.append(tables.value(0, 0) ?? "")
        for text in texts {
            #expect(!text.contains(Self.secret), "the shared secret leaked")
            #expect(!text.contains(jwtHeader), "a JWT leaked")
            for line in keyLines { #expect(!text.contains(line), "the .p8 key leaked") }
        }
    }
}
