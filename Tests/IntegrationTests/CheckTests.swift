import Foundation
import Postgres
import Testing

/// `iap-reconcile check`, read-only, on the mistakes a studio's mapping makes.
@Suite("check: the sources as tonight would read them, read-only", .serialized, .enabled(if: Harness.hasDatabase))
struct CheckTests {
    typealias N = NightTests
    typealias H = HeldNightTests

    static func check(_ w: N.World, _ extra: [String] = [], asOf: String = N.nextNight) throws -> ProcessResult {
        try runTool("iap-reconcile", ["check", "--source-schema", "v", "--as-of", asOf] + extra, environment: w.env)
    }

    static func json(_ r: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
    }

    static func failed(_ r: ProcessResult) throws -> [String] {
        (try json(r)["failed"] as? [[String: Any]] ?? []).map { "\($0["check"] as? String ?? "?") \($0["subject"] as? String ?? "?")" }
    }

    static func relation(_ r: ProcessResult, _ name: String) throws -> [String: Any] {
        let all = try json(r)["relations"] as? [[String: Any]] ?? []
        return try #require(all.first { $0["relation"] as? String == name })
    }

    /// Everything the job and the sources hold, to show that check wrote nothing.
    static func footprint(_ w: N.World) throws -> String {
        let r = try w.t.db.query("""
            SELECT string_agg(n.nspname || '.' || c.relname || ':' || c.relkind::text, ',' ORDER BY n.nspname, c.relname)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND n.nspname NOT LIKE 'pg_temp%'
              AND n.nspname NOT LIKE 'pg_toast_temp%'
            """)
        let runs = try w.t.scalar("SELECT count(*) || ' ' || coalesce(max(run_id), 0) FROM recon.runs") ?? ""
        let digests = try w.t.scalar("SELECT count(*) || ' ' || coalesce(sum(digest), 0) FROM recon.key_digests") ?? ""
        let findings = try w.t.scalar("SELECT count(*) FROM recon.findings") ?? ""
        return (r.value(0, 0) ?? "") + " runs \(runs) digests \(digests) findings \(findings)"
    }

    @Test("a good mapping: exit 0, every relation counted, receipts split, the last night's counts; nothing written")
    func goodMapping() throws {
        let w = try H.world("check_good")
        defer { w.stop() }
        #expect(try H.night(w, N.asOf).status == 0)
        let before = try Self.footprint(w)
        let r = try Self.check(w, ["--json"])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        #expect(try Self.failed(r).isEmpty)
        let orders = try Self.relation(r, "iap_orders")
        #expect(orders["rows"] as? Int == (try w.t.int("SELECT count(*) FROM public.iap_orders")))
        #expect((orders["in_window"] as? Int ?? 0) > 0)
        #expect((orders["keys_compared"] as? Int ?? 0) > 100 && orders["keys_changed"] as? Int == 0)
        // The generated data has input errors of every kind: the night's tally and check agree.
        let summary = try H.summary(w.out.appendingPathComponent("2026-11-21"))
        let tally = try #require(summary["tally"] as? [String: [String: Any]])
        for name in ["iap_orders", "iap_receipts", "iap_grants", "iap_products"] {
            let rel = try Self.relation(r, name)
            #expect(rel["input_errors"] as? Int == tally[name]?["input_error"] as? Int, "\(name)")
            #expect(rel["rows"] as? Int == tally[name]?["rows"] as? Int, "\(name)")
        }
        let receipts = try #require(try Self.json(r)["receipts"] as? [String: Any])
        let inWindow = receipts["in_window"] as? Int ?? 0
        #expect(inWindow > 0 && (receipts["signed"] as? Int ?? 0) > 0 && (receipts["settled_at_upload"] as? Int ?? 0) > 0)
        // Every receipt was answered last night but for those it could not settle: few to verify.
        #expect((receipts["to_verify"] as? Int ?? inWindow) < inWindow / 2, "\(receipts)")
        let history = try #require(try Self.json(r)["history"] as? [String: Any])
        #expect(history["available"] as? Bool == true && history["published_nights"] as? Int == 1)
        #expect(try Self.footprint(w) == before, "check wrote something")
        // The lines for people end with the verdict.
        let human = try Self.check(w)
        #expect(human.status == 0 && human.stdout.contains("OK: every expectation holds"), "\(human.stdout)")
    }

    @Test("what tonight would list: every family decided gives the night's own rows per report; a sample is scaled up; nothing written")
    func tonightAsTheNightLists() throws {
        let w = try H.world("check_tonight")
        defer { w.stop() }
        #expect(try H.night(w, N.asOf).status == 0)
        let counts = try #require(try H.summary(w.out.appendingPathComponent("2026-11-21"))["counts"] as? [String: Int])
        let before = try Self.footprint(w)
        // The same as-of as the night, every family: the night's rows, report by report.
        let all = try Self.check(w, ["--json", "--estimate-families", "1000000"], asOf: N.asOf)
        #expect(all.status == 0, "\(all.stderr)\n\(all.stdout.suffix(800))")
        let tonight = try #require(try Self.json(all)["tonight"] as? [String: Any])
        #expect(tonight["exact"] as? Bool == true)
        let reports = try #require(tonight["reports"] as? [String: Int])
        for report in ["compensate", "duplicate_grants", "clawback", "unattributed"] {
            #expect(reports[report] == counts[report], "\(report): check says \(reports[report] ?? -1), the night listed \(counts[report] ?? -1)")
        }
        #expect((reports["compensate"] ?? 0) > 10 && (reports["clawback"] ?? 0) > 10, "\(reports)")
        // A sample: fewer keys decided, the counts scaled, said as an estimate.
        let sampled = try Self.check(w, ["--json", "--estimate-families", "200"], asOf: N.asOf)
        #expect(sampled.status == 0, "\(sampled.stderr)")
        let part = try #require(try Self.json(sampled)["tonight"] as? [String: Any])
        #expect(part["exact"] as? Bool == false)
        #expect((part["keys_decided"] as? Int ?? 0) < (tonight["keys_decided"] as? Int ?? 0) / 2, "\(part)")
        let human = try Self.check(w, ["--estimate-families", "200"], asOf: N.asOf)
        #expect(human.stdout.contains("  compensate: ~"), "\(human.stdout)")
        #expect(try Self.footprint(w) == before, "check wrote something")
    }

    @Test("grants without Apple's transaction id: exit 65 naming them, by product and by the tool that wrote them")
    func grantsWithoutTransactionID() throws {
        let w = try H.world("check_grants")
        defer { w.stop() }
        try w.t.db.execute("ALTER TABLE public.iap_grants ADD COLUMN tool text NOT NULL DEFAULT 'purchase_handler'")
        try w.t.db.execute("""
            INSERT INTO public.iap_grants (grant_id, user_id, order_id, product_id, transaction_id, quantity, granted_at, tool)
            SELECT 'gm-' || grant_id, user_id, NULL, product_id, NULL, 1, granted_at, 'gm_console'
            FROM public.iap_grants WHERE transaction_id IS NOT NULL ORDER BY grant_id LIMIT 7
            """)
        try H.view(w, "iap_grants", "SELECT * FROM public.iap_grants")
        let r = try Self.check(w, ["--json", "--by", "tool"], asOf: N.asOf)
        #expect(r.status == 65, "\(r.stderr)")
        #expect(try Self.failed(r).contains("grants_without_transaction_id iap_grants"))
        #expect(r.stderr.contains("grants_without_transaction_id"), "\(r.stderr)")
        let grants = try #require(try Self.json(r)["grants_without_transaction_id"] as? [String: Any])
        let byTool = try #require((grants["by"] as? [String: [[String: Any]]])?["tool"])
        #expect(byTool.first?["value"] as? String == "gm_console" && (byTool.first?["rows"] as? Int ?? 0) >= 7, "\(byTool)")
        // Its reasons, with example keys.
        let rel = try Self.relation(r, "iap_grants")
        let reasons = rel["reasons"] as? [[String: Any]] ?? []
        let missing = try #require(reasons.first { $0["reason"] as? String == "transaction_id is null" })
        let examples = missing["examples"] as? [String] ?? []
        #expect(examples.count == 5 && examples == examples.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) },
                "\(examples)")
        #expect((missing["rows"] as? Int ?? 0) >= 7)
        // An unknown --by column is a usage error.
        let bad = try Self.check(w, ["--by", "no_such_column"], asOf: N.asOf)
        #expect(bad.status == 64 && bad.stderr.contains("no_such_column"), "\(bad.stderr)")
    }

    @Test("the 4,090 mistake, every order in 1970, row_number() receipt ids: each fails check with its cause")
    func mistakes() throws {
        let w = try H.world("check_mistakes")
        defer { w.stop() }
        // Receipt ids made by row_number(), newest first: stable only until the next upload.
        let numbered: SQL = """
            SELECT (row_number() OVER (ORDER BY submitted_at DESC, receipt_id))::text AS receipt_id, user_id, order_id,
                   transaction_id, receipt_data, submitted_at, verify_status FROM public.iap_receipts
            """
        try H.view(w, "iap_receipts", numbered)
        #expect(try H.night(w, N.asOf).status == 0)
        #expect(try Self.check(w).status == 0)

        try H.view(w, "iap_grants", """
            SELECT grant_id, user_id, order_id, product_id, NULL::text AS transaction_id, original_transaction_id, quantity,
                   granted_at, revoked_at FROM public.iap_grants
            """)
        var r = try Self.check(w, ["--json"])
        #expect(r.status == 65)
        #expect(try Self.failed(r).contains("input_errors iap_grants"), "\(r.stdout.suffix(600))")
        #expect(try Self.failed(r).contains("grants_without_transaction_id iap_grants"), "\(r.stdout.suffix(600))")
        // Tonight would list every purchase to compensate: said before a night publishes it.
        #expect(try Self.failed(r).contains("findings_share compensate"), "\(r.stdout.suffix(600))")
        let tonight = try #require(try Self.json(r)["tonight"] as? [String: Any])
        let listed = (tonight["reports"] as? [String: Int])?["compensate"] ?? 0
        let lastNight = (try #require(try Self.json(r)["history"] as? [String: Any])["last_counts"] as? [String: Int])?["compensate"] ?? 0
        #expect(listed > 2 * lastNight, "tonight \(listed), last night \(lastNight)")
        try H.view(w, "iap_grants", "SELECT * FROM public.iap_grants")

        try H.view(w, "iap_orders", """
            SELECT order_id, user_id, product_id, quantity, status, transaction_id,
                   to_timestamp(extract(epoch FROM created_at) / 1000) AS created_at FROM public.iap_orders
            """)
        r = try Self.check(w, ["--json"])
        #expect(r.status == 65)
        #expect(try Self.failed(r).contains("window_rows_shrank iap_orders"), "\(r.stdout.suffix(600))")
        #expect(!(try Self.failed(r).contains("window_empty iap_orders")), "said twice")
        try H.view(w, "iap_orders", "SELECT * FROM public.iap_orders")

        try w.t.db.execute("""
            INSERT INTO public.iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status)
            SELECT 'again-' || receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at + interval '1 hour', verify_status
            FROM public.iap_receipts ORDER BY submitted_at DESC LIMIT 3
            """)
        r = try Self.check(w, ["--json"])
        #expect(r.status == 65)
        let failedNow = try Self.failed(r), tonightNow = try Self.json(r)["tonight"] as? [String: Any] ?? [:]
        // The ids moved, and with them the answers the job holds: tonight's lists say what that does.
        #expect(failedNow.first == "keys_changed iap_receipts"
                && Set(failedNow).isSubset(of: ["keys_changed iap_receipts", "findings_share clawback", "findings_share compensate"]),
                "\(failedNow) \(tonightNow)")
        let receipts = try Self.relation(r, "iap_receipts")
        #expect((receipts["keys_changed"] as? Int ?? 0) * 2 > (receipts["keys_compared"] as? Int ?? 0), "\(receipts)")
        try w.t.db.execute("DELETE FROM public.iap_receipts WHERE receipt_id LIKE 'again-%'")
        #expect(try Self.check(w).status == 0)
    }

    @Test("without a job schema: the history checks are skipped and it says so; 1970 is still found; nothing is created")
    func withoutJobSchema() throws {
        let w = try H.world("check_fresh")
        defer { w.stop() }
        let r = try Self.check(w, ["--json"], asOf: N.asOf)
        #expect(r.status == 0, "\(r.stderr)")
        let history = try #require(try Self.json(r)["history"] as? [String: Any])
        #expect(history["available"] as? Bool == false && (history["note"] as? String ?? "").contains("no job schema"))
        #expect(try w.t.int("SELECT count(*) FROM pg_namespace WHERE nspname = 'recon'") == 0)
        try H.view(w, "iap_orders", """
            SELECT order_id, user_id, product_id, quantity, status, transaction_id,
                   to_timestamp(extract(epoch FROM created_at) / 1000) AS created_at FROM public.iap_orders
            """)
        let wrongUnit = try Self.check(w, ["--json"], asOf: N.asOf)
        #expect(wrongUnit.status == 65)
        #expect(try Self.failed(wrongUnit) == ["window_empty iap_orders"])
        // A relation that does not match the contract: 65 with run's own line.
        try w.t.db.execute("DROP VIEW v.iap_orders")
        let missing = try Self.check(w, [], asOf: N.asOf)
        #expect(missing.status == 65 && missing.stderr.contains("source relations do not match"), "\(missing.stderr)")
    }

    @Test("hostile options: bad numbers and identifiers are 64")
    func hostileOptions() throws {
        let w = try H.world("check_options")
        defer { w.stop() }
        for bad in [["--hold-input-errors-percent", "-1"], ["--hold-keys-percent", "nan"], ["--by", ""], ["--source-schema", "Bad Name"],
                    ["--hold-min-rows", "-5"]] {
            let r = try runTool("iap-reconcile", ["check"] + bad, environment: w.env)
            #expect(r.status == 64, "\(bad): \(r.status) \(r.stderr)")
        }
    }
}
