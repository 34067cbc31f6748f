import Foundation
import Postgres
import Testing

/// The verification stage against the real simulator over real HTTP and
/// a real Postgres. Serialized: each test loads both cores.
@Suite("Verification against the simulator", .serialized, .enabled(if: Harness.hasDatabase))
struct VerificationTests {
    static let asOf = "2026-11-21T03:00:00Z"
    static let secret = "sh4red-S3CRET-value"

    /// Seeds `users` users, then makes every receipt unresolved (no status at upload) and keeps
    /// `receipts` of those submitted in the 30-day window, so the stage has exactly that many to verify.
    static func seed(_ t: TestDatabase, users: Int, receipts: Int, seed: Int = 11) throws {
        let r = try runTool("iap-sim", ["seed", "--users", String(users), "--seed", String(seed), "--as-of", asOf,
                                        "--no-bad-rows", "--truth-table"], environment: t.environment())
        #expect(r.status == 0, "iap-sim seed failed: \(r.stderr)")
        try t.db.execute("""
            UPDATE iap_receipts SET verify_status = NULL;
            DELETE FROM iap_receipts WHERE submitted_at < \(literal: .text(asOf))::timestamptz - interval '30 days'
                                        OR submitted_at > \(literal: .text(asOf))::timestamptz;
            DELETE FROM iap_receipts WHERE receipt_id NOT IN (
                SELECT receipt_id FROM iap_receipts ORDER BY receipt_id LIMIT \(literal: .int(receipts)));
            """)
        #expect(try t.int("SELECT count(*) FROM iap_receipts") == receipts)
    }

    static func verifyArguments(concurrency: Int = 64) -> [String] {
        ["verify", "--as-of", asOf, "--concurrency", String(concurrency), "--timeout-ms", "1000",
         "--retry-base-ms", "20", "--retry-delay-minutes", "0", "--sweep-limit", "0", "--no-progress"]
    }

    /// Statuses the simulator gives that are definitive for the job (contract §3 ok and reject).
    static func isDefinitive(_ outcome: String) -> Bool {
        guard let status = Int(outcome) else { return false }
        return status == 0 || status == 21006 || status == 21003 || status == 21010 || (21100...21199).contains(status)
    }

    /// For every receipt, the calls made after the simulator first gave it a definitive answer.
    static func callsAfterDefinitive(_ calls: [(ms: Int64, env: String, rid: String, outcome: String)]) -> [String: Int] {
        var definitive: Set<String> = []
        var after: [String: Int] = [:]
        for call in calls {
            if definitive.contains(call.rid) { after[call.rid, default: 0] += 1 }
            if isDefinitive(call.outcome) { definitive.insert(call.rid) }
        }
        return after
    }

    @Test("10,000 receipts, 20 ms latency, 30% mixed faults: definitive within five runs, none sent twice")
    func tenThousandWithFaults() throws {
        let t = try TestDatabase("verify10k")
        defer { t.drop() }
        try Self.seed(t, users: 12_000, receipts: 10_000)
        let sim = try SimulatorProcess(["--shared-secret", Self.secret, "--latency-ms", "20", "--fault-rate", "0.3",
                                        "--seed", "7", "--timeout-hold-ms", "3000"])
        defer { sim.stop() }
        let env = t.environment(sim.urls.merging(["IAP_SHARED_SECRET": Self.secret]) { $1 })

        var runs = 0
        var open = Int.max
        while runs < 5 && open > 0 {
            runs += 1
            let r = try runTool("iap-reconcile", Self.verifyArguments(), environment: env)
            #expect(r.status == 0, "run \(runs): \(r.stderr)")
            open = try t.int("""
                SELECT count(*) FROM iap_receipts r LEFT JOIN recon.receipt_state s USING (receipt_id)
                WHERE NOT coalesce(s.definitive, false)
                """)
        }
        #expect(open == 0, "\(open) receipts still not definitive after \(runs) runs")
        #expect(runs >= 2, "30% faults should leave some receipts for a second run")

        let calls = sim.calls()
        let faults = calls.filter { Int($0.outcome) == nil || ["21005", "21009"].contains($0.outcome) }.count
        #expect(Double(faults) / Double(calls.count) > 0.15, "the simulator injected too few faults to prove anything")
        let repeated = Self.callsAfterDefinitive(calls)
        #expect(repeated.isEmpty, "receipts sent again after a definitive answer: \(repeated.prefix(5))")

        // 21007: every sandbox receipt ends verified in the sandbox, after exactly one switch.
        let sandbox = try t.int("""
            SELECT count(DISTINCT t.receipt_id) FROM sim_truth t JOIN iap_receipts r USING (receipt_id)
            WHERE t.environment = 'sandbox'
            """)
        #expect(sandbox > 0, "the generated data has no sandbox receipt")
        let sandboxVerified = try t.int("""
            SELECT count(*) FROM recon.receipt_state s WHERE s.environment = 'sandbox' AND s.definitive
              AND s.receipt_id IN (SELECT receipt_id FROM sim_truth WHERE environment = 'sandbox')
            """)
        #expect(sandboxVerified == sandbox)
        #expect(calls.contains { $0.outcome == "21007" })

        // Every request is in the attempts table, numbered without gaps per receipt.
        let gaps = try t.int("""
            SELECT count(*) FROM (SELECT receipt_id, max(attempt) AS m, count(*) AS c FROM recon.verify_attempts
                                  GROUP BY receipt_id) x WHERE m <> c
            """)
        #expect(gaps == 0)
    }

    @Test("21004 (shared secret mismatch): exit 78, one line, no receipt blamed")
    func sharedSecretMismatch() throws {
        let t = try TestDatabase("verify21004")
        defer { t.drop() }
        try Self.seed(t, users: 300, receipts: 200)
        let sim = try SimulatorProcess(["--shared-secret", "the-right-one"])
        defer { sim.stop() }
        let r = try runTool("iap-reconcile", Self.verifyArguments(concurrency: 8),
                            environment: t.environment(sim.urls.merging(["IAP_SHARED_SECRET": "a-wrong-one"]) { $1 }))
        #expect(r.status == 78)
        let lines = r.stderr.split(separator: "\n").filter { $0.hasPrefix("iap-reconcile:") }
        #expect(lines.count == 1 && lines[0].contains("21004"), "stderr: \(r.stderr)")
        #expect(!r.stderr.contains("a-wrong-one") && !r.stderr.contains("the-right-one"))
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.verify_attempts") == 0)
        // Stopping means stopping: far fewer requests than receipts.
        #expect(sim.calls().count <= 8 + 8)
    }

    @Test("SIGKILL mid-verification, then a rerun: nothing lost, nothing repeated")
    func killAndRerun() throws {
        let t = try TestDatabase("verifykill")
        defer { t.drop() }
        try Self.seed(t, users: 4000, receipts: 3000, seed: 23)
        let sim = try SimulatorProcess(["--latency-ms", "50", "--seed", "3"])
        defer { sim.stop() }
        let env = t.environment(sim.urls)
        let concurrency = 16
        let running = try startTool("iap-reconcile", Self.verifyArguments(concurrency: concurrency), environment: env)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, (try? t.int("SELECT count(*) FROM recon.verify_attempts")) ?? 0 < 600 { usleep(20_000) }
        running.kill9()
        let recordedBeforeKill = Set(try column(t, "SELECT receipt_id FROM recon.receipt_state WHERE definitive"))
        #expect(recordedBeforeKill.count >= 500 && recordedBeforeKill.count < 3000,
                "the kill should land mid-stage (\(recordedBeforeKill.count) definitive)")
        let callsAtKill = sim.calls().count

        let r = try runTool("iap-reconcile", Self.verifyArguments(concurrency: concurrency), environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        // Every receipt has its definitive answer, except those the simulator answers 21002: they
        // become definitive only in their third run (contract §3).
        let lost = try t.int("""
            SELECT count(*) FROM iap_receipts r LEFT JOIN recon.receipt_state s USING (receipt_id)
            WHERE NOT coalesce(s.definitive, false)
              AND coalesce(s.last_status, 0) <> 21002
            """)
        let sample = try column(t, """
            SELECT r.receipt_id || ' ' || coalesce(s.last_class, '-') || ' ' || coalesce(s.last_status::text, '-') || ' '
                   || coalesce(s.last_error, '-') || ' attempts ' || coalesce(s.attempts, 0) || ' runs_21002 ' || coalesce(s.runs_21002, 0)
            FROM iap_receipts r LEFT JOIN recon.receipt_state s USING (receipt_id)
            WHERE NOT coalesce(s.definitive, false) ORDER BY 1 LIMIT 8
            """)
        #expect(lost == 0, "\(lost) receipts lost: \(sample)")
        // The 21002 receipts: counted once per run, not yet definitive after two runs.
        let malformed = try t.int("SELECT count(*) FROM recon.receipt_state WHERE last_status = 21002")
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE last_status = 21002 AND (definitive OR runs_21002 NOT IN (1, 2))") == 0)
        #expect(malformed > 0, "the generated data has no malformed receipt")

        let calls = sim.calls()
        // Nothing recorded as definitive before the kill was sent again.
        let resent = calls[callsAtKill...].filter { recordedBeforeKill.contains($0.rid) }
        #expect(resent.isEmpty, "sent again after its answer was stored: \(resent.prefix(3).map { $0.rid })")
        // At most the requests in flight (and the last group being committed) are asked twice.
        let repeated = Self.callsAfterDefinitive(calls)
        #expect(repeated.count <= concurrency + 64, "\(repeated.count) receipts asked twice")
    }

    @Test("the shared secret and the database password appear in no log, error, report or table")
    func secretsStaySecret() throws {
        let t = try TestDatabase("secrets")
        defer { t.drop() }
        try Self.seed(t, users: 200, receipts: 150)
        let password = "pg-PASSW0RD-value"
        try t.db.execute("CREATE ROLE secret_user LOGIN PASSWORD \(literal: .string(password)) SUPERUSER")
        defer { try? t.db.execute("DROP OWNED BY secret_user CASCADE; DROP ROLE secret_user") }
        let sim = try SimulatorProcess(["--shared-secret", Self.secret, "--fault-rate", "0.3", "--seed", "5"])
        defer { sim.stop() }
        let out = try Harness.scratchDirectory("secret-reports")
        var outputs: [String] = []
        let env = t.environment(sim.urls.merging(["IAP_SHARED_SECRET": Self.secret, "PGPASSWORD": password,
                                                   "PGUSER": "secret_user"]) { $1 })
        let full = try runTool("iap-reconcile", ["run", "--as-of", Self.asOf, "--out", out.path, "--log-level", "trace",
                                                 "--timeout-ms", "1000", "--retry-base-ms", "20"], environment: env)
        #expect(full.status == 0, "\(full.stderr)")
        outputs += [full.stdout, full.stderr]
        // Failures print their one line: a wrong secret, an unreachable database given by URL.
        var wrong = env
        wrong["IAP_SHARED_SECRET"] = Self.secret + "-not"
        try t.db.execute("UPDATE recon.receipt_state SET definitive = false")
        let mismatch = try runTool("iap-reconcile", ["verify", "--as-of", Self.asOf, "--log-level", "trace"], environment: wrong)
        #expect(mismatch.status == 78)
        outputs += [mismatch.stdout, mismatch.stderr]
        var unreachable = env
        unreachable["DATABASE_URL"] = "postgresql://secret_user:\(password)@127.0.0.1:1/nowhere?connect_timeout=2"
        let down = try runTool("iap-reconcile", ["run", "--as-of", Self.asOf, "--out", out.path], environment: unreachable)
        #expect(down.status == 75, "\(down.stderr)")
        outputs += [down.stdout, down.stderr]

        for file in try FileManager.default.subpathsOfDirectory(atPath: out.path) {
            if let text = try? String(contentsOfFile: out.appendingPathComponent(file).path, encoding: .utf8) {
                outputs.append(text)
            }
        }
        outputs.append(try column(t, "SELECT coalesce(problem, '') FROM recon.verify_attempts").joined(separator: "\n"))
        outputs.append(try column(t, "SELECT coalesce(summary::text, '') FROM recon.runs").joined(separator: "\n"))
        outputs.append(try column(t, "SELECT coalesce(last_error, '') FROM recon.receipt_state").joined(separator: "\n"))
        for text in outputs {
            #expect(!text.contains(Self.secret), "the shared secret leaked")
            #expect(!text.contains(password), "the database password leaked")
        }
        #expect(outputs.count >= 8)
    }

    @Test("--help explains every option and variable", arguments: ["", "run", "verify", "migrate", "lookup"])
    func help(subcommand: String) throws {
        let args = subcommand.isEmpty ? ["--help"] : [subcommand, "--help"]
        let r = try runTool("iap-reconcile", args, environment: ProcessInfo.processInfo.environment)
        #expect(r.status == 0)
        let text = r.stdout
        for variable in ["DATABASE_URL", "PGHOST", "PGPASSWORD", "IAP_SHARED_SECRET", "IAP_VERIFY_URL_PRODUCTION",
                         "IAP_VERIFY_URL_SANDBOX", "IAP_BUNDLE_IDS", "IAP_ROOT_CERTIFICATES", "IAP_ISSUER_ID",
                         "IAP_KEY_ID", "IAP_PRIVATE_KEY_FILE", "IAP_API_URL_PRODUCTION", "IAP_API_URL_SANDBOX",
                         "ASC_ISSUER_ID", "ASC_KEY_ID", "ASC_PRIVATE_KEY_FILE", "ASC_VENDOR_NUMBER", "ASC_API_URL",
                         "75", "78", "65", "73"] {
            #expect(text.contains(variable), "\(args) help does not mention \(variable)")
        }
        if !subcommand.isEmpty {
            for option in ["--as-of", "--window-days", "--refund-window-days", "--sweep-limit", "--concurrency",
                           "--source-schema", "--timeout-ms", "--job-schema"] {
                #expect(text.contains(option), "\(subcommand) help does not mention \(option)")
            }
        }
        if subcommand == "run" {
            #expect(text.contains("--out") && text.contains("--no-verify") && text.contains("--api-rate")
                    && text.contains("--sales-report-timezone"))
        }
        if subcommand == "lookup" {
            #expect(text.contains("--transaction") && text.contains("--json") && text.contains("invoice"))
        }
    }
}

func column(_ t: TestDatabase, _ sql: SQL) throws -> [String] {
    let r = try t.db.query(sql)
    return (0..<r.rowCount).map { r.value($0, 0) ?? "" }
}
