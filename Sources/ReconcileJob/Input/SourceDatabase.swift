import Foundation
import Logging
import Postgres

/// `SOURCE_DATABASE_URL`: the four source relations read from a database of their own (a read
/// replica, a hot standby), the job's state kept in `DATABASE_URL`'s (issue 37).
///
/// Nothing is ever written there: every session opens one `REPEATABLE READ READ ONLY`
/// transaction, and its statements are `SET` (the session's date style and encoding, so that
/// text passes between two databases unchanged), `BEGIN`, `SELECT`, `COPY (SELECT …) TO STDOUT`
/// and `ROLLBACK`. No temporary table, no function, no lock beyond the reads' own.
enum SourceDatabase {
    /// Exit 78 with the redacted string when `SOURCE_DATABASE_URL` is set and libpq cannot parse it.
    static func checkURL(_ settings: JobSettings) throws {
        guard let url = settings.sourceDatabaseURL else { return }
        do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
            throw JobError(.configuration, "SOURCE_DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                + "fix it in the environment (see docs/contract.md, 'Environment variables')")
        }
    }

    /// A session on the source database in its read-only snapshot: `SOURCE_DATABASE_URL`'s.
    /// The caller closes it (`ROLLBACK` is implied by closing).
    static func open(_ settings: JobSettings) throws -> PGConnection {
        let db: PGConnection
        do {
            db = try PGConnection(conninfo: settings.sourceDatabaseURL ?? "")
        } catch {
            throw JobError.from(error, doing: "connecting to the source database (SOURCE_DATABASE_URL)")
        }
        do {
            for statement: SQL in ["SET client_encoding = 'UTF8'", "SET DateStyle = 'ISO'", "SET IntervalStyle = 'postgres'",
                                   "SET extra_float_digits = 3", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"] {
                try db.execute(statement)
            }
        } catch {
            db.close()
            throw error
        }
        return db
    }

    /// Runs `body` with the session that reads the source relations: `job` itself without
    /// `SOURCE_DATABASE_URL`, else a read-only snapshot session on the source database (closed
    /// after). `retry`: `body` only reads, so on a recovery conflict it runs once more (lookup);
    /// respond, which stores as it reads, leaves that to its next run (exit 75 either way).
    static func reading<T>(_ settings: JobSettings, job: PGConnection, retry: Bool, logger: Logger,
                           _ body: (PGConnection) throws -> T) throws -> T {
        guard settings.sourceDatabaseURL != nil else { return try body(job) }
        try checkURL(settings)
        let what = "reading the source relations on SOURCE_DATABASE_URL"
        func once() throws -> T {
            let source = try open(settings)
            defer { source.close() }
            return try body(source)
        }
        if retry { return try retryingRecoveryConflict(what, logger: logger, once) }
        do { return try once() } catch let e as PGError where mayBeRecoveryConflict(e) {
            throw JobError(.temporary, conflictLine(what, e, again: false))
        }
    }

    /// The columns of a source relation as the source has them, in order, each with the type the
    /// copy gives it: the source's own for a type of `pg_catalog` (text, integers, numeric,
    /// timestamptz…) without its modifier (`numeric(10,2)` is `numeric`, `varchar(20)` is
    /// `varchar`: the values are the same, and the type is named by identifiers, never by text),
    /// else `text` (a domain, an enum, citext: the job's database may not know them; the source
    /// check has already refused them where the night reads them).
    static func columns(_ source: PGConnection, schema: String, relation: String) throws -> [(name: String, type: String, cast: Bool)] {
        let r = try source.query("""
            SELECT a.attname, t.typname, t.typnamespace = 'pg_catalog'::regnamespace
            FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_type t ON t.oid = a.atttypid
            WHERE n.nspname = \(schema) AND c.relname = \(relation) AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """)
        return r.rows.map { row in
            let builtin = row[2] == "t"
            return (row[0] ?? "", builtin ? (row[1] ?? "text") : "text", !builtin)
        }
    }

    /// The select list that reads `columns` of the source (`x.col`, or `x.col::text`).
    static func selectList(_ columns: [(name: String, type: String, cast: Bool)]) -> SQL {
        columns.map { $0.cast ? "\(ident: $0.name)::text" : "\(ident: $0.name)" as SQL }.joined()
    }

    /// The column definitions of a table that holds those rows.
    static func definitions(_ columns: [(name: String, type: String, cast: Bool)]) -> SQL {
        columns.map { "\(ident: $0.name) \(ident: "pg_catalog").\(ident: $0.type)" as SQL }.joined()
    }

    /// Whether an error of a session on the source, once connected, may be a recovery conflict:
    /// SQLSTATE 40001 (an ERROR that cancels a statement, or a FATAL libpq kept), or the session
    /// dropped. A standby ends a session idle in its transaction with a FATAL, and libpq, finding
    /// the socket closed when it sends the next statement, often says only "server closed the
    /// connection unexpectedly" (the reason is in the standby's log).
    static func mayBeRecoveryConflict(_ e: PGError) -> Bool { e.isRecoveryConflict || e.isConnectionProblem }

    /// The exit-75 line of a second failure (`mayBeRecoveryConflict`).
    static func conflictLine(_ what: String, _ e: PGError, again: Bool) -> String {
        let said = e.isRecoveryConflict ? "" : "; the source database ended the session while the job held its snapshot, "
            + "as a hot standby does on a recovery conflict (its log says why)"
        return "\(what): \(e)\(again ? " (the second time)" : "")\(said); \(recoveryConflictAdvice)"
    }

    /// Runs `body` once more, from a new session and snapshot, when the source cancelled the read
    /// or dropped the session (`mayBeRecoveryConflict`); a second time is exit 75 with what to
    /// change on the standby.
    static func retryingRecoveryConflict<T>(_ what: String, logger: Logger, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError where mayBeRecoveryConflict(e) {
            logger.warning("the source database cancelled the read or ended the session (a recovery conflict on a standby?); reading again once",
                           metadata: ["doing": "\(what)", "error": "\(Secrets.redact(e.description))"])
        }
        do {
            return try body()
        } catch let e as PGError where mayBeRecoveryConflict(e) {
            throw JobError(.temporary, conflictLine(what, e, again: true))
        }
    }
}

/// The night's copy of the source relations (`SOURCE_DATABASE_URL` set): the four relations read
/// in one snapshot of the source and streamed by COPY into the schema `<job schema>_source` of the
/// job's database, where every later step of the night reads them (`settings.sourceSchema` points
/// there). Each copy has the source relation's columns and types, and no key, constraint or
/// index: the night's input checks must find in the copy every duplicate key and null the source
/// has. The tables are unlogged (a crash loses them; the next night makes them again) and
/// rewritten by every night.
struct SourceCopy {
    let settings: JobSettings
    let logger: Logger

    /// The copy's schema in the job's database.
    static func schema(of jobSchema: JobSchema) throws -> JobSchema {
        guard jobSchema.name.count <= 56 else {
            throw JobError(.configuration, "with SOURCE_DATABASE_URL the job schema's name must be at most 56 characters "
                + "(the copy of the sources is \(jobSchema.name)_source)")
        }
        return try JobSchema(jobSchema.name + "_source")
    }

    /// Says which schemas are the job's copies: a schema of that name without it is someone else's.
    static let marker = "iap-reconcile: the night's copy of the source relations (SOURCE_DATABASE_URL); rewritten every night"

    struct Copied {
        var schema: JobSchema
        var shape: SourceCheck.Shape
        var rows: [String: Int] = [:]
    }

    /// Checks the source relations (contract §1, privileges) on the source, copies them, and
    /// returns the copy's schema. `db`: the run's session on the job's database.
    func run(_ db: PGConnection) throws -> Copied {
        let copy = try Self.schema(of: settings.jobSchema)
        try claimSchema(db, copy)
        var attempt = 0
        return try SourceDatabase.retryingRecoveryConflict("copying the source relations from SOURCE_DATABASE_URL",
                                                            logger: logger) {
            attempt += 1
            return try copyOnce(db, into: copy, attempt: attempt)
        }
    }

    /// Creates the copy's schema, or makes sure the one there is the job's.
    private func claimSchema(_ db: PGConnection, _ copy: JobSchema) throws {
        let found = try db.query("""
            SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = \(copy.name)
            """)
        if found.rowCount == 0 {
            try db.execute("CREATE SCHEMA IF NOT EXISTS \(copy.sql); COMMENT ON SCHEMA \(copy.sql) IS \(literal: .string(Self.marker))")
        } else if found.value(0, 0) != Self.marker {
            throw JobError(.configuration, "the job's database has a schema \(copy.name) that is not the job's copy of the "
                + "sources (its comment is not the job's); the night would overwrite it: rename it, or choose another --job-schema")
        }
    }

    private func copyOnce(_ db: PGConnection, into copy: JobSchema, attempt: Int) throws -> Copied {
        let source = try SourceDatabase.open(settings)
        defer { source.close() }
        let shape = try SourceCheck.verify(source, schema: settings.sourceSchema)
        var copied = Copied(schema: copy, shape: shape)
        let relations = SourceRelation.allCases.map(\.rawValue)
        var columns: [String: [(name: String, type: String, cast: Bool)]] = [:]
        for relation in relations {
            columns[relation] = try SourceDatabase.columns(source, schema: settings.sourceSchema, relation: relation)
        }
        try db.transaction {
            try db.execute("SET LOCAL client_encoding = 'UTF8'; SET LOCAL DateStyle = 'ISO'; SET LOCAL IntervalStyle = 'postgres'")
            for relation in relations {
                let cols = columns[relation]!
                let table: SQL = "\(copy.sql).\(ident: relation)"
                try db.execute("""
                    DROP TABLE IF EXISTS \(table);
                    CREATE UNLOGGED TABLE \(table) (\(SourceDatabase.definitions(cols))) WITH (autovacuum_enabled = off)
                    """)
                let names = cols.map { "\(ident: $0.name)" as SQL }.joined()
                var n = -1
                // Binary: the same types on both sides (SourceDatabase.columns), and no text to
                // print and parse again. Created in this transaction, so FREEZE: no hint bits to
                // set, no vacuum to come.
                try db.copyIn("COPY \(table) (\(names)) FROM STDIN WITH (FORMAT binary, FREEZE)") { writer in
                    try source.copyOutRaw("""
                        COPY (SELECT \(SourceDatabase.selectList(cols)) FROM \(ident: settings.sourceSchema).\(ident: relation)) \
                        TO STDOUT WITH (FORMAT binary)
                        """) { chunk in
                        try writer.raw(chunk)
                        n += 1
                    }
                }
                // The chunks: the header with the first row, then one per row, then the trailer.
                copied.rows[relation] = max(n, 0)
                logger.info("source relation copied", metadata: ["relation": "\(relation)", "rows": "\(n)"])
                let hold = settings.faultHoldSourceSnapshotMs
                if relation == relations.first, attempt <= hold.count, hold[attempt - 1] > 0 {
                    logger.warning("fault: holding the source snapshot", metadata: ["attempt": "\(attempt)", "ms": "\(hold[attempt - 1])"])
                    usleep(useconds_t(hold[attempt - 1]) * 1000)
                }
            }
        }
        try source.execute("ROLLBACK")
        try db.execute("ANALYZE \(relations.map { "\(copy.sql).\(ident: $0)" as SQL }.joined())")
        return copied
    }
}
