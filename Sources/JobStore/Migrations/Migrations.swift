import Crypto
import Foundation
import Postgres

/// One numbered migration of the job schema. Its text is frozen once shipped (one file each in
/// this folder, literal SQL): a change to what it made is a new migration, never an edit.
struct Migration: Sendable {
    let version: Int
    let name: String
    /// The SQL, `{S}` standing for the job schema's quoted name.
    let sql: String
    /// sha256 of `sql` as written here (`{S}` unreplaced), lower-case hex: what
    /// `schema_migrations.checksum` records for a database that got this text.
    let checksum: String

    init(_ version: Int, _ name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        checksum = Migrations.sha256(sql)
    }
}

/// The job's own schema, created by numbered migrations. Applied in order, each in its own
/// transaction, recorded in `{S}.schema_migrations` with its checksum; an advisory transaction
/// lock keeps two processes from migrating at once. Before anything is applied the recorded
/// checksums are compared with this build's (`SchemaCheck`): a database migrated by a different
/// build stops the job (exit 78) and is left as it is.
package enum Migrations {
    static let all: [Migration] = [v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17, v18, v19, v20, v21, v22]

    /// The newest migration this build knows (the schema a run needs).
    package static var latest: Int { all.last?.version ?? 0 }

    static func migration(_ version: Int) -> Migration? {
        all.indices.contains(version - 1) && all[version - 1].version == version ? all[version - 1] : nil
    }

    /// What `apply` did: the versions it applied, and the recorded versions whose text could not
    /// be told (no checksum, and none of the texts the version has had matches the database).
    package struct Outcome {
        /// The versions this call applied.
        package var applied: [Int] = []
        /// Recorded versions with no checksum that match none of the texts their version has had.
        package var unknownTexts: [Int] = []
    }

    /// Creates the schema if needed, checks what is recorded (a different build's migration: exit
    /// 78, nothing touched), fills in the checksums of rows recorded before there were any
    /// (`SchemaCheck.backfill`), and applies what is missing.
    @discardableResult
    package static func apply(
        _ db: PGConnection, schema: JobSchema,
        onWait: ((_ version: Int, _ attempt: Int) -> Void)? = nil
    ) throws -> Outcome {
        // CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema is there:
        // ask first, so a nightly role without it works once the schema exists.
        let exists = try db.query("SELECT 1 FROM pg_namespace WHERE nspname = \(schema.name)").rowCount > 0
        if !exists { try db.execute("CREATE SCHEMA \(schema.sql)") }
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS \(schema.sql).schema_migrations (
                version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), checksum text)
            """)
        // The checksum column came after the table: a database of an earlier build gains it here.
        // Asked first: ALTER TABLE needs the table's owner even when the column is there, and a
        // nightly role that is not the owner must still run (chaos `privileges`).
        let hasChecksum =
            try db.query(
                """
                SELECT 1 FROM pg_attribute
                WHERE attrelid = to_regclass(\(schema.sql.text + ".schema_migrations")) AND attname = 'checksum' AND NOT attisdropped
                """
            ).rowCount > 0
        if !hasChecksum {
            try db.execute("ALTER TABLE \(schema.sql).schema_migrations ADD COLUMN IF NOT EXISTS checksum text")
        }
        var outcome = Outcome()
        try db.transaction {
            try lock(db, schema)
            let check = try SchemaCheck.read(db, schema: schema)
            if let problem = check.refusal { throw JobError(.configuration, problem) }
            for (version, text) in check.backfill {
                try db.query(
                    "UPDATE \(schema.sql).schema_migrations SET checksum = \(text.checksum) WHERE version = \(version) AND checksum IS NULL"
                )
            }
            outcome.unknownTexts = check.unknownTexts
        }
        for migration in all {
            var waited = 0
            while true {
                do {
                    let applied = try db.transaction { () throws -> Bool in
                        try lock(db, schema)
                        // `respond` and `lookup` run while an upgrade migrates: a migration that
                        // needs a table they read waits for it at most lockWaitMs, then steps back
                        // (their statements queue behind a waiting ALTER TABLE) and tries again.
                        try db.query("SELECT set_config('lock_timeout', \(String(lockWaitMs)), true)")
                        let present = try db.query(
                            """
                            SELECT 1 FROM \(schema.sql).schema_migrations WHERE version = \(migration.version)
                            """)
                        guard present.rowCount == 0 else { return false }
                        try db.execute(migration.sql.replacingSchema(schema))
                        try db.query(
                            """
                            INSERT INTO \(schema.sql).schema_migrations (version, name, checksum)
                            VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                            """)
                        return true
                    }
                    if applied { outcome.applied.append(migration.version) }
                    break
                } catch let error as PGError where error.sqlState == "55P03" || error.sqlState == "40P01" {
                    // lock_not_available (our timeout) or a deadlock the server broke: nothing of
                    // this migration was kept; try it again after a pause.
                    guard waited < lockTries else {
                        throw JobError(
                            .temporary,
                            "migration \(migration.version) waited for a table another session "
                                + "holds \(lockTries + 1) times (\(error.message)); nothing of it was applied: run "
                                + "`iap-reconcile migrate` again once the long transaction on the job schema has ended "
                                + "(pg_stat_activity shows it)")
                    }
                    waited += 1
                    onWait?(migration.version, waited)
                    usleep(UInt32(lockPauseMs) * 1000)
                }
            }
        }
        return outcome
    }

    /// How long one migration waits for a table lock before it steps back (ms), how often it
    /// tries again, and the pause between: about two minutes in all, then the error ends the run.
    package static let lockWaitMs = 5_000
    /// How often a migration that waited for a table lock tries again.
    package static let lockTries = 20
    static let lockPauseMs = 1_000

    private static func lock(_ db: PGConnection, _ schema: JobSchema) throws {
        _ = try db.query("SELECT pg_advisory_xact_lock(hashtext(\("iap-reconcile migrate " + schema.name)))")
    }

    static func sha256(_ text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// The functions a text creates, in order: each one's name and body, the text between its
    /// `$fn$` quotes (what Postgres keeps as `pg_proc.prosrc`, `{S}` for the schema).
    static func functions(in sql: String) -> [(name: String, body: String)] {
        let parts = sql.components(separatedBy: "$fn$")
        return stride(from: 1, to: parts.count, by: 2).compactMap { i in
            guard let r = parts[i - 1].range(of: "FUNCTION {S}.", options: .backwards) else { return nil }
            return (String(parts[i - 1][r.upperBound...].prefix { $0 != "(" }), parts[i])
        }
    }

    /// The functions a text replaces in place (`CREATE OR REPLACE`): an earlier body of theirs is gone.
    static func replacedFunctions(in sql: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(sql)
        while let r = rest.range(of: "CREATE OR REPLACE FUNCTION {S}.") {
            names.insert(String(rest[r.upperBound...].prefix { $0 != "(" }))
            rest = rest[r.upperBound...]
        }
        return names
    }
}

/// A schema name the job writes into SQL: checked to be a plain identifier, then quoted.
public struct JobSchema: Sendable {
    public let name: String
    /// The name as an SQL identifier, double-quoted: `\(S)` in the job's statements.
    public var sql: SQL { "\(ident: name)" }

    public init(_ name: String) throws {
        let ok =
            !name.isEmpty && name.count <= 63
            && name.utf8.allSatisfy { c in
                (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c == 95
            } && !(name.utf8.first! >= 48 && name.utf8.first! <= 57)
        guard ok else {
            throw JobError(.usage, "schema name '\(name)' is not a plain identifier (lower-case letters, digits, _)")
        }
        self.name = name
    }

    private init(checked name: String) { self.name = name }

    /// `--job-schema`'s default.
    public static let standard = JobSchema(checked: "recon")

    /// A schema the job keeps beside this one, named `<name><suffix>`: exit 78 when the name
    /// would pass Postgres's 63 characters. `when`: the setting that needs it, for the line.
    public func sibling(_ suffix: String, when: String, holding what: String) throws -> JobSchema {
        let limit = 63 - suffix.count
        guard name.count <= limit else {
            throw JobError(
                .configuration,
                "\(when) the job schema's name must be at most \(limit) characters (\(what) is \(name)\(suffix))")
        }
        return JobSchema(checked: name + suffix)
    }
}

extension String {
    /// A frozen text (a migration, a function definition taken from one) as SQL, each `{S}` the
    /// job schema's quoted name. The text is the code's own, byte for byte as checksummed; it
    /// holds no values, so it runs as it is.
    package func replacingSchema(_ schema: JobSchema) -> SQL {
        var out: SQL = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: "{S}") {
            out += SQL(unsafeSQL: String(rest[..<r.lowerBound]))
            out += schema.sql
            rest = rest[r.upperBound...]
        }
        return out + SQL(unsafeSQL: String(rest))
    }
}
