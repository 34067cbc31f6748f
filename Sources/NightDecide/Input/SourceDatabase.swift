import Foundation
import JobStore
import Logging
import NightLearn
import Postgres

/// `SOURCE_DATABASE_URL`: the four source relations read from a database of their own (a read
/// replica, a hot standby), the job's state kept in `DATABASE_URL`'s.
///
/// Nothing is ever written there: every session opens one `REPEATABLE READ READ ONLY`
/// transaction, and its statements are `SET` and `RESET` (the session's date style and encoding,
/// so that text passes between two databases unchanged; `enable_hashagg` while keys are counted
/// from an index; `SET TRANSACTION SNAPSHOT`), `BEGIN`, `SELECT` (`pg_export_snapshot()` among
/// them), `COPY (SELECT …) TO STDOUT` and `ROLLBACK`. No temporary table, no function, no lock
/// beyond the reads' own.
package enum SourceDatabase {
    /// Exit 78 with the redacted string when `SOURCE_DATABASE_URL` is set and libpq cannot parse it.
    static func checkURL(_ settings: JobSettings) throws {
        guard let url = settings.sourceDatabaseURL else { return }
        do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
            throw JobError(
                .configuration,
                "SOURCE_DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                    + "fix it in the environment (see docs/contract.md, 'Environment variables')")
        }
    }

    /// A session on the source database in its read-only snapshot: `SOURCE_DATABASE_URL`'s.
    /// The caller closes it (`ROLLBACK` is implied by closing).
    /// `snapshot`: a snapshot another session of the source exported (`pg_export_snapshot()`),
    /// which this one then reads in (`SET TRANSACTION SNAPSHOT`): the night's copy reads the
    /// relations on several sessions at one moment.
    static func open(_ settings: JobSettings, snapshot: String? = nil) throws -> PGConnection {
        let db: PGConnection
        do {
            db = try PGConnection(conninfo: settings.sourceDatabaseURL ?? "")
        } catch {
            throw JobError.from(error, doing: "connecting to the source database (SOURCE_DATABASE_URL)")
        }
        do {
            for statement: SQL in [
                "SET client_encoding = 'UTF8'", "SET DateStyle = 'ISO'", "SET IntervalStyle = 'postgres'",
                "SET extra_float_digits = 3", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            ] {
                try db.execute(statement)
            }
            if let snapshot { try db.execute("SET TRANSACTION SNAPSHOT \(literal: .string(snapshot))") }
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
    package static func reading<T>(
        _ settings: JobSettings, job: PGConnection, retry: Bool, logger: Logger,
        _ body: (PGConnection) throws -> T
    ) throws -> T {
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
    package static func columns(_ source: PGConnection, schema: String, relation: String) throws -> [(
        name: String, type: String, cast: Bool
    )] {
        let r = try source.query(
            """
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
    package static func selectList(_ columns: [(name: String, type: String, cast: Bool)]) -> SQL {
        columns.map { $0.cast ? "\(ident: $0.name)::text" : "\(ident: $0.name)" as SQL }.joined()
    }

    /// The column definitions of a table that holds those rows.
    package static func definitions(_ columns: [(name: String, type: String, cast: Bool)]) -> SQL {
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
        let said =
            e.isRecoveryConflict
            ? ""
            : "; the source database ended the session while the job held its snapshot, "
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
            logger.warning(
                "the source database cancelled the read or ended the session (a recovery conflict on a standby?); reading again once",
                metadata: ["doing": "\(what)", "error": "\(Secrets.redact(e.description))"])
        }
        do {
            return try body()
        } catch let e as PGError where mayBeRecoveryConflict(e) {
            throw JobError(.temporary, conflictLine(what, e, again: true))
        }
    }
}
