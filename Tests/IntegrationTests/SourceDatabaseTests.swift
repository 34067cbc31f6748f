import Foundation
import Postgres
import Testing

/// `SOURCE_DATABASE_URL`. The four source relations are read in another
/// database (a hot standby, with a role that can only read), copied into the job's database by
/// the night, and read there directly by lookup; nothing reaches the source but reads; a recovery
/// conflict is read again once, then exit 75.
@Suite("SOURCE_DATABASE_URL: the sources read elsewhere", .serialized, .enabled(if: Harness.hasDatabase))
struct SourceDatabaseTests {
    static let password = "src-pw-Zq81x"
    static let findingAndListFiles = NightTests.findingFiles + ["unresolved.csv", "closed.csv", "consumption_requests.csv"]

    /// A night's world whose sources live in a database of their own: seeded there (as
    /// ServerAPINightTests.world seeds, the Server API on), the job's database a new one on the
    /// Makefile's cluster, `SOURCE_DATABASE_URL` the given string.
    struct World {
        let job: TestDatabase
        let sim: SimulatorProcess
        let dir: URL
        let out: URL
        var env: [String: String]

        func run(_ arguments: [String], environment: [String: String]? = nil) throws -> ProcessResult {
            try runTool("iap-reconcile", arguments, environment: environment ?? env)
        }

        func nightArguments(_ extra: [String] = [], out: URL? = nil) -> [String] {
            ["run", "--as-of", NightTests.asOf, "--out", (out ?? self.out).path, "--no-progress", "--timeout-ms", "3000",
             "--retry-base-ms", "20"] + extra
        }

        func night(_ extra: [String] = []) throws -> ProcessResult { try run(nightArguments(extra)) }

        func stop() {
            sim.stop()
            job.drop()
        }
    }

    static func world(_ label: String, seedEnvironment: [String: String], sourceURL: String, users: Int = 300) throws -> World {
        let job = try TestDatabase(label)
        let dir = try Harness.scratchDirectory("\(label)-src")
        let key = dir.appendingPathComponent("key.p8")
        let made = try runTool("iap-sim", ["keygen", "--out", key.path], environment: seedEnvironment)
        #expect(made.status == 0, "iap-sim keygen: \(made.stderr)")
        let pki = dir.appendingPathComponent("pki"), refunds = dir.appendingPathComponent("refund-list.csv")
        let truth = dir.appendingPathComponent("apple-truth.tsv")
        let seeded = try runTool("iap-sim", ["seed", "--users", String(users), "--seed", "7", "--as-of", NightTests.asOf,
                                             "--bundle", NightTests.bundle, "--refunds", refunds.path, "--expected", dir.path,
                                             "--pki", pki.path, "--storekit2-share", "0.25", "--apple-truth", truth.path],
                                 environment: seedEnvironment)
        #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        typealias A = ServerAPINightTests
        let sim = try SimulatorProcess(["--refunds", refunds.path, "--apple-truth", truth.path, "--pki", pki.path,
                                        "--shared-secret", A.secret, "--api-key", key.path, "--api-key-id", A.keyID,
                                        "--api-issuer", A.issuer, "--api-bundle", NightTests.bundle])
        let out = try Harness.scratchDirectory("\(label)-reports")
        let env = job.environment(sim.urls.merging([
            "IAP_BUNDLE_IDS": NightTests.bundle, "IAP_SHARED_SECRET": A.secret,
            "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
            "IAP_ISSUER_ID": A.issuer, "IAP_KEY_ID": A.keyID, "IAP_PRIVATE_KEY_FILE": key.path,
            "IAP_API_URL_PRODUCTION": "http://127.0.0.1:\(sim.port)/production",
            "IAP_API_URL_SANDBOX": "http://127.0.0.1:\(sim.port)/sandbox",
            "SOURCE_DATABASE_URL": sourceURL,
        ]) { $1 })
        return World(job: job, sim: sim, dir: dir, out: out, env: env)
    }

    @Test("the job's own database dropping a session of the copy: exit 75 naming DATABASE_URL, not read again as a recovery conflict of the source; the next night clean")
    func jobSideDropDuringCopy() throws {
        let source = try TestDatabase("split_drop_src")
        defer { source.drop() }
        let w = try Self.world("split_drop_job", seedEnvironment: source.environment(), sourceURL: "dbname=\(source.name)")
        defer { w.stop() }
        let running = try startTool("iap-reconcile", w.nightArguments(["--inject-fault", "hold-source-snapshot:3000"]),
                                    environment: w.env)
        // While the products' lane holds the snapshot, its session of the job's database is idle
        // after its COMMIT: end it, as a restarted or failed-over job database would.
        var ended = 0
        let deadline = Date().addingTimeInterval(60)
        while ended == 0, Date() < deadline {
            let text = (try? String(contentsOf: running.errURL, encoding: .utf8)) ?? ""
            if text.contains("fault: holding the source snapshot") {
                ended = try w.job.int("""
                    SELECT count(pg_terminate_backend(a.pid)) FROM pg_stat_activity a
                    WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.state = 'idle'
                      AND a.query LIKE 'COMMIT%' AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory')
                    """)
            }
            usleep(50_000)
        }
        let failed = running.wait(timeout: 120)
        #expect(ended >= 1, "no idle session of the copy to end: \(failed.stderr)")
        #expect(failed.status == 75, "\(failed.stderr)")
        #expect(failed.stderr.contains("writing the copy of the source relations into the job's database (DATABASE_URL)"),
                "\(failed.stderr)")
        #expect(!failed.stderr.contains("reading again once") && !failed.stderr.contains("max_standby_streaming_delay"),
                "a failure of the job's database taken for the source's: \(failed.stderr)")
        let clean = try w.night()
        #expect(clean.status == 0, "\(clean.stderr)")
        NightTests.expectReportsMatchTruth(w.out.appendingPathComponent("2026-11-21"), expected: w.dir)
    }

    /// The keys the copy counted at the source (`SourceCopy`) are, row for row, what the decide
    /// stage would count in the copy itself; the relations not in `relations` have no such table
    /// (their keys are counted in the copy). The generated data has duplicated keys and ids two
    /// grants name, so empty tables on both sides would not pass.
    static func expectKeysCountedAtSource(_ job: TestDatabase, relations: [String: String], namedTwice: Bool,
                                          someDuplicated: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) throws {
        // Names of this test's own, spliced as text.
        func count(_ text: String) throws -> Int { try job.int(SQL(unsafeSQL: text)) }
        var duplicated = 0
        for (relation, key) in [("iap_orders", "order_id"), ("iap_receipts", "receipt_id"), ("iap_grants", "grant_id")] {
            let table = "recon_source.dk_\(relation)"
            guard relations[relation] != nil else {
                #expect(try count("SELECT count(*) FROM pg_tables WHERE schemaname = 'recon_source' AND tablename = 'dk_\(relation)'") == 0,
                        "\(table) was counted at the source", sourceLocation: sourceLocation)
                continue
            }
            let recount = "SELECT \(key) AS k, count(*) AS n FROM recon_source.\(relation) WHERE \(key) IS NOT NULL GROUP BY 1 HAVING count(*) > 1"
            duplicated += try count("SELECT count(*) FROM (\(recount)) x")
            #expect(try count("SELECT count(*) FROM ((SELECT k, n FROM \(table) EXCEPT ALL \(recount)) UNION ALL (\(recount) EXCEPT ALL SELECT k, n FROM \(table))) x") == 0,
                    "\(table) is not what the copy's keys count", sourceLocation: sourceLocation)
        }
        #expect(!someDuplicated || duplicated > 0, "no duplicated key in the relations counted at the source", sourceLocation: sourceLocation)
        guard namedTwice else { return }
        let recount = """
            SELECT k FROM (SELECT transaction_id AS k FROM recon_source.iap_grants UNION ALL
                           SELECT original_transaction_id FROM recon_source.iap_grants WHERE original_transaction_id IS DISTINCT FROM transaction_id) x
            WHERE k IS NOT NULL GROUP BY k HAVING count(*) > 1
            """
        #expect(try count("SELECT count(*) FROM (\(recount)) x") > 0, "no id named by two grants", sourceLocation: sourceLocation)
        #expect(try count("SELECT count(*) FROM ((SELECT k FROM recon_source.iap_grants_named_twice EXCEPT ALL \(recount)) UNION ALL (\(recount) EXCEPT ALL SELECT k FROM recon_source.iap_grants_named_twice)) x") == 0,
                "iap_grants_named_twice is not what the copy's grants count", sourceLocation: sourceLocation)
    }

    @Test("a source key whose collation is not deterministic: its keys are counted in the copy, not at the source; the reports are the truth")
    func nondeterministicKey() throws {
        let source = try TestDatabase("split_ci_src")
        defer { source.drop() }
        let w = try Self.world("split_ci_job", seedEnvironment: source.environment(), sourceURL: "dbname=\(source.name)")
        defer { w.stop() }
        // Case-insensitive grant ids at the source: it would group `G1` and `g1` as one key, which
        // the copy (text, bytes compared) keeps apart. So the copy counts them itself.
        try source.db.execute("""
            CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
            ALTER TABLE iap_grants ALTER COLUMN grant_id TYPE text COLLATE ci;
            """)
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        NightTests.expectReportsMatchTruth(w.out.appendingPathComponent("2026-11-21"), expected: w.dir)
        // (This seed's duplicated keys are all grants'.)
        try Self.expectKeysCountedAtSource(w.job, relations: ["iap_orders": "order_id", "iap_receipts": "receipt_id"], namedTwice: true,
                                           someDuplicated: false)
    }

    /// What a database holds that a job could have made: schemas, relations, functions.
    static func footprint(_ db: PGConnection) throws -> [String] {
        try db.query("""
            SELECT 'schema ' || nspname FROM pg_namespace
            UNION ALL SELECT 'relation ' || c.oid::regclass::text FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')
            UNION ALL SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p
              JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
            ORDER BY 1
            """).rows.compactMap { $0[0] }
    }

    /// Every report a night writes (the CSV files) of `day`, by name; of unresolved.csv, whose
    /// times are the clock's when the receipts were sent, the first two columns (receipt and user).
    static func reports(_ day: URL) -> [String: String] {
        Dictionary(uniqueKeysWithValues: findingAndListFiles.map { file in
            let text = NightTests.read(day.appendingPathComponent(file))
            guard file == "unresolved.csv" else { return (file, text) }
            return (file, text.components(separatedBy: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false)
                .prefix(2).joined(separator: ",") }.joined(separator: "\r\n"))
        })
    }

    /// No output of a run, and no report, holds the source's password.
    static func expectNoPassword(_ r: ProcessResult, out: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!r.stderr.contains(password) && !r.stdout.contains(password), "the password was printed",
                sourceLocation: sourceLocation)
        let files = FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String } ?? []
        for file in files {
            let text = (try? String(contentsOfFile: out.appendingPathComponent(file).path, encoding: .utf8)) ?? ""
            #expect(!text.contains(password), "\(file) holds the password", sourceLocation: sourceLocation)
        }
    }

    @Test("another database as the source: the reports equal a single-database night's, lookup reads the source there, the source gets nothing")
    func anotherDatabase() throws {
        let source = try TestDatabase("split_src")
        defer { source.drop() }
        let w = try Self.world("split_job", seedEnvironment: source.environment(),
                               sourceURL: "dbname=\(source.name) password=\(Self.password)")
        defer { w.stop() }
        let before = try Self.footprint(source.db)

        let split = try w.night()
        #expect(split.status == 0, "\(split.stderr)")
        Self.expectNoPassword(split, out: w.out)
        let day = w.out.appendingPathComponent("2026-11-21")
        NightTests.expectReportsMatchTruth(day, expected: w.dir)
        #expect(try w.job.int("SELECT count(*) FROM pg_namespace WHERE nspname = 'recon_source'") == 1)
        #expect(try w.job.int("SELECT count(*) FROM recon_source.iap_grants") == source.int("SELECT count(*) FROM iap_grants"))
        #expect(try Self.footprint(source.db) == before, "the night left something in the source database")
        try Self.expectKeysCountedAtSource(w.job, relations: ["iap_orders": "order_id", "iap_receipts": "receipt_id",
                                                              "iap_grants": "grant_id"], namedTwice: true)

        // lookup reads the source relations on SOURCE_DATABASE_URL (the job's database has only
        // the night's copy, which lookup does not read): the same verdict, user and order as the night.
        try w.job.db.execute("ALTER SCHEMA recon_source RENAME TO recon_source_aside")
        let compensate = LookupAgreesTests.report(day, "compensate.csv").filter { $0["environment"] == "production" }
        #expect(compensate.contains { $0["match"] == "inferred" }, "no inferred match to agree on")
        for row in compensate {
            let tid = row["transaction_id"]!
            let r = try w.run(["lookup", "--transaction", tid, "--json", "--as-of", NightTests.asOf])
            #expect(r.status == 0, "lookup \(tid): \(r.stderr)")
            let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            let item = try #require((parsed?["transactions"] as? [[String: Any]])?.first { $0["transaction_id"] as? String == tid })
            #expect(item["verdict"] as? String == "compensate", "\(tid): \(item["text"] ?? "")")
            #expect(item["user_id"] as? String == row["user_id"] && (item["order_id"] as? String ?? "") == row["order_id"],
                    "\(tid): \(item)")
        }
        try w.job.db.execute("ALTER SCHEMA recon_source_aside RENAME TO recon_source")
        #expect(try Self.footprint(source.db) == before, "lookup left something in the source database")

        // The same night on one database (the source's own, as before SOURCE_DATABASE_URL): the same reports.
        var single = w.env
        single["PGDATABASE"] = source.name
        single.removeValue(forKey: "SOURCE_DATABASE_URL")
        let singleOut = try Harness.scratchDirectory("split-single")
        let one = try w.run(w.nightArguments(out: singleOut), environment: single)
        #expect(one.status == 0, "\(one.stderr)")
        let mine = Self.reports(day), theirs = Self.reports(singleOut.appendingPathComponent("2026-11-21"))
        for file in Self.findingAndListFiles {
            #expect(mine[file] == theirs[file], "\(file) differs from the single-database night's\n\(NightTests.diff(mine[file]!, theirs[file]!))")
        }

        // A malformed SOURCE_DATABASE_URL: exit 78, the password redacted.
        var bad = w.env
        bad["SOURCE_DATABASE_URL"] = "postgresql://reader:\(Self.password)@host:99999/shop"
        let malformed = try w.run(w.nightArguments(), environment: bad)
        #expect(malformed.status == 78 && malformed.stderr.contains("SOURCE_DATABASE_URL is malformed"), "\(malformed.stderr)")
        #expect(!malformed.stderr.contains(Self.password))
    }

    /// Waits in the background for the night's fault marker (its copy holding the snapshot on the
    /// standby) and answers each by changing a table on the primary and vacuuming it: the standby
    /// must then cancel the night's snapshot (max_standby_streaming_delay 100 ms).
    /// Its fields are written by its thread, and read by the test once the night has ended.
    final class Provoker: @unchecked Sendable {
        var conflicts = 0
        var error: String?
        var stopped = false

        func start(_ tool: RunningTool, primary: ScratchCluster, times: Int) {
            let stderr = tool.errURL
            let thread = Thread { [self] in
                let deadline = Date().addingTimeInterval(120)
                while conflicts < times, !stopped, Date() < deadline {
                    let text = (try? String(contentsOf: stderr, encoding: .utf8)) ?? ""
                    let seen = text.components(separatedBy: "fault: holding the source snapshot").count - 1
                    if seen > conflicts {
                        do {
                            try primary.execute("shop", "UPDATE public.bait SET v = v + 1")
                            try primary.execute("shop", "VACUUM public.bait")
                        } catch { self.error = "\(error)" }
                        conflicts += 1
                    }
                    usleep(50_000)
                }
            }
            thread.start()
        }
    }

    @Test("a hot standby as the source, with a role that can only read: the truth; a recovery conflict is read again once; two are exit 75, and the next night is clean",
          .enabled(if: ScratchCluster.available, "PostgreSQL's server programs (initdb, pg_basebackup) are not installed"))
    func hotStandby() throws {
        let primary = try ScratchCluster.primary()
        defer { primary.stop() }
        try primary.execute("postgres", "CREATE DATABASE shop")
        var w: World?
        defer { w?.stop() }
        let standbyPlaceholder = "STANDBY"
        w = try Self.world("standby_job", seedEnvironment: primary.environment("shop"), sourceURL: standbyPlaceholder)
        try primary.execute("shop", """
            CREATE TABLE public.bait (id int PRIMARY KEY, v int);
            INSERT INTO public.bait SELECT g, 0 FROM generate_series(1, 1000) g;
            CREATE ROLE iap_reader LOGIN PASSWORD \(literal: .string(Self.password));
            GRANT SELECT ON public.iap_products, public.iap_orders, public.iap_receipts, public.iap_grants TO iap_reader;
            CHECKPOINT
            """)
        let standby = try ScratchCluster.standby(of: primary, ["max_standby_streaming_delay": "100ms",
                                                               "max_standby_archive_delay": "100ms", "hot_standby_feedback": "off"])
        defer { standby.stop() }
        w!.env["SOURCE_DATABASE_URL"] = standby.conninfo("shop", user: "iap_reader") + " password=\(Self.password)"
        let world = w!
        let day = world.out.appendingPathComponent("2026-11-21")

        // The role can only read, and a standby refuses writes anyway.
        let reader = try PGConnection(conninfo: standby.conninfo("shop", user: "iap_reader"))
        #expect(throws: PGError.self) { try reader.execute("CREATE TEMPORARY TABLE t (x int)") }
        reader.close()

        // Two recovery conflicts: the copy is read again once, then exit 75 with what to change.
        let failing = try startTool("iap-reconcile", world.nightArguments(["--inject-fault", "hold-source-snapshot:3000,3000"]),
                                    environment: world.env)
        let provoker = Provoker()
        provoker.start(failing, primary: primary, times: 2)
        let failed = failing.wait(timeout: 180)
        provoker.stopped = true
        #expect(provoker.error == nil, "\(provoker.error ?? "")")
        #expect(failed.status == 75, "\(failed.stderr)")
        #expect(failed.stderr.contains("max_standby_streaming_delay") && failed.stderr.contains("hot_standby_feedback"),
                "\(failed.stderr)")
        #expect(failed.stderr.contains("reading again once"), "the first conflict was not read again: \(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: day.path), "a failed night left reports")
        Self.expectNoPassword(failed, out: world.out)

        // The next night: clean, the truth.
        let clean = try world.night()
        #expect(clean.status == 0, "\(clean.stderr)")
        NightTests.expectReportsMatchTruth(day, expected: world.dir)
        Self.expectNoPassword(clean, out: world.out)
        let first = Self.reports(day)

        // One conflict: read again, and the same reports (a rerun of the same night).
        let retried = try startTool("iap-reconcile", world.nightArguments(["--inject-fault", "hold-source-snapshot:3000"]),
                                    environment: world.env)
        let once = Provoker()
        once.start(retried, primary: primary, times: 1)
        let again = retried.wait(timeout: 180)
        once.stopped = true
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stderr.contains("reading again once"), "no recovery conflict was provoked: \(again.stderr)")
        #expect(Self.reports(day) == first, "the night read again after a conflict differs")
    }

    @Test("a writable primary as the source with log_statement=all: every statement of the job there is a read",
          .enabled(if: ScratchCluster.available, "PostgreSQL's server programs (initdb) are not installed"))
    func onlyReads() throws {
        let primary = try ScratchCluster.primary(["log_statement": "'all'", "log_line_prefix": "'%m [%p] %q%u@%d '",
                                                  "log_min_duration_statement": "-1"])
        defer { primary.stop() }
        try primary.execute("postgres", "CREATE DATABASE shop")
        let w = try Self.world("reads_job", seedEnvironment: primary.environment("shop"),
                               sourceURL: primary.conninfo("shop", user: "iap_job") + " password=\(Self.password)")
        defer { w.stop() }
        // A role that could write: the job's own restraint is what the log shows.
        try primary.execute("shop", """
            CREATE ROLE iap_job LOGIN PASSWORD \(literal: .string(Self.password));
            GRANT ALL ON ALL TABLES IN SCHEMA public TO iap_job; GRANT CREATE ON SCHEMA public TO iap_job;
            GRANT CREATE, TEMPORARY ON DATABASE shop TO iap_job
            """)
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        NightTests.expectReportsMatchTruth(w.out.appendingPathComponent("2026-11-21"), expected: w.dir)
        // lookup of the night's compensations, and respond (it reads the shop's tables too).
        let compensate = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-21"), "compensate.csv")
        for row in compensate.prefix(5) {
            let r = try w.run(["lookup", "--transaction", row["transaction_id"]!, "--json", "--as-of", NightTests.asOf])
            #expect(r.status == 0, "\(r.stderr)")
        }
        let respond = try w.run(["respond", "--now", NightTests.asOf])
        #expect(respond.status == 0, "\(respond.stderr)")

        // Each statement the job's role sent (a simple query's several split at their semicolons:
        // none of the job's reads has one inside a string), with its continuation lines.
        let log = primary.serverLog()
        var statements: [String] = []
        var current: String?
        for line in log.components(separatedBy: "\n") {
            if line.hasPrefix("\t"), current != nil { current! += " " + line.trimmingCharacters(in: .whitespaces); continue }
            if let c = current { statements += c.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
            current = nil
            guard line.contains(" iap_job@shop "),
                  let r = line.range(of: #"LOG:  (statement|execute [^:]*): "#, options: .regularExpression) else { continue }
            current = String(line[r.upperBound...])
        }
        #expect(statements.count > 20, "the log has few statements of the job: \(statements.count)")
        let reads = ["SELECT", "COPY (SELECT", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "SET ", "RESET ", "ROLLBACK", "SHOW "]
        let others = statements.filter { s in !reads.contains { s.uppercased().hasPrefix($0) } }
        #expect(others.isEmpty, "statements on the source that are not reads: \(others.prefix(10))")
        #expect(statements.contains { $0.hasPrefix("COPY (SELECT") }, "the copy is not in the log")
    }
}
