import AppStoreSimulator
import Foundation
import Postgres
@testable import JobStore
import Reconciliation
import Testing

/// The upgrade and rollback of docs/own-database.md, run as the page writes them: a job schema at
/// the previous migration, with a night's state and refund requests answered by the build of the
/// time, is backed up, migrated while `respond` runs every few seconds, and rolled back.
@Suite("Upgrades: backup, migrate while respond answers, rollback, as docs/own-database.md writes them", .serialized,
       .enabled(if: Harness.hasDatabase && ScratchCluster.available, "needs the test Postgres and PostgreSQL's client programs"))
struct UpgradeTests {
    typealias N = NightTests
    static let guide = OwnDatabaseGuideTests.guide

    /// The guide's shell blocks by name (`<!-- run: NAME -->` above the fence), indentation removed.
    static func blocks() throws -> [String: String] {
        let lines = try String(contentsOf: guide, encoding: .utf8).components(separatedBy: "\n")
        var result: [String: String] = [:]
        for (i, line) in lines.enumerated() {
            let tag = line.trimmingCharacters(in: .whitespaces)
            guard tag.hasPrefix("<!-- run:"), tag.hasSuffix("-->"), i + 1 < lines.count,
                  lines[i + 1].trimmingCharacters(in: .whitespaces) == "```sh" else { continue }
            let name = tag.dropFirst("<!-- run:".count).dropLast(3).trimmingCharacters(in: .whitespaces)
            let indent = lines[i + 1].prefix { $0 == " " }.count
            var body: [String] = []
            var j = i + 2
            while j < lines.count, lines[j].trimmingCharacters(in: .whitespaces) != "```" {
                body.append(String(lines[j].dropFirst(min(indent, lines[j].prefix { $0 == " " }.count))))
                j += 1
            }
            result[name] = body.joined(separator: "\n")
        }
        return result
    }

    /// One of the guide's blocks, with bash, in `dir`, in the job's environment: DATABASE_URL, the
    /// built `iap-reconcile` and PostgreSQL's client programs on PATH.
    static func runBlock(_ name: String, in dir: URL, environment: [String: String]) throws -> ProcessResult {
        let text = try #require(try blocks()[name], "docs/own-database.md has no `<!-- run: \(name) -->` block")
        var env = environment
        env["PATH"] = [Harness.binDir.path, ScratchCluster.bindir ?? "", env["PATH"] ?? "/usr/bin:/bin"]
            .joined(separator: ":")
        return try startProcess(URL(fileURLWithPath: "/bin/bash"), ["-e", "-o", "pipefail", "-c", text], environment: env,
                                directory: dir).wait(timeout: 300)
    }

    /// What a build of the job requires of a job schema, with the schema's name taken out: its
    /// tables' columns in order, constraints, indexes, views, functions and storage options.
    static func catalog(_ db: PGConnection, _ schema: String) throws -> [String] {
        let r = try db.query("""
            WITH s AS (SELECT \(schema)::text AS name, '"' || \(schema) || '".' AS quoted, \(schema) || '.' AS plain),
            lines AS (
                SELECT 'column ' || c.table_name || '.' || c.column_name || ' ' || c.data_type || ' ' || c.is_nullable
                       || ' ' || coalesce(c.column_default, '') || ' #'
                       || row_number() OVER (PARTITION BY c.table_name ORDER BY c.ordinal_position) AS line
                FROM information_schema.columns c, s WHERE c.table_schema = s.name
                UNION ALL
                SELECT 'constraint ' || t.relname || ' ' || k.conname || ' ' || pg_get_constraintdef(k.oid)
                FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace, s
                WHERE n.nspname = s.name
                UNION ALL
                SELECT 'index ' || i.indexdef FROM pg_indexes i, s WHERE i.schemaname = s.name
                UNION ALL
                SELECT 'view ' || v.viewname || ' ' || v.definition FROM pg_views v, s WHERE v.schemaname = s.name
                UNION ALL
                SELECT 'function ' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || md5(replace(replace(p.prosrc, s.quoted, 'S.'), s.plain, 'S.'))
                FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace, s WHERE n.nspname = s.name
                UNION ALL
                SELECT 'options ' || t.relname || ' ' || array_to_string(t.reloptions, ',')
                FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace, s
                WHERE n.nspname = s.name AND t.reloptions IS NOT NULL
            )
            SELECT replace(replace(line, s.quoted, 'S.'), s.plain, 'S.') FROM lines, s ORDER BY 1
            """)
        return r.rows.map { $0[0] ?? "" }
    }

    /// The last migration of the previous release (0.6.0); this build adds 19 to 21.
    static let previous = 18

    /// The job schema as the previous release left it: migrations 19 to 22 undone (they only add
    /// tables: Google Play's purchases, voided purchases, orders and notifications).
    static func undoThisRelease(_ db: PGConnection) throws {
        try db.execute("""
            DROP TABLE recon.play_orders, recon.play_voided, recon.play_voided_positions, recon.play_purchase_lines,
                recon.play_purchases, recon.play_attempts, recon.play_messages, recon.play_refund_reviews;
            DELETE FROM recon.schema_migrations WHERE version > 18
            """)
    }

    /// The job schema as the build of migration 17 left it: migration 18 undone (it only added).
    static func undoMigration18(_ db: PGConnection) throws {
        try db.execute("""
            DROP TABLE recon.held_findings, recon.key_digests, recon.held_key_digests;
            ALTER TABLE recon.runs DROP COLUMN held, DROP COLUMN released_at, DROP COLUMN released_by, DROP COLUMN release_note;
            DELETE FROM recon.schema_migrations WHERE version = 18
            """)
    }

    static func answersPerTransaction(_ log: URL) -> [String: Int] {
        RespondTests.consumptionLog(log).reduce(into: [:]) { $0[$1["transactionId"] as? String ?? "", default: 0] += 1 }
    }

    @Test("the guide's three blocks are there, and each names the job schema the tests use")
    func blocksAreThere() throws {
        let blocks = try Self.blocks()
        #expect(Set(blocks.keys) == ["backup", "upgrade", "rollback"], "\(blocks.keys.sorted())")
        #expect(blocks["backup"]?.contains("pg_dump --schema=recon") == true)
        #expect(blocks["upgrade"]?.contains("iap-reconcile migrate") == true)
        #expect(blocks["rollback"]?.contains("--single-transaction") == true)
    }

    @Test("a schema at the previous migration, migrated while respond runs every two seconds: no answer sent twice, no request missed, at most one failed respond; rolled back: the previous migration's schema, nothing answered again")
    func upgradeWhileResponding() throws {
        try #require(Migrations.latest == 22, "undoThisRelease builds the previous release's schema: write the undo of each new migration")
        let dir = try Harness.scratchDirectory("upgrade-guide")
        let log = dir.appendingPathComponent("consumption.jsonl")
        let w = try ServerAPINightTests.world("upgrade_guide", share: "0.25", simArguments: ["--consumption-log", log.path])
        defer { w.stop() }
        var env = w.env
        env["DATABASE_URL"] = "dbname=\(w.t.name)"
        func respond(_ now: String) throws -> RunningTool {
            try startTool("iap-reconcile", ["respond", "--now", now, "--send", "--no-progress", "--share-percent", "100"],
                          environment: env)
        }
        let asOf = try #require(UTC.parse(N.asOf))
        func at(hoursBefore h: Int) -> String { UTC.timestamp(asOf - Int64(h) * 3_600_000) }

        // The build of the time: a night, and the refund requests of four hours ago answered.
        #expect(try w.night().status == 0)
        let early = try respond(at(hoursBefore: 4)).wait(timeout: 120)
        #expect(early.status == 0, "\(early.stderr)")
        let answeredBefore = Self.answersPerTransaction(log)
        #expect(!answeredBefore.isEmpty, "nothing was answered before the upgrade: the test would prove little")
        try Self.undoThisRelease(w.t.db)
        // That schema is the one migrations 1 to 18 make, as their frozen texts say.
        try w.t.db.execute("CREATE SCHEMA frozen18")
        for m in Migrations.all.prefix(Self.previous) { try w.t.db.execute(m.sql.replacingSchema(try JobSchema("frozen18"))) }
        let previous = try Self.catalog(w.t.db, "frozen18")
        #expect(previous.count > 100, "\(previous.count) catalog lines")
        let frozenMigrations = try Self.catalog(w.t.db, "recon").filter { !$0.hasPrefix("column schema_migrations.")
            && !$0.contains("schema_migrations_pkey") }
        #expect(frozenMigrations == previous, "the schema is not migration 18's: \(Set(frozenMigrations).symmetricDifference(previous).sorted())")
        #expect(try w.t.int("SELECT count(*) FROM recon.schema_migrations") == Self.previous)
        let runsBefore = try w.t.int("SELECT count(*) FROM recon.runs")

        // The guide's backup; the new build installed; respond every two seconds, migrate at once
        // while the first runs. Refund requests keep arriving (respond's clock moves an hour a run).
        let backup = try Self.runBlock("backup", in: dir, environment: env)
        #expect(backup.status == 0, "\(backup.stderr)")
        var statuses: [(Int32, String)] = []
        var upgrade: ProcessResult?
        for (i, hours) in [3, 2, 1, 0, 0].enumerated() {
            let r = try respond(at(hoursBefore: hours))
            if i == 0 {
                usleep(50_000)
                upgrade = try Self.runBlock("upgrade", in: dir, environment: env)
            }
            let done = r.wait(timeout: 120)
            statuses.append((done.status, done.stderr))
            usleep(2_000_000)
        }
        #expect(upgrade?.status == 0, "\(upgrade?.stderr ?? "")")
        #expect(upgrade?.stdout.contains("21") == true, "migrate --status: \(upgrade?.stdout ?? "")")
        let failed = statuses.filter { $0.0 != 0 }
        #expect(failed.count <= 1 && failed.allSatisfy { $0.0 == 78 && $0.1.contains("migrate") }, "\(failed)")
        #expect(statuses.last?.0 == 0)

        // No answer sent twice, no request missed.
        let answers = Self.answersPerTransaction(log)
        #expect(answers.values.allSatisfy { $0 == 1 }, "answered twice: \(answers.filter { $0.value > 1 })")
        #expect(answers.count > answeredBefore.count, "nothing was answered after the upgrade")
        let truth = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        let requested = truth.filter { $0.consumptionRequest.map { $0.signedDateMs <= asOf } ?? false && $0.bundleID == N.bundle }
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests") == requested.count)
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state IN ('new', 'would_send', 'sending')") == 0)
        let sent = try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state = 'sent'")
        let sentOnce = try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE sends = 1")
        #expect(sent == answers.count && sent == sentOnce, "\(sent) sent, \(sentOnce) sent once, \(answers.count) answered")

        // The rollback, as written: the previous migration's schema and history, the answers kept.
        let rollback = try Self.runBlock("rollback", in: dir, environment: env)
        #expect(rollback.status == 0, "\(rollback.stderr)")
        let restored = try Self.catalog(w.t.db, "recon").filter { !$0.hasPrefix("column schema_migrations.")
            && !$0.contains("schema_migrations_pkey") }
        #expect(restored == previous, "\(Set(restored).symmetricDifference(previous).sorted())")
        let checksums = try w.t.db.query("SELECT version, checksum FROM recon.schema_migrations ORDER BY version").rows
        #expect(checksums.map { $0[0] ?? "" } == (1...Self.previous).map(String.init))
        #expect(checksums.map { $0[1] ?? "" } == Migrations.all.prefix(Self.previous).map(\.checksum), "the restored checksums are not this build's texts")
        #expect(try w.t.int("SELECT count(*) FROM recon.runs") == runsBefore)
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state = 'sent' AND sends = 1") == sent)
        // This build, on the restored schema, asks for migrate and answers nothing.
        let behind = try respond(N.asOf).wait(timeout: 120)
        #expect(behind.status == 78 && behind.stderr.contains("at migration 18 of 22"), "\(behind.stderr)")
        // Forward again: nothing the previous answers covered is answered again.
        #expect(try Self.runBlock("upgrade", in: dir, environment: env).status == 0)
        let again = try respond(N.asOf).wait(timeout: 120)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(Self.answersPerTransaction(log) == answers, "an answer was sent again after the rollback")
    }
}

extension UpgradeTests {
    @Test("a migration that needs a table another session reads waits 5 s, steps back with a warning, and applies once the table is free")
    func migrationStepsBack() throws {
        let t = try TestDatabase("upgrade_lock")
        defer { t.drop() }
        let first = try runTool("iap-reconcile", ["migrate"], environment: t.environment())
        #expect(first.status == 0, "\(first.stderr)")
        try Self.undoThisRelease(t.db)
        try Self.undoMigration18(t.db)
        // A reader (respond, lookup) in a long transaction on recon.runs, which migration 18 alters.
        let reader = try PGConnection(conninfo: "dbname=\(t.name)")
        defer { reader.close() }
        try reader.execute("BEGIN")
        _ = try reader.query("SELECT count(*) FROM recon.runs")
        let migrate = try startTool("iap-reconcile", ["migrate"], environment: t.environment())
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, migrate.process.isRunning, !migrate.errors().contains("waited 5 s") { usleep(100_000) }
        #expect(migrate.process.isRunning, "migrate did not wait: \(migrate.errors())")
        #expect(migrate.errors().contains("migration 18 waited 5 s"), "\(migrate.errors())")
        // Another reader queues behind a waiting migration for at most one wait (5 s), never for good.
        let other = try PGConnection(conninfo: "dbname=\(t.name)")
        defer { other.close() }
        _ = try other.query("SELECT set_config('statement_timeout', '8000', false)")
        #expect(throws: Never.self) { _ = try other.query("SELECT count(*) FROM recon.runs") }
        try reader.execute("COMMIT")
        let done = migrate.wait(timeout: 60)
        #expect(done.status == 0, "\(done.stderr)")
        #expect(try t.int("SELECT max(version) FROM recon.schema_migrations") == Migrations.latest)
    }
}

extension UpgradeTests {
    /// The previous release's binaries (`make test-rollback` builds them apart and sets this).
    static let previousBinDir = ProcessInfo.processInfo.environment["IAP_PREVIOUS_BIN_DIR"].flatMap { $0.isEmpty ? nil : $0 }

    static func runPrevious(_ arguments: [String], environment: [String: String]) throws -> ProcessResult {
        try startProcess(URL(fileURLWithPath: previousBinDir! + "/iap-reconcile"), arguments, environment: environment)
            .wait(timeout: 300)
    }

    @Test("rolled back for real: the previous release's binary on the restored schema finds its own migrations, runs its night and respond, and answers nothing twice",
          .enabled(if: previousBinDir != nil, "make test-rollback builds the previous release and runs this"))
    func previousReleaseOnTheRestoredSchema() throws {
        try #require(Migrations.latest == 22, "undoThisRelease builds the previous release's schema")
        let dir = try Harness.scratchDirectory("rollback-previous")
        let log = dir.appendingPathComponent("consumption.jsonl")
        let w = try ServerAPINightTests.world("rollback_previous", share: "0.25", simArguments: ["--consumption-log", log.path])
        defer { w.stop() }
        var env = w.env
        env["DATABASE_URL"] = "dbname=\(w.t.name)"
        env["PATH"] = [ScratchCluster.bindir ?? "", env["PATH"] ?? "/usr/bin:/bin"].joined(separator: ":")
        let asOf = try #require(UTC.parse(N.asOf))
        func respond(_ hoursBefore: Int) throws -> ProcessResult {
            try runTool("iap-reconcile", ["respond", "--now", UTC.timestamp(asOf - Int64(hoursBefore) * 3_600_000), "--send",
                                          "--no-progress", "--share-percent", "100"], environment: env)
        }
        // The previous release's schema with a night and answers in it; backed up; upgraded; answering.
        #expect(try w.night().status == 0)
        #expect(try respond(6).status == 0)
        try Self.undoThisRelease(w.t.db)
        let status = try Self.runPrevious(["migrate", "--status"], environment: env)
        #expect(status.status == 0 && status.stdout.contains("0 pending"), "the previous release does not take the schema as its own: \(status.stdout)\(status.stderr)")
        #expect(try Self.runBlock("backup", in: dir, environment: env).status == 0)
        #expect(try Self.runBlock("upgrade", in: dir, environment: env).status == 0)
        #expect(try respond(2).status == 0)
        let answered = Self.answersPerTransaction(log)
        #expect(!answered.isEmpty)
        // Rolled back as the guide writes it, then the previous release takes over.
        #expect(try Self.runBlock("rollback", in: dir, environment: env).status == 0)
        let again = try Self.runPrevious(["migrate", "--status"], environment: env)
        #expect(again.status == 0 && again.stdout.contains("0 pending") && !again.stdout.contains("DIFFERENT"), "\(again.stdout)")
        let out = try Harness.scratchDirectory("rollback-previous-reports")
        let night = try Self.runPrevious(["run", "--as-of", N.asOf, "--out", out.path, "--no-progress", "--timeout-ms", "3000",
                                          "--retry-base-ms", "20"], environment: env)
        #expect(night.status == 0, "the previous release's night on the restored schema: \(night.stderr)")
        let previousRespond = try Self.runPrevious(["respond", "--now", N.asOf, "--send", "--no-progress", "--share-percent", "100"],
                                                   environment: env)
        #expect(previousRespond.status == 0, "\(previousRespond.stderr)")
        let after = Self.answersPerTransaction(log)
        #expect(after.values.allSatisfy { $0 == 1 }, "answered twice after the rollback: \(after.filter { $0.value > 1 })")
        #expect(Set(answered.keys).isSubset(of: Set(after.keys)))
    }
}
