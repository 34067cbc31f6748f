import Foundation
import Postgres
@testable import JobStore
import Synchronization
import Testing
import Reconciliation

/// Frozen migrations, their checksums, and upgrades from every earlier
/// schema (and from a database made by the last build before checksums) to this build.
@Suite("Migrations: frozen texts, checksums, upgrades", .serialized)
struct MigrationTests {
    typealias N = NightTests

    // MARK: the texts

    @Test("each frozen text is the last text its version had in the repository's history, function bodies too")
    func frozenTextsAreTheLastShipped() throws {
        #expect(Migrations.all.map(\.version) == Array(1...Migrations.latest))
        for m in Migrations.all {
            let last = try #require(Migrations.history[m.version]?.last, "version \(m.version) has no history")
            #expect(last.checksum == m.checksum, "version \(m.version): its frozen text changed (a change is a new migration)")
            let bodies = Migrations.functions(in: m.sql).map { "\($0.name) \(Migrations.sha256($0.body))" }
            #expect(bodies == last.functions.map { "\($0.name) \($0.sha256)" }, "version \(m.version)")
        }
        // Every shipped text is a text of its own (the history lists each one once).
        for (version, texts) in Migrations.history {
            #expect(Set(texts.map(\.checksum)).count == texts.count, "version \(version)")
        }
    }

    @Test("money_in_units prints every currency of Swift's ISO 4217 table with its minor units, rounded as Money.text")
    func moneyInUnitsMatchesSwift() throws {
        let t = try TestDatabase("mig_money")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        let codes = Array(Currencies.zeroDecimals) + Array(Currencies.threeDecimals) + ["USD", "EUR", "CNY", "ZZZ", ""]
        for code in codes {
            for milli in [0, 1_234_567, -2_500, 53_333, 499, 500, -5] as [Int64] {
                let sql = try t.scalar("SELECT recon.money_in_units(\(milli)::numeric, \(code))")
                #expect(sql == Money.text(milli, currency: code), "\(milli) \(code)")
            }
        }
        // A prorated amount, exact in SQL: 160 yen × 33.333% is 53, 9.99 dollars × 25% is 2.50.
        #expect(try t.scalar("SELECT recon.money_in_units(160000::numeric * 33333 / 100000, 'JPY')") == "53")
        #expect(try t.scalar("SELECT recon.money_in_units(9990::numeric * 25000 / 100000, 'USD')") == "2.50")
    }

    @Test("no migration file splices a Swift value into its text")
    func noInterpolation() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/JobStore/Migrations").standardized
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.first?.isNumber == true }
        #expect(files.count == Migrations.all.count)
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("\\#(") && !text.contains("\\("), "\(file) interpolates")
        }
    }

    @Test("the backfill rule: the latest text whose functions the database holds, or that a later migration replaced")
    func backfillRule() throws {
        let texts = try #require(Migrations.history[1])
        let oldest = texts[0], latest = texts[texts.count - 1]
        let body = { (t: ShippedText) in Set(t.functions.map(\.sha256)) }
        // Version 1 alone: its record_answers is the evidence.
        #expect(SchemaCheck.backfill(1, texts: texts, recorded: [1], bodies: body(oldest))?.checksum == oldest.checksum)
        #expect(SchemaCheck.backfill(1, texts: texts, recorded: [1], bodies: body(latest))?.checksum == latest.checksum)
        #expect(SchemaCheck.backfill(1, texts: texts, recorded: [1], bodies: []) == nil)
        // Migration 3 replaced record_answers: nothing tells version 1's texts apart, the latest is recorded.
        #expect(SchemaCheck.backfill(1, texts: texts, recorded: [1, 2, 3], bodies: [])?.checksum == latest.checksum)
        // Migration 11 renames record_answers, it does not replace it: version 6's body is still checked.
        let six = try #require(Migrations.history[6])
        #expect(SchemaCheck.backfill(6, texts: six, recorded: Set(1...11), bodies: body(six[0]))?.checksum == six[0].checksum)
        #expect(SchemaCheck.backfill(6, texts: six, recorded: Set(1...11), bodies: body(six[0]).subtracting([six[0].functions[1].sha256])) == nil)
    }

    // MARK: the database

    static let reportFiles = ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv",
                              "closed.csv", "unresolved.csv", "input_errors.csv"]
    static let users = 120

    /// Migrations 1…k as a build of before checksums applied them: its bootstrap table, without
    /// the column, and each frozen text.
    static func migrateAsBefore(_ t: TestDatabase, upTo k: Int) throws {
        try t.db.execute("""
            CREATE SCHEMA recon;
            CREATE TABLE recon.schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """)
        for m in Migrations.all.prefix(k) {
            try t.db.transaction {
                try t.db.execute(m.sql.replacingSchema(try JobSchema("recon")))
                try t.db.query("INSERT INTO recon.schema_migrations (version, name) VALUES (\(m.version), \(m.name))")
            }
        }
    }

    /// The fixture: `pg_dump --schema=recon` of a database that the last build before checksums migrated and ran a night on
    /// (Fixtures/README.md), restored on a session of its own (the dump empties the search path).
    static func restoreFixture(_ t: TestDatabase) throws {
        let url = try #require(Bundle.module.url(forResource: "recon-at-8f8d6a6", withExtension: "sql", subdirectory: "Fixtures"))
        let db = try PGConnection(conninfo: "dbname=\(t.name)")
        defer { db.close() }
        // A checked-in dump, run as the fixed text it is.
        try db.execute(SQL(unsafeSQL: try String(contentsOf: url, encoding: .utf8)))
    }

    /// A night on the generated data over the database `prepare` left; its reports, by file.
    static func night(_ label: String, _ arguments: [String] = [], prepare: (TestDatabase) throws -> Void = { _ in })
        throws -> (reports: [String: String], stderr: String, checksums: [String], tables: [String]) {
        let w = try N.world(label, users: users, prepare: prepare)
        defer { w.stop() }
        let r = try w.run(arguments)
        #expect(r.status == 0, "\(label): \(r.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        var reports = Dictionary(uniqueKeysWithValues: reportFiles.map { ($0, N.read(day.appendingPathComponent($0))) })
        // unresolved.csv ends with the wall-clock time of the receipt's last request.
        reports["unresolved.csv"] = reports["unresolved.csv"]?.replacing(/,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\r\n/, with: ",(time)\r\n")
        let checksums = try w.t.db.query("SELECT coalesce(checksum, 'none') FROM recon.schema_migrations ORDER BY version")
            .rows.map { $0[0] ?? "" }
        return (reports, r.stderr, checksums, try tables(w.t.db))
    }

    static func tables(_ db: PGConnection) throws -> [String] {
        try db.query("SELECT tablename FROM pg_tables WHERE schemaname = 'recon' ORDER BY 1").rows.map { $0[0] ?? "" }
    }

    static let freshNight = Mutex<[String: String]?>(nil)

    /// The reports of a night on a database this build created, once for the suite.
    static func freshReports() throws -> [String: String] {
        if let done = freshNight.withLock({ $0 }) { return done }
        let fresh = try night("mig_fresh")
        #expect(fresh.reports.values.allSatisfy { $0 != "<missing>" }, "the fresh night wrote no reports: \(fresh.stderr)")
        #expect(fresh.reports["compensate.csv"]?.contains("paid_not_granted") == true)
        freshNight.withLock { $0 = fresh.reports }
        return fresh.reports
    }

    static func expectUpgraded(_ label: String, _ upgraded: (reports: [String: String], stderr: String, checksums: [String], tables: [String]),
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fresh = try freshReports()
        for file in reportFiles {
            #expect(upgraded.reports[file] == fresh[file],
                    "\(label): \(file) differs from a fresh database's\n\(N.diff(upgraded.reports[file] ?? "", fresh[file] ?? ""))",
                    sourceLocation: sourceLocation)
        }
        #expect(upgraded.checksums == Migrations.all.map(\.checksum), "\(label): \(upgraded.checksums)", sourceLocation: sourceLocation)
        #expect(!upgraded.stderr.contains("checksum"), "\(label): \(upgraded.stderr)", sourceLocation: sourceLocation)
        // Every table that outlives the night is one the migrations made.
        let migrated = try TestDatabase("mig_tables")
        defer { migrated.drop() }
        try Migrations.apply(migrated.db, schema: try JobSchema("recon"))
        #expect(upgraded.tables == (try tables(migrated.db)), "\(label)", sourceLocation: sourceLocation)
    }

    @Test("a database at each earlier migration (1…k from the frozen texts, then the data) is upgraded; its night equals a fresh one's",
          .enabled(if: Harness.hasDatabase), arguments: 1...10)
    func upgradeFromEveryVersion(k: Int) throws {
        let upgraded = try Self.night("mig_upto_\(k)") { t in try Self.migrateAsBefore(t, upTo: k) }
        try Self.expectUpgraded("from migration \(k)", upgraded)
    }

    @Test("a database made by the last build before checksums (the checked-in dump) is upgraded: checksums backfilled, its night equals a fresh one's",
          .enabled(if: Harness.hasDatabase))
    func upgradeFromTheFixture() throws {
        // From what that build stored alone: with verification, the receipt it left unresolved would
        // be asked again once its wait (wall-clock minutes) is over, and count more attempts.
        let upgraded = try Self.night("mig_fixture", ["--no-verify"]) { t in
            try Self.restoreFixture(t)
            #expect(try t.int("SELECT count(*) FROM recon.schema_migrations") == 11)
            #expect(try t.int("SELECT count(*) FROM recon.findings") > 0)
        }
        try Self.expectUpgraded("from the 8f8d6a6 fixture", upgraded)
    }

    func migrate(_ t: TestDatabase, _ arguments: [String] = []) throws -> ProcessResult {
        try runTool("iap-reconcile", ["migrate"] + arguments, environment: t.environment())
    }

    @Test("a checksum this build did not ship, or a version it lacks: migrate and run stop with 78 naming the version, nothing touched",
          .enabled(if: Harness.hasDatabase))
    func differentBuildStops() throws {
        let t = try TestDatabase("mig_tampered")
        defer { t.drop() }
        #expect(try migrate(t).status == 0)
        try t.db.execute("UPDATE recon.schema_migrations SET checksum = 'x' WHERE version = 4")
        let before = try t.db.query("SELECT version, checksum, applied_at FROM recon.schema_migrations ORDER BY 1").rows
        for command in [["migrate"], ["run", "--no-verify", "--out", try Harness.scratchDirectory("mig_tampered").path]] {
            let r = try runTool("iap-reconcile", command + ["--as-of", N.asOf], environment: t.environment())
            #expect(r.status == 78, "\(command[0]): \(r.stderr)")
            let lines = r.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("iap-reconcile: the job schema was migrated by a different build (version 4: checksum x recorded"),
                    "\(command[0]): \(r.stderr)")
        }
        #expect(try t.db.query("SELECT version, checksum, applied_at FROM recon.schema_migrations ORDER BY 1").rows == before)
        #expect(try t.int("SELECT count(*) FROM recon.runs") == 0)
        let status = try migrate(t, ["--status"])
        #expect(status.status == 0 && status.stdout.contains("DIFFERENT") && status.stdout.contains(Migrations.all[3].checksum),
                "\(status.stdout)\(status.stderr)")

        // A version this build does not have: a newer build migrated the schema.
        try t.db.execute("""
            UPDATE recon.schema_migrations SET checksum = \(literal: .text(Migrations.all[3].checksum)) WHERE version = 4;
            INSERT INTO recon.schema_migrations (version, name, checksum) VALUES (\(literal: .int(Migrations.latest + 1)), 'from a newer build', 'abc')
            """)
        let newer = try migrate(t)
        #expect(newer.status == 78 && newer.stderr.contains("(version \(Migrations.latest + 1): not one of this build's migrations"),
                "\(newer.stderr)")
    }

    @Test("a row without a checksum whose functions match none of its version's texts: reported, never refused; --status says UNKNOWN",
          .enabled(if: Harness.hasDatabase))
    func unknownTextIsReported() throws {
        let t = try TestDatabase("mig_unknown")
        defer { t.drop() }
        try Self.migrateAsBefore(t, upTo: 11)
        try t.db.execute("""
            CREATE OR REPLACE FUNCTION recon.money_text(m bigint) RETURNS text LANGUAGE sql IMMUTABLE AS $fn$ SELECT m::text $fn$
            """)
        let status = try migrate(t, ["--status"])
        #expect(status.status == 0, "\(status.stderr)")
        let six = status.stdout.split(separator: "\n").first { $0.hasPrefix("6 ") }
        #expect(six?.contains("UNKNOWN") == true && status.stdout.contains("backfill"), "\(status.stdout)")
        let r = try migrate(t)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("warning") && r.stderr.contains("migration 6 has no checksum"), "\(r.stderr)")
        let recorded = try t.db.query("SELECT version, checksum FROM recon.schema_migrations ORDER BY 1").rows
        #expect(recorded.filter { $0[1] == nil }.map { $0[0] } == ["6"])
        #expect(recorded.filter { $0[1] != nil }.count == Migrations.latest - 1)
        // It stays reported on every run until someone looks.
        #expect(try migrate(t).stderr.contains("migration 6 has no checksum"))
    }
}
