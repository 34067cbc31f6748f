import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
@testable import JobStore
@testable import NightLearn
import Testing

/// "Right to the row": no source row vanishes, the tally adds up, what Apple never showed is not
/// a duplicate, malformed configuration and killed runs end as the contract says.
@Suite("Right to the row", .serialized, .enabled(if: Harness.hasDatabase))
struct RightToTheRowTests {
    typealias N = NightTests

    static func csvRows(_ url: URL) -> [String] {
        N.read(url).components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
    }

    /// `"tally":{…}` of summary.json, as numbers per relation and bucket.
    static func tally(_ summary: URL) throws -> [String: [String: Int]] {
        let data = try Data(contentsOf: summary)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let tally = try #require(object["tally"] as? [String: [String: Int]])
        return tally
    }

    @Test("a null in a required column is an input error naming the column; the tally accounts for every row")
    func nullsAreInputErrors() throws {
        let w = try N.world("nulls", users: 200)
        defer { w.stop() }
        let day = "2026-11-20 10:00:00+00"
        try w.t.db.execute("""
            INSERT INTO iap_orders (order_id, user_id, product_id, quantity, status, transaction_id, created_at)
            SELECT 'null-created', user_id, product_id, 1, 'created', NULL, NULL FROM iap_orders LIMIT 1;
            INSERT INTO iap_orders (order_id, user_id, product_id, quantity, status, transaction_id, created_at)
            SELECT 'null-status', user_id, product_id, 1, NULL, NULL, \(literal: .text(day))::timestamptz FROM iap_orders LIMIT 1;
            INSERT INTO iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status)
            SELECT 'null-submitted', user_id, NULL, NULL, receipt_data, NULL, NULL FROM iap_receipts
            WHERE receipt_data IS NOT NULL LIMIT 1;
            INSERT INTO iap_grants (grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
                                    quantity, granted_at, revoked_at)
            SELECT 'null-granted', user_id, NULL, product_id, '4000000000000001', NULL, 1, NULL, NULL FROM iap_grants LIMIT 1;
            """)
        let r = try w.run()
        #expect(r.status == 0, "\(r.stderr)")
        let folder = w.out.appendingPathComponent("2026-11-21")
        let errors = Self.csvRows(folder.appendingPathComponent("input_errors.csv"))
        for expected in ["iap_orders,null-created,created_at,created_at is null",
                         "iap_orders,null-status,status,status is null",
                         "iap_receipts,null-submitted,submitted_at,submitted_at is null",
                         "iap_grants,null-granted,granted_at,granted_at is null"] {
            #expect(errors.contains(expected), "input_errors.csv lacks \(expected)")
        }
        // The receipt with no time was not sent, and is not listed as unresolved.
        #expect(!w.sim.calls().contains { $0.rid == "null-submitted" })
        #expect(!N.read(folder.appendingPathComponent("unresolved.csv")).contains("null-submitted"))

        // Every row of every relation is in exactly one bucket.
        let tally = try Self.tally(folder.appendingPathComponent("summary.json"))
        for relation in ["iap_products", "iap_orders", "iap_receipts", "iap_grants"] {
            let buckets = try #require(tally[relation], "no tally for \(relation)")
            let rows = try w.t.int("SELECT count(*) FROM \(ident: relation)")
            #expect(buckets["rows"] == rows)
            #expect(buckets.filter { $0.key != "rows" }.values.reduce(0, +) == rows, "\(relation): \(buckets)")
        }
        #expect(tally["iap_receipts"]?["unresolved"] == Self.csvRows(folder.appendingPathComponent("unresolved.csv")).count)
        #expect((tally["iap_orders"]?["input_error"] ?? 0) >= 2)
        #expect(N.read(folder.appendingPathComponent("summary.json")).contains("\"written_at\":\"20"))
    }

    /// unresolved.csv is the tally's `unresolved` bucket (Conservation.unresolvedTable); the
    /// receipts a run sends are selected by ReceiptSelection. Contract §2 defines both alike (the
    /// report without the wait between runs): the two statements must find the same receipts.
    @Test("unresolved.csv holds exactly the receipts verification selects as unresolved (wait aside)")
    func unresolvedAsSelected() throws {
        let w = try N.world("unresolvedsel", users: 200)
        defer { w.stop() }
        // Unverified, so many receipts stay unresolved; some are settled at upload, some not:
        // a grant revoked, an upload that answered 0 with no grant at all, one outside the window.
        try w.t.db.execute("""
            CREATE TABLE revoked_uploads AS
                SELECT receipt_id, transaction_id FROM iap_receipts
                WHERE verify_status = 0 AND transaction_id IS NOT NULL AND submitted_at > '2026-11-01'
                ORDER BY receipt_id LIMIT 5;
            UPDATE iap_grants SET revoked_at = '2026-11-20 10:00:00+00'
            WHERE transaction_id IN (SELECT transaction_id FROM revoked_uploads);
            INSERT INTO iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status)
            SELECT 'ungranted-0', user_id, NULL, '4000000000000077', receipt_data, '2026-11-20 10:00:00+00', 0
            FROM iap_receipts WHERE receipt_data IS NOT NULL LIMIT 1;
            INSERT INTO iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status)
            SELECT 'long-ago', user_id, NULL, NULL, receipt_data, '2025-01-01 10:00:00+00', NULL
            FROM iap_receipts WHERE receipt_data IS NOT NULL LIMIT 1;
            """)
        let r = try w.run(["--no-verify"])
        #expect(r.status == 0, "\(r.stderr)")
        let listed = Self.csvRows(w.out.appendingPathComponent("2026-11-21/unresolved.csv"))
            .map { String($0.prefix { $0 != "," }) }
        let settings = JobSettings(asOf: 1_795_230_000_000, jobSchema: try JobSchema("recon"))
        let sql = ReceiptSelection.unresolvedReceiptsSQL(select: "r.receipt_id", settings: settings, eligibleNow: false)
        let selected = try w.t.db.query(sql + " ORDER BY r.receipt_id COLLATE \"C\"").rows.map { $0[0] ?? "" }
        #expect(listed.count > 20, "too few unresolved receipts to compare: \(listed.count)")
        #expect(listed.contains("ungranted-0") && !listed.contains("long-ago"))
        let revoked = try w.t.db.query("SELECT receipt_id FROM revoked_uploads").rows.map { $0[0] ?? "" }
        #expect(revoked.count == 5 && revoked.allSatisfy(listed.contains), "\(revoked)")
        #expect(listed == selected, "unresolved.csv \(listed.count) rows, the selection \(selected.count)")
    }

    /// The receipts are counted beside the families, the grants beside the reports (the night's
    /// plan: NightPlan.swift): either way a failed check leaves no report.
    @Test("a row taken out of its bucket by a deliberate fault: exit 70 naming the relation, no report",
          arguments: ["iap_grants", "iap_receipts"])
    func conservationFault(relation: String) throws {
        let w = try N.world("tallyfault_\(relation.dropFirst(4).prefix(1))", users: 60)
        defer { w.stop() }
        let r = try w.run(["--inject-fault", "tally-drop:\(relation)"])
        #expect(r.status == 70, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("conservation check failed for \(relation)"), "\(r.stderr)")
        // Nothing of the half-written set is left beside the reports either.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: w.out.path)) ?? []
        #expect(left.filter { $0.hasPrefix(".") }.isEmpty, "\(left)")
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("2026-11-21").path))
        // Without the fault the same data passes.
        #expect(try w.run().status == 0)
    }

    @Test("the grants' tally buckets counted by the rules equal those of the tally's own SQL, bucket by bucket")
    func grantBucketsTwoWays() throws {
        let w = try N.world("grantbuckets", users: 300)
        defer { w.stop() }
        // A grant nothing knows (no receipt, no order, a transaction Apple never showed): unverified,
        // a bucket the generated data leaves empty.
        try w.t.db.execute("""
            INSERT INTO iap_grants (grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
                                    quantity, granted_at, revoked_at)
            SELECT 'g-unlinked', 'u-unlinked', NULL, product_id, '4000000000000099', NULL, 1, '2026-11-20 10:00:00+00', NULL
            FROM iap_grants LIMIT 1
            """)
        let day = w.out.appendingPathComponent("2026-11-21")
        let byRules = try w.run()
        #expect(byRules.status == 0, "\(byRules.stderr)")
        let rules = try #require(try Self.tally(day.appendingPathComponent("summary.json"))["iap_grants"])
        let bySQL = try w.run(["--no-verify", "--inject-fault", "tally-grants-by-sql"])
        #expect(bySQL.status == 0, "\(bySQL.stderr)")
        let sql = try #require(try Self.tally(day.appendingPathComponent("summary.json"))["iap_grants"])
        #expect(rules == sql, "by the rules \(rules), by the SQL \(sql)")
        // Every bucket is exercised, so a grant counted in the wrong one would show.
        for bucket in ["clawed_back", "duplicate", "kept", "unverified"] {
            #expect((rules[bucket] ?? 0) > 0, "no grant in \(bucket): \(rules)")
        }
    }

    @Test("the receipts' tally buckets equal the contract's rules said plainly in SQL, bucket by bucket")
    func receiptBucketsTwoWays() throws {
        let w = try N.world("receiptbuckets", users: 300)
        defer { w.stop() }
        let product = try #require(try w.t.scalar("SELECT product_id FROM iap_products WHERE product_type = 'consumable' LIMIT 1"))
        let data = try #require(try w.t.scalar("SELECT receipt_data FROM iap_receipts WHERE receipt_data IS NOT NULL LIMIT 1"))
        // Uploads the job never asks Apple about. Settled at upload (status 0 or 21006 and an active
        // grant of the transaction), in the window and long before it; else outside the window: a
        // revoked grant, no grant, or a failed status do not settle an upload.
        try w.t.db.query("""
            INSERT INTO iap_receipts VALUES
              ('r-settled-in', 'u-s', NULL, '4000000000000011', \(data), '2026-11-20 10:00:00+00', 0),
              ('r-settled-old', 'u-s', NULL, '4000000000000012', \(data), '2025-01-01 10:00:00+00', 21006),
              ('r-revoked-old', 'u-s', NULL, '4000000000000013', \(data), '2025-01-01 10:00:00+00', 0),
              ('r-nogrant-old', 'u-s', NULL, '4000000000000014', \(data), '2025-01-01 10:00:00+00', 0),
              ('r-failed-old', 'u-s', NULL, '4000000000000012', \(data), '2025-01-01 10:00:00+00', 21002)
            """)
        try w.t.db.query("""
            INSERT INTO iap_grants VALUES
              ('g-settled-in', 'u-s', NULL, \(product), '4000000000000011', NULL, 1, '2026-11-20 10:00:10+00', NULL),
              ('g-settled-old', 'u-s', NULL, \(product), '4000000000000012', NULL, 1, '2025-01-01 10:00:10+00', NULL),
              ('g-revoked-old', 'u-s', NULL, \(product), '4000000000000013', NULL, 1, '2025-01-01 10:00:10+00', '2025-01-02 10:00:00+00')
            """)
        #expect(try w.t.int("SELECT count(*) FROM (SELECT receipt_id FROM iap_receipts GROUP BY 1 HAVING count(*) > 1) d") == 0)
        let r = try w.run()
        #expect(r.status == 0, "\(r.stderr)")
        var job = try #require(try Self.tally(w.out.appendingPathComponent("2026-11-21/summary.json"))["iap_receipts"])
        job = job.filter { $0.key != "rows" && $0.key != "input_error" && $0.value > 0 }
        // Each clean receipt placed by the rules of contract §1, with a correlated EXISTS per receipt.
        var plain: [String: Int] = [:]
        for row in try w.t.db.query("""
            SELECT b, count(*) FROM (
                SELECT CASE WHEN s.definitive AND s.verdict = 'valid' THEN 'valid'
                            WHEN s.definitive AND s.verdict IN ('invalid_receipt', 'wrong_bundle') THEN 'rejected'
                            WHEN coalesce(x.verify_status, -1) IN (0, 21006) AND EXISTS (
                                SELECT 1 FROM iap_grants g WHERE g.transaction_id = x.transaction_id AND g.revoked_at IS NULL)
                                THEN 'settled_at_upload'
                            WHEN x.submitted_at < '2026-10-22 03:00:00+00' OR x.submitted_at > '2026-11-21 03:00:00+00'
                                THEN 'outside_window'
                            ELSE 'unresolved' END AS b
                FROM iap_receipts x LEFT JOIN recon.receipt_state s ON s.receipt_id = x.receipt_id
                WHERE x.receipt_id NOT IN (SELECT key FROM recon.input_errors WHERE relation = 'iap_receipts')
            ) placed GROUP BY b
            """).rows {
            plain[row[0] ?? "?"] = Int(row[1] ?? "") ?? -1
        }
        #expect(job == plain, "the job's tally \(job), the plain rules \(plain)")
        #expect((plain["settled_at_upload"] ?? 0) >= 2 && (plain["outside_window"] ?? 0) >= 3, "\(plain)")
    }

    @Test("a 2-unit order Apple never showed, delivered as two grants of 1, is not a duplicate")
    func twoUnitOrder() throws {
        let w = try N.world("twounits", users: 60)
        defer { w.stop() }
        let product = try #require(try w.t.scalar("SELECT product_id FROM iap_products WHERE product_type = 'consumable' LIMIT 1"))
        let data = try #require(try w.t.scalar("SELECT receipt_data FROM iap_receipts WHERE receipt_data IS NOT NULL LIMIT 1"))
        // Settled at upload (status 0 and an active grant): the job never asks Apple about it.
        try w.t.db.query("""
            INSERT INTO iap_orders VALUES ('two-units', 'u-two', \(product), 2, 'delivered', '4000000000000002', '2026-11-20 10:00:00+00')
            """)
        try w.t.db.query("""
            INSERT INTO iap_receipts VALUES ('r-two', 'u-two', 'two-units', '4000000000000002', \(data), '2026-11-20 10:00:05+00', 0)
            """)
        try w.t.db.query("""
            INSERT INTO iap_grants VALUES
              ('g-two-a', 'u-two', 'two-units', \(product), '4000000000000002', '4000000000000002', 1, '2026-11-20 10:00:10+00', NULL),
              ('g-two-b', 'u-two', 'two-units', \(product), '4000000000000002', '4000000000000002', 1, '2026-11-20 10:00:11+00', NULL),
              ('g-one-a', 'u-one', NULL, \(product), '4000000000000003', '4000000000000003', 1, '2026-11-20 10:00:10+00', NULL),
              ('g-one-b', 'u-one', NULL, \(product), '4000000000000003', '4000000000000003', 1, '2026-11-20 10:00:11+00', NULL)
            """)
        let r = try w.run()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!w.sim.calls().contains { $0.rid == "r-two" }, "a receipt settled at upload was sent")
        let duplicates = N.read(w.out.appendingPathComponent("2026-11-21/duplicate_grants.csv"))
        #expect(!duplicates.contains("g-two-"), "the second unit of a 2-unit order was called a duplicate")
        // Without an order, the first grant's quantity (1) is the limit: the second grant is a duplicate.
        #expect(duplicates.contains("g-one-b,u-one,,\(product),consumable,4000000000000003,4000000000000003,same_transaction,g-one-a,"))
    }

    @Test("a malformed DATABASE_URL: exit 78, one line naming the fault, the password never shown")
    func malformedDatabaseURL() throws {
        for url in ["postgresql://u:secret%zz@/db", "postgresql://u:secret@[::1/db", "postgres://u:secret@host:99999/db"] {
            var env = ProcessInfo.processInfo.environment
            env["DATABASE_URL"] = url
            let r = try runTool("iap-reconcile", ["run", "--no-progress", "--out", NSTemporaryDirectory()], environment: env)
            #expect(r.status == 78, "\(url): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("DATABASE_URL is malformed"), "\(r.stderr)")
            #expect(!r.stderr.contains("secret"), "the password was printed: \(r.stderr)")
            #expect(r.stderr.contains("u:***@"), "\(r.stderr)")
        }
    }

    @Test("a run killed in the middle of a long statement: the next run gets the lock within its wait")
    func killedRunReleasesTheLock() throws {
        let w = try N.world("killlock", users: 60)
        defer { w.stop() }
        // A source schema whose products view takes 60 s: the first statement that reads it is long.
        try w.t.sourceViews("slow", ["iap_products": "SELECT p.* FROM public.iap_products p, (SELECT pg_sleep(60)) s"])
        let first = try startTool("iap-reconcile", ["run", "--as-of", N.asOf, "--out", w.out.path, "--no-progress",
                                                    "--source-schema", "slow"], environment: w.env)
        let deadline = Date().addingTimeInterval(30)
        var sleeping = false
        while !sleeping && Date() < deadline {
            sleeping = try w.t.int("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%iap_products%' AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND wait_event = 'PgSleep'") > 0
            if !sleeping { usleep(50_000) }
        }
        #expect(sleeping, "the first run never reached its long statement")
        first.kill9()
        let started = Date()
        let second = try w.run()
        #expect(second.status == 0, "the next run did not get the lock: \(second.stderr)")
        #expect(Date().timeIntervalSince(started) < 60, "the next run waited for the killed statement to end")
    }

    @Test("production says sandbox, sandbox says production: unresolved with that reason, never switched again")
    func environmentsDisagree() throws {
        let w = try N.world("disagree", users: 40)
        defer { w.stop() }
        let token = SimReceipt(rid: "r-disagree", env: .sandbox, bundle: N.bundle, style: .ios7, st: 21008, txs: []).token()
        try w.t.db.query("""
            INSERT INTO iap_receipts VALUES ('r-disagree', 'u-disagree', NULL, NULL, \(token), '2026-11-20 10:00:00+00', NULL)
            """)
        #expect(try w.run(["--retry-delay-minutes", "0"]).status == 0)
        let firstCalls = w.sim.calls().filter { $0.rid == "r-disagree" }.map { "\($0.env) \($0.outcome)" }
        #expect(firstCalls == ["production 21007", "sandbox 21008"])
        let unresolved = N.read(w.out.appendingPathComponent("2026-11-21/unresolved.csv"))
        #expect(unresolved.contains("r-disagree,u-disagree,,,2,21008,\"production says sandbox, sandbox says production\","),
                "\(unresolved)")
        // The next run asks the sandbox only (the environment that answered last), once.
        #expect(try w.run(["--retry-delay-minutes", "0"]).status == 0)
        let secondCalls = w.sim.calls().filter { $0.rid == "r-disagree" }.dropFirst(2).map { "\($0.env) \($0.outcome)" }
        #expect(secondCalls == ["sandbox 21008"])
        #expect(try w.t.scalar("SELECT last_error FROM recon.receipt_state WHERE receipt_id = 'r-disagree'")
                == "production says sandbox, sandbox says production")
    }

    @Test("a rerun replaces the report folder without a moment where it is absent")
    func folderNeverAbsent() throws {
        let w = try N.world("swap", users: 300)
        defer { w.stop() }
        #expect(try w.run().status == 0)
        let folder = w.out.appendingPathComponent("2026-11-21").path
        let rerun = try startTool("iap-reconcile", ["run", "--as-of", N.asOf, "--out", w.out.path, "--no-progress",
                                                    "--no-verify"], environment: w.env)
        var checks = 0, absent = 0
        while rerun.process.isRunning {
            var info = stat()
            if stat(folder, &info) != 0 { absent += 1 }
            checks += 1
        }
        let result = rerun.wait(timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(checks > 100)
        #expect(absent == 0, "the report folder was absent \(absent) times out of \(checks)")
    }
    @Test("a grant with several linked receipts is judged on all of them, added up, not on one")
    func grantWithSeveralReceipts() throws {
        let w = try N.world("links")
        defer { w.stop() }
        #expect(try w.run().status == 0)
        // Receipts the first night verified: two Apple rejected as invalid, one valid answer of an
        // ordinary purchase, and one valid answer that does not show the transaction its row
        // names (a transaction_not_found receipt, given a transaction id of its own here).
        func receipt(_ condition: SQL, last: Bool = false) throws -> (id: String, tid: String?, order: String) {
            let r = try w.t.db.query("""
                SELECT r.receipt_id, r.transaction_id, r.order_id FROM iap_receipts r JOIN recon.receipt_state s USING (receipt_id)
                WHERE r.order_id IS NOT NULL AND \(condition)
                ORDER BY r.receipt_id COLLATE "C" \(last ? "DESC" : "" as SQL) LIMIT 1
                """)
            try #require(r.rowCount == 1, "no receipt where \(condition)")
            return (try #require(r.value(0, 0)), r.value(0, 1), try #require(r.value(0, 2)))
        }
        let invalid = try receipt("s.verdict = 'invalid_receipt' AND r.transaction_id IS NOT NULL")
        let otherInvalid = try receipt("s.verdict = 'invalid_receipt'", last: true)
        let ordinary = try receipt("""
            s.verdict = 'valid' AND EXISTS (SELECT 1 FROM recon.receipt_transactions rt
                                            WHERE rt.receipt_id = r.receipt_id AND rt.transaction_id = r.transaction_id)
            """, last: true)
        let without = try receipt("s.verdict = 'valid' AND r.transaction_id IS NULL")
        try w.t.db.query("UPDATE iap_receipts SET transaction_id = '4000000000000077' WHERE receipt_id = \(without.id)")
        let product = try #require(try w.t.scalar("SELECT product_id FROM iap_products WHERE product_type = 'consumable' LIMIT 1"))
        // Each grant has two linked receipts, one rejected as invalid and one valid answer without
        // the grant's transaction: not every receipt was rejected, so transaction_not_found. On its
        // invalid receipt alone it would be invalid_receipt. By receipt id the invalid one comes
        // first for one grant and last for the other, so counting that kept either receipt alone
        // (the first or the last of a grant's) instead of adding them up would show.
        try #require(invalid.id.utf8.lexicographicallyPrecedes(ordinary.id.utf8))
        try #require(without.id.utf8.lexicographicallyPrecedes(otherInvalid.id.utf8))
        try #require(otherInvalid.id != invalid.id)
        try w.t.db.query("""
            INSERT INTO iap_grants VALUES
              ('g-links-a', 'u-links', \(ordinary.order), \(product), \(try #require(invalid.tid)), \(try #require(invalid.tid)), 1, '2026-11-20 10:00:10+00', NULL),
              ('g-links-b', 'u-links', \(otherInvalid.order), \(product), '4000000000000077', '4000000000000077', 1, '2026-11-20 10:00:10+00', NULL)
            """)
        let r = try w.run(["--no-verify"])
        #expect(r.status == 0, "\(r.stderr)")
        let clawbacks = Self.csvRows(w.out.appendingPathComponent("2026-11-21/clawback.csv"))
        for grant in ["g-links-a", "g-links-b"] {
            let rows = clawbacks.filter { $0.hasPrefix(grant + ",") }
            #expect(rows.count == 1 && rows[0].contains(",transaction_not_found,"), "\(grant): \(rows)")
        }
    }

    @Test("a family that looks quiet but is not (a second grant, a restore granted, a second transaction) is decided",
          arguments: [true, false])
    func crowdedFamiliesDecided(grantsTransactionIndexed: Bool) throws {
        // Postgres leaves out the families it proves quiet before sorting (DecideStage.crowdedKeysSQL).
        // Each family here was quiet on the first night and gets one more row: left out, its
        // duplicate would be missed, and the row would be judged alone in a family of its own.
        // The crowded keys are counted two ways, with an index on the grants' transaction_id or not.
        let w = try N.world("crowded", users: 200)
        defer { w.stop() }
        if !grantsTransactionIndexed {
            try w.t.db.execute("""
                DO $$ DECLARE i regclass; BEGIN
                  FOR i IN SELECT indexrelid::regclass FROM pg_index
                           WHERE indrelid = 'iap_grants'::regclass AND indkey[0] =
                                 (SELECT attnum FROM pg_attribute WHERE attrelid = 'iap_grants'::regclass AND attname = 'transaction_id')
                  LOOP EXECUTE 'DROP INDEX ' || i; END LOOP;
                END $$
                """)
        }
        #expect(try w.t.int("""
            SELECT count(*) FROM pg_index WHERE indrelid = 'iap_grants'::regclass AND indkey[0] =
                (SELECT attnum FROM pg_attribute WHERE attrelid = 'iap_grants'::regclass AND attname = 'transaction_id')
            """) == (grantsTransactionIndexed ? 1 : 0))
        #expect(try w.run().status == 0)
        let quiet = try w.t.db.query("""
            SELECT t.transaction_id, g.grant_id, g.user_id, g.product_id FROM recon.apple_transactions t
            JOIN iap_grants g ON g.transaction_id = t.transaction_id
            JOIN iap_products p ON p.product_id = t.product_id AND p.product_type = 'non_consumable'
            WHERE t.environment = 'production' AND t.original_transaction_id = t.transaction_id
              AND t.cancellation_date_ms IS NULL AND t.revocation_date_ms IS NULL AND g.revoked_at IS NULL
              AND (SELECT count(*) FROM recon.apple_transactions x WHERE x.original_transaction_id = t.transaction_id) = 1
              AND (SELECT count(*) FROM iap_grants x WHERE t.transaction_id IN (x.transaction_id, x.original_transaction_id)) = 1
            ORDER BY t.transaction_id COLLATE "C" LIMIT 3
            """)
        try #require(quiet.rowCount == 3)
        func family(_ i: Int) -> (tid: String, grant: String, user: String, product: String) {
            (quiet.value(i, 0)!, quiet.value(i, 1)!, quiet.value(i, 2)!, quiet.value(i, 3)!)
        }
        let (same, restore, second) = (family(0), family(1), family(2))
        // 0: its transaction granted a second time.
        // 1: a grant of a transaction Apple never showed, whose original is the family's key.
        // 2: Apple shows a second transaction of the family (a purchase again), granted to the same user.
        try w.t.db.query("""
            INSERT INTO recon.apple_transactions (transaction_id, environment, original_transaction_id, product_id,
                quantity, purchase_date_ms, original_purchase_date_ms, bundle_id, source)
            SELECT '4000000000000092', environment, original_transaction_id, product_id, quantity,
                   purchase_date_ms + 3600000, original_purchase_date_ms, bundle_id, source
            FROM recon.apple_transactions WHERE transaction_id = \(second.tid) AND environment = 'production'
            """)
        try w.t.db.query("""
            INSERT INTO iap_grants VALUES
              ('g-crowd-same', \(same.user), NULL, \(same.product), \(same.tid), \(same.tid), 1, '2026-11-20 10:00:10+00', NULL),
              ('g-crowd-restore', \(restore.user), NULL, \(restore.product), '4000000000000091', \(restore.tid), 1, '2026-11-20 10:00:10+00', NULL),
              ('g-crowd-second', \(second.user), NULL, \(second.product), '4000000000000092', NULL, 1, '2026-11-20 10:00:10+00', NULL)
            """)
        let r = try w.run(["--no-verify"])
        #expect(r.status == 0, "\(r.stderr)")
        let duplicates = Self.csvRows(w.out.appendingPathComponent("2026-11-21/duplicate_grants.csv"))
        for (grant, kind, kept) in [("g-crowd-same", "same_transaction", same.grant),
                                    ("g-crowd-restore", "restore_as_purchase", restore.grant),
                                    ("g-crowd-second", "restore_as_purchase", second.grant)] {
            let rows = duplicates.filter { $0.hasPrefix(grant + ",") }
            #expect(rows.count == 1 && rows[0].contains(",\(kind),\(kept),"), "\(grant): \(rows)")
        }
    }
}
