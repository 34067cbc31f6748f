import Foundation
import Reconciliation
import Testing

/// For the operator and the audit trail: closed.csv, `--metrics-file` and
/// `<out>/last-run.json`, on nights that succeed and on nights that fail.
@Suite("What the operator sees", .serialized, .enabled(if: Harness.hasDatabase))
struct OperatorTests {
    typealias N = NightTests

    @Test("closed.csv lists the findings of night 1 that night 2 no longer has, with why")
    func closedFindings() throws {
        let w = try N.world("closed", users: 300)
        defer { w.stop() }
        #expect(try w.run().status == 0)
        // Support acts: a clawback grant is revoked, a missed purchase is granted.
        let clawKey = try #require(try w.t.scalar(
            "SELECT finding_key FROM recon.findings WHERE report = 'clawback.csv' ORDER BY 1 LIMIT 1"))
        let grant = String(clawKey.split(separator: "|")[1])
        try w.t.db.query("UPDATE iap_grants SET revoked_at = now() WHERE grant_id = \(grant)")
        let compKey = try #require(try w.t.scalar("""
            SELECT f.finding_key FROM recon.findings f
            JOIN recon.apple_transactions t ON t.transaction_id = split_part(f.finding_key, '|', 2)
            WHERE f.report = 'compensate.csv' AND t.quantity = 1 ORDER BY 1 LIMIT 1
            """))
        let tid = String(compKey.split(separator: "|")[1])
        try w.t.db.query("""
            INSERT INTO iap_grants (grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at)
            SELECT 'G-support-1', 'U-support', NULL, product_id, transaction_id, original_transaction_id, quantity, now()
            FROM recon.apple_transactions WHERE transaction_id = \(tid) AND environment = 'production'
            """)
        let before = try openKeys(w)
        let next = try w.run(["--no-verify"], asOf: N.nextNight)
        #expect(next.status == 0, "\(next.stderr)")
        let after = try openKeys(w)
        let rows = try csvRows(w.out.appendingPathComponent("2026-11-22/closed.csv"))
        #expect(rows.first == ReportFile.closed.columns)
        let closed = Dictionary(uniqueKeysWithValues: rows.dropFirst().map { ($0[1], $0) })
        #expect(Set(closed.keys) == before.subtracting(after), "closed.csv is not night 1 less night 2")
        #expect(closed[clawKey]?[4] == "revoked", "\(closed[clawKey] ?? [])")
        #expect(closed[compKey]?[4] == "granted", "\(closed[compKey] ?? [])")
        for row in closed.values {
            #expect(row[2] == "2026-11-21" && row[3] == "2026-11-22")
            #expect(["granted", "revoked", "refund_reversed", "out_of_window", "input_changed"].contains(row[4]))
        }
        // A rerun for the same night gives the same closed.csv.
        let first = N.read(w.out.appendingPathComponent("2026-11-22/closed.csv"))
        #expect(try w.run(["--no-verify"], asOf: N.nextNight).status == 0)
        #expect(N.read(w.out.appendingPathComponent("2026-11-22/closed.csv")) == first)
    }

    @Test("--metrics-file follows the text format's rules, on success and on a failed run (exit 75), and last-run.json too")
    func metricsOnEveryExit() throws {
        let w = try N.world("metrics", users: 200)
        defer { w.stop() }
        let metrics = try Harness.scratchDirectory("metrics").appendingPathComponent("iap-reconcile.prom")
        let ok = try w.run(["--metrics-file", metrics.path])
        #expect(ok.status == 0, "\(ok.stderr)")
        let good = try parseMetrics(String(contentsOf: metrics, encoding: .utf8))
        #expect(good["iap_reconcile_last_run_exit_code"]?[""] == 0)
        let success = try #require(good["iap_reconcile_last_success_timestamp_seconds"]?[""])
        #expect(success > 1_700_000_000)
        let compensate = try #require(good["iap_reconcile_report_rows"]?["report=\"compensate\""])
        let csvRowsCount = try csvRows(w.out.appendingPathComponent("2026-11-21/compensate.csv")).count - 1
        #expect(Int(compensate) == csvRowsCount)
        #expect(good["iap_reconcile_stage_seconds"]?["stage=\"decide\""] != nil)
        #expect(good["iap_reconcile_app_store_requests"]?["api=\"verify_receipt\""] ?? 0 > 0)
        let lastRun = try lastRunJSON(w)
        #expect(lastRun["exit_code"] as? Int == 0 && lastRun["reason"] as? String == "done")

        // The database is gone: exit 75, and still the metrics (exit code 75, the last success kept).
        var env = w.env
        env["PGHOST"] = "/nonexistent-socket-dir"
        env["DATABASE_URL"] = nil
        let failed = try w.run(["--metrics-file", metrics.path], environment: env)
        #expect(failed.status == 75, "\(failed.stderr)")
        #expect(failed.stderr.split(separator: "\n").count == 1, "\(failed.stderr)")
        let bad = try parseMetrics(String(contentsOf: metrics, encoding: .utf8))
        #expect(bad["iap_reconcile_last_run_exit_code"]?[""] == 75)
        #expect(bad["iap_reconcile_last_success_timestamp_seconds"]?[""] == success)
        let failedRun = try lastRunJSON(w)
        #expect(failedRun["exit_code"] as? Int == 75)
        #expect((failedRun["reason"] as? String)?.isEmpty == false && failedRun["report_folder"] == nil)
        // A metrics file that cannot be written: a warning, the exit code unchanged.
        let unwritable = try w.run(["--metrics-file", "/nonexistent-dir/x.prom", "--no-verify"])
        #expect(unwritable.status == 0)
        #expect(unwritable.stderr.contains("metrics file /nonexistent-dir/x.prom could not be written"))
    }

    // MARK: helpers

    func openKeys(_ w: N.World) throws -> Set<String> {
        var keys = Set<String>()
        let r = try w.t.db.query("SELECT finding_key FROM recon.findings WHERE closed_on IS NULL")
        for i in 0..<r.rowCount { if let k = r.value(i, 0) { keys.insert(k) } }
        return keys
    }

    func lastRunJSON(_ w: N.World) throws -> [String: Any] {
        let data = try Data(contentsOf: w.out.appendingPathComponent("last-run.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Simple CSV rows (the generated ids hold no comma or quote).
    func csvRows(_ url: URL) throws -> [[String]] {
        try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\r\n").filter { !$0.isEmpty }
            .map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Parses the text format as promtool checks it: names, HELP and TYPE before a family's samples,
    /// each family once, one sample per label set. Returns family → labels → value.
    func parseMetrics(_ text: String) throws -> [String: [String: Double]] {
        var out: [String: [String: Double]] = [:]
        var help = Set<String>(), type = Set<String>()
        let name = try Regex("^[a-zA-Z_:][a-zA-Z0-9_:]*$")
        let label = try Regex(#"^[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"$"#)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ", maxSplits: 3)
                #expect(parts.count >= 4, "\(line)")
                let family = String(parts[2])
                #expect(family.wholeMatch(of: name) != nil, "\(line)")
                if line.hasPrefix("# HELP ") {
                    #expect(help.insert(family).inserted && out[family] == nil, "HELP twice or after samples: \(line)")
                } else {
                    #expect(type.insert(family).inserted && out[family] == nil, "TYPE twice or after samples: \(line)")
                    #expect(["gauge", "counter"].contains(String(parts[3])), "\(line)")
                }
                continue
            }
            #expect(!line.hasPrefix("#"), "\(line)")
            let space = try #require(line.lastIndex(of: " "), "\(line)")
            let value = try #require(Double(line[line.index(after: space)...]), "\(line)")
            var series = String(line[..<space]), labels = ""
            if let brace = series.firstIndex(of: "{") {
                #expect(series.hasSuffix("}"), "\(line)")
                labels = String(series[series.index(after: brace)..<series.index(before: series.endIndex)])
                series = String(series[..<brace])
                for pair in labels.split(separator: ",") { #expect(pair.wholeMatch(of: label) != nil, "\(line)") }
            }
            #expect(series.wholeMatch(of: name) != nil, "\(line)")
            #expect(help.contains(series) && type.contains(series), "no HELP/TYPE before \(line)")
            #expect(out[series, default: [:]][labels] == nil, "two samples of one series: \(line)")
            out[series, default: [:]][labels] = value
        }
        #expect(!out.isEmpty)
        return out
    }
}
