import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Testing

/// The nightly sweeps of the App Store Server API (notification history, transaction
/// history) against the simulator over real HTTP: killed mid-sweep and run again, the same
/// reports; without credentials, the night says what it skipped; the money in summary.json is
/// the sum of the report columns.
@Suite("The Server API sweeps", .serialized, .enabled(if: Harness.hasDatabase))
struct ServerAPISweepTests {
    typealias W = ServerAPINightTests
    /// unresolved.csv is left out: its attempt times differ from run to run.
    static let reportFiles = NightTests.findingFiles

    func day(_ w: W.World) -> URL { w.out.appendingPathComponent("2026-11-21") }

    @Test("killed (SIGKILL) during the notification sweep and run again: every refund learned and counted once, the same reports as an uninterrupted run")
    func killedDuringTheSweep() throws {
        let straight = try W.world("sweep_straight")
        defer { straight.stop() }
        let reference = try straight.night()
        #expect(reference.status == 0, "\(reference.stderr)")

        let w = try W.world("sweep_kill", simArguments: ["--latency-ms", "25"])
        defer { w.stop() }
        let job = try startTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", w.out.path, "--no-progress",
                                                  "--timeout-ms", "3000", "--retry-base-ms", "20"], environment: w.env)
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, job.process.isRunning,
              w.apiCalls().filter({ $0.endpoint == "notification_history" }).count < 2 { usleep(5_000) }
        let killedInSweep = job.process.isRunning
        job.kill9()
        #expect(killedInSweep, "the run ended before the sweep could be interrupted")
        let pagesBefore = w.apiCalls().filter { $0.endpoint == "notification_history" }.count
        #expect(pagesBefore >= 2)
        #expect(try w.t.int("SELECT count(*) FROM recon.notification_sweeps") < 8, "every sweep had finished before the kill")

        let again = try w.night()
        #expect(again.status == 0, "\(again.stderr)")
        for file in Self.reportFiles {
            let got = NightTests.read(day(w).appendingPathComponent(file))
            let want = NightTests.read(day(straight).appendingPathComponent(file))
            #expect(got == want, "\(file) after a kill differs from an uninterrupted run\n\(NightTests.diff(got, want))")
        }
        for type in ["REFUND", "REFUND_REVERSED", "ONE_TIME_CHARGE", "REFUND_DECLINED"] {
            let sql: SQL = "SELECT count(*) FROM recon.notifications WHERE notification_type = \(type)"
            #expect(try w.t.int(sql) == straight.t.int(sql), "\(type) notifications stored")
        }
        #expect(try w.t.int("SELECT count(*) FROM recon.notification_sweeps") == 8, "four types, two environments")
        #expect(try money(w) == money(straight))

        // A rerun for the same date: every sweep already reached as_of, nothing is asked again.
        let asked = w.apiCalls().filter { $0.endpoint == "notification_history" }.count
        #expect(try w.night().status == 0)
        #expect(w.apiCalls().filter { $0.endpoint == "notification_history" }.count == asked)
        for file in Self.reportFiles {
            #expect(NightTests.read(day(w).appendingPathComponent(file))
                    == NightTests.read(day(straight).appendingPathComponent(file)), "\(file) after a rerun")
        }
    }

    @Test("without API credentials the night runs on receipts, says once on stderr and in summary.json what it skipped")
    func withoutCredentials() throws {
        let w = try W.world("sweep_nocreds")
        defer { w.stop() }
        var env = w.env
        for name in ["IAP_ISSUER_ID", "IAP_KEY_ID", "IAP_PRIVATE_KEY_FILE"] { env[name] = nil }
        let r = try w.run(["run", "--as-of", NightTests.asOf, "--out", w.out.path, "--no-progress"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let said = r.stderr.components(separatedBy: "without App Store Server API credentials").count - 1
        #expect(said == 1, "\(r.stderr)")
        #expect(r.stderr.contains("IAP_ISSUER_ID"))
        #expect(w.apiCalls().isEmpty, "the Server API was asked without credentials")
        let summary = try summaryJSON(w)
        let skipped = summary["skipped_checks"] as? [String] ?? []
        #expect(skipped.count == 3 && skipped.contains { $0.hasPrefix("refunds_app_wide") }, "\(skipped)")
        #expect(summary["sweeps"] == nil)
        // With them, nothing is skipped and the sweeps are counted.
        let full = try w.night()
        #expect(full.status == 0, "\(full.stderr)")
        #expect(!full.stderr.contains("without App Store Server API credentials"))
        let after = try summaryJSON(w)
        #expect((after["skipped_checks"] as? [String])?.isEmpty == true)
        #expect(after["sweeps"] is [String: Any])
    }

    @Test("summary.json's money per currency equals the sums of the CSV columns")
    func moneyTotalsEqualTheColumns() throws {
        let w = try W.world("sweep_money")
        defer { w.stop() }
        #expect(try w.night().status == 0)
        var sums: [String: [String: Int64]] = [:]
        // The decimals each currency's cells are printed with (the totals are printed alike).
        var decimals: [String: Int] = [:]
        func add(_ file: String, amount: String, kind: String, when: (([String: String]) -> Bool) = { _ in true }) throws {
            for row in try rows(day(w).appendingPathComponent(file)) where when(row) {
                guard let currency = row["currency"], !currency.isEmpty, let text = row[amount], !text.isEmpty else { continue }
                let m = try #require(milli(text), "\(file): amount \(text)")
                sums[currency, default: [:]][kind, default: 0] += m
                let d = text.split(separator: ".").dropFirst().first?.count ?? 0
                #expect(decimals[currency, default: d] == d, "\(currency) printed with different decimals: \(text)")
                decimals[currency] = d
            }
        }
        try add("compensate.csv", amount: "amount", kind: "owed")
        try add("clawback.csv", amount: "amount", kind: "claw_back")
        try add("refunds.csv", amount: "refunded_amount", kind: "refunded") { $0["state"] != "reversed" }
        try add("refunds.csv", amount: "refunded_amount", kind: "refunded_still_granted") { $0["state"] == "still_granted" }
        let expected = Dictionary(uniqueKeysWithValues: sums.map { c, kinds in (c, kinds.mapValues { text($0, decimals[c] ?? 2) }) })
        #expect(decimals["JPY"] == 0 && decimals["USD"] == 2, "\(decimals)")
        #expect(try money(w) == expected)
        #expect(!expected.isEmpty, "no amount at all in the reports")
    }

    @Test("a later night whose refund sweep finds nothing, after nights that found refunds, says so once on stderr")
    func silentRefundSweep() throws {
        let w = try W.world("sweep_silent")
        defer { w.stop() }
        let first = try w.night()
        #expect(first.status == 0)
        #expect(!first.stderr.contains("found no notification"), "\(first.stderr)")
        #expect(try w.t.int("SELECT count(*) FROM recon.notifications WHERE notification_type = 'REFUND'") > 0)
        let before = try w.t.int("SELECT count(*) FROM recon.notifications WHERE notification_type = 'REFUND'")
        let next = try w.run(["run", "--as-of", "2026-11-22T03:00:00Z", "--out", w.out.path, "--no-progress"])
        #expect(next.status == 0, "\(next.stderr)")
        let found = try w.t.int("""
            SELECT count(*) FROM recon.notifications WHERE notification_type = 'REFUND' AND environment = 'production'
              AND run_id = (SELECT max(run_id) FROM recon.runs)
            """)
        let said = next.stderr.components(separatedBy: "the refund sweep found no notification").count - 1
        #expect(said == (found == 0 ? 1 : 0), "\(found) new REFUND notifications (of \(before)); stderr: \(next.stderr)")
        #expect(try w.t.scalar("""
            SELECT reached_ms::text FROM recon.notification_sweeps WHERE notification_type = 'REFUND' AND environment = 'production'
            """) == String(try #require(UTC.parse("2026-11-22T03:00:00Z"))))
    }

    @Test("lookup of a purchase tied to no user says it is in unattributed.csv, and what to do")
    func lookupOfAnUnattributedPurchase() throws {
        let w = try W.world("sweep_lookup")
        defer { w.stop() }
        #expect(try w.night().status == 0)
        let rows = try self.rows(day(w).appendingPathComponent("unattributed.csv"))
        let tid = try #require(rows.first?["transaction_id"], "no unattributed purchase in the generated night")
        let r = try w.run(["lookup", "--transaction", tid])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("ask the customer for their user id") && r.stdout.contains("listed in unattributed.csv since 2026-11-21"),
                "\(r.stdout)")
    }

    // MARK: helpers

    func summaryJSON(_ w: W.World) throws -> [String: Any] {
        let data = try Data(contentsOf: day(w).appendingPathComponent("summary.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    func money(_ w: W.World) throws -> [String: [String: String]] {
        (try summaryJSON(w)["money"] as? [String: [String: String]]) ?? [:]
    }

    /// A report's rows as dictionaries by header.
    func rows(_ url: URL) throws -> [[String: String]] {
        let records = try csvRecords(url)
        guard let header = records.first else { return [] }
        return records.dropFirst().map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }

    func milli(_ s: String) -> Int64? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = Int64(parts[0]) else { return nil }
        if parts.count == 1 { return whole * 1000 }
        guard parts.count == 2, parts[1].count <= 3, let frac = Int64(parts[1] + String(repeating: "0", count: 3 - parts[1].count))
        else { return nil }
        return whole * 1000 + frac
    }

    /// Non-negative milliunits with `decimals` decimals (a whole number of them: the sum of cells).
    func text(_ m: Int64, _ decimals: Int) -> String {
        let whole = m / 1000
        guard decimals > 0 else { return "\(whole)" }
        let f = String(m % 1000)
        return "\(whole)." + (String(repeating: "0", count: 3 - f.count) + f).prefix(decimals)
    }
}
