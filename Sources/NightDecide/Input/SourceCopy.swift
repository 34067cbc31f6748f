import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Synchronization

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
        try jobSchema.sibling("_source", when: "with SOURCE_DATABASE_URL", holding: "the copy of the sources")
    }

    /// Says which schemas are the job's copies: a schema of that name without it is someone else's.
    static let marker = "iap-reconcile: the night's copy of the source relations (SOURCE_DATABASE_URL); rewritten every night"

    struct Copied {
        var schema: JobSchema
        var shape: SourceCheck.Shape
        var rows: [String: Int] = [:]
        /// The tables of keys counted at the source (`duplicatedKeys`, `namedTwice`).
        var keysCounted: Set<String> = []
    }

    /// The table of a relation's duplicated keys and their row counts (`k`, `n`), counted at the
    /// source in the copy's snapshot: `SourceRelation.duplicatedKeysSQL` over the source relation.
    static func duplicatedKeys(_ relation: SourceRelation) -> String { "dk_" + relation.rawValue }
    /// The table of the ids two grants name (`k`): `DecideStage.namedTwiceSQL` over the source grants.
    static let namedTwice = "iap_grants_named_twice"

    /// Checks the source relations (contract §1, privileges) on the source, copies them, and
    /// returns the copy's schema. `db`: the run's session on the job's database.
    func run(_ db: PGConnection) throws -> Copied {
        let copy = try Self.schema(of: settings.jobSchema)
        try claimSchema(db, copy)
        var attempt = 0
        return try SourceDatabase.retryingRecoveryConflict(
            "copying the source relations from SOURCE_DATABASE_URL",
            logger: logger
        ) {
            attempt += 1
            return try copyOnce(db, into: copy, attempt: attempt)
        }
    }

    /// Creates the copy's schema, or makes sure the one there is the job's.
    private func claimSchema(_ db: PGConnection, _ copy: JobSchema) throws {
        let found = try db.query(
            """
            SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = \(copy.name)
            """)
        if found.rowCount == 0 {
            try db.execute("CREATE SCHEMA IF NOT EXISTS \(copy.sql); COMMENT ON SCHEMA \(copy.sql) IS \(literal: .string(Self.marker))")
        } else if found.value(0, 0) != Self.marker {
            throw JobError(
                .configuration,
                "the job's database has a schema \(copy.name) that is not the job's copy of the "
                    + "sources (its comment is not the job's); the night would overwrite it: rename it, or choose another --job-schema")
        }
    }

    /// One table of the copy's schema, filled from a query at the source.
    private struct Piece: Sendable {
        /// Its name in the copy's schema.
        let table: String
        let columns: [(name: String, type: String, cast: Bool)]
        /// What is read at the source.
        let select: SQL
        /// The source relation it copies whole (nil: keys counted there).
        let relation: String?
        /// Counted in key order from the source's index: its session hashes nothing meanwhile.
        var indexed = false
    }

    /// Reads the source in one snapshot, exported by the first session and read in by three more,
    /// each streaming its share into the copy's schema on a job session of its own: the receipts
    /// (the widest relation); the products, orders and grants; and the keys counted at the source
    /// (`keyPieces`). Binary COPY, passed through unread; each table made and filled in one job
    /// transaction, so `FREEZE`. The exporting session stays in its transaction until the three
    /// have ended: a snapshot can be read in only while its exporter holds it.
    private func copyOnce(_ db: PGConnection, into copy: JobSchema, attempt: Int) throws -> Copied {
        let source = try SourceDatabase.open(settings)
        defer { source.close() }
        let schema = settings.sourceSchema
        let shape = try SourceCheck.verify(source, schema: schema)
        var copied = Copied(schema: copy, shape: shape)
        var whole: [SourceRelation: Piece] = [:]
        for relation in SourceRelation.allCases {
            let cols = try SourceDatabase.columns(source, schema: schema, relation: relation.rawValue)
            whole[relation] = Piece(
                table: relation.rawValue, columns: cols,
                select: "SELECT \(SourceDatabase.selectList(cols)) FROM \(ident: schema).\(ident: relation.rawValue)",
                relation: relation.rawValue)
        }
        let keys = try keyPieces(source, columns: whole.mapValues(\.columns))
        let stale = (SourceRelation.allCases.map(Self.duplicatedKeys) + [Self.namedTwice]).map { "\(copy.sql).\(ident: $0)" as SQL }
        do { try db.execute("DROP TABLE IF EXISTS \(stale.joined())") } catch { throw JobError.from(error, doing: Self.writingCopy) }
        guard let snapshot = try source.query("SELECT pg_export_snapshot()").value(0, 0) else {
            throw JobError(.temporary, "the source database exported no snapshot")
        }
        let lanes: [[Piece]] = [[whole[.receipts]!], [whole[.products]!, whole[.orders]!, whole[.grants]!], keys]
        let rows = Mutex<[String: Int]>([:]), failure = Mutex<(any Error)?>(nil)
        let done = DispatchGroup()
        for (i, lane) in lanes.enumerated() where !lane.isEmpty {
            done.enter()
            Thread { [settings, logger] in
                defer { done.leave() }
                do {
                    let hold = settings.faultHoldSourceSnapshotMs
                    let holdMs = i == 1 && attempt <= hold.count ? hold[attempt - 1] : 0
                    let n = try Self.copy(lane, snapshot: snapshot, into: copy, settings: settings, logger: logger, holdMs: holdMs)
                    rows.withLock { $0.merge(n) { a, _ in a } }
                } catch {
                    failure.withLock { if $0 == nil { $0 = error } }
                }
            }.start()
        }
        done.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        try source.execute("ROLLBACK")
        copied.rows = rows.withLock { $0 }
        copied.keysCounted = Set(keys.map(\.table))
        // Every statement after reads them whole: a sample of 3,000 rows (target 10) is enough for
        // their plans (as for the decide stage's copies), and takes a tenth of the time.
        let analyzed = (SourceRelation.allCases.map(\.rawValue) + keys.map(\.table)).map { "\(copy.sql).\(ident: $0)" as SQL }
        do {
            try db.execute("SET default_statistics_target = 10; ANALYZE \(analyzed.joined()); RESET default_statistics_target")
        } catch { throw JobError.from(error, doing: Self.writingCopy) }
        return copied
    }

    /// The keys the decide stage counts in each relation, counted here at the source in the same
    /// snapshot, from the source's indexes where it has them (the copy has none: counting it
    /// again in the job's database hashed a million keys per relation): the duplicated keys of
    /// orders, receipts and grants, and the ids two grants name. Only where the copy compares
    /// the same bytes the source groups: a key of a built-in type (not cast to text) whose
    /// collation is deterministic; elsewhere the decide stage counts the copy as before.
    private func keyPieces(_ source: PGConnection, columns: [SourceRelation: [(name: String, type: String, cast: Bool)]]) throws -> [Piece]
    {
        let schema = settings.sourceSchema
        func bytewise(_ relation: SourceRelation, _ names: [String]) throws -> Bool {
            guard names.allSatisfy({ name in columns[relation]?.contains { $0.name == name && !$0.cast } == true }) else { return false }
            let r = try source.query(
                """
                SELECT bool_and(coalesce(co.collisdeterministic, true)) FROM pg_attribute a
                JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                LEFT JOIN pg_collation co ON co.oid = a.attcollation
                WHERE n.nspname = \(schema) AND c.relname = \(relation.rawValue) AND a.attname = ANY(\(names))
                """)
            return r.value(0, 0) == "t"
        }
        func type(_ relation: SourceRelation, _ name: String) -> String? { columns[relation]?.first { $0.name == name }?.type }
        var pieces: [Piece] = []
        for relation in SourceRelation.allCases where relation.copy != nil {
            guard try bytewise(relation, [relation.key]), let keyType = type(relation, relation.key) else { continue }
            let table: SQL = "\(ident: schema).\(ident: relation.rawValue)"
            pieces.append(
                Piece(
                    table: Self.duplicatedKeys(relation), columns: [("k", keyType, false), ("n", "int8", false)],
                    select: relation.duplicatedKeysSQL(source: table), relation: nil,
                    indexed: try relation.indexLed(by: relation.key, schema: schema, source)))
        }
        let ids = ["transaction_id", "original_transaction_id"]
        if try bytewise(.grants, ids), let t = type(.grants, ids[0]), type(.grants, ids[1]) == t {
            let indexed = try SourceRelation.grants.indexLed(by: "transaction_id", schema: schema, source)
            pieces.append(
                Piece(
                    table: Self.namedTwice, columns: [("k", t, false)],
                    select: DecideStage.namedTwiceSQL(
                        grants: "\(ident: schema).\(ident: SourceRelation.grants.rawValue)",
                        transactionIndexed: indexed),
                    relation: nil, indexed: indexed))
        }
        return pieces
    }

    /// Streams `lane`'s pieces from a source session on `snapshot` into the copy's schema, each in a
    /// job transaction of its own; the rows of each whole relation, by name. `holdMs`: the tests'
    /// fault, the snapshot held after the lane's first piece.
    private static func copy(
        _ lane: [Piece], snapshot: String, into copy: JobSchema, settings: JobSettings,
        logger: Logger, holdMs: Int
    ) throws -> [String: Int] {
        do {
            return try copySides(lane, snapshot: snapshot, into: copy, settings: settings, logger: logger, holdMs: holdMs)
        } catch let e as SourceSide {
            // The source's: a recovery conflict is read again (`run`).
            throw e.error
        } catch let e as JobSide {
            throw JobError.from(e.error, doing: writingCopy)
        } catch let e as PGError {
            throw JobError.from(e, doing: writingCopy)
        }
    }

    /// What a failure of the job's own database during the copy was doing: never taken for a
    /// recovery conflict of the source (its connection dropping is not the standby's doing).
    static let writingCopy = "writing the copy of the source relations into the job's database (DATABASE_URL)"

    /// A failure of the source's session, or of the job's inside a callback of the source's COPY.
    private struct SourceSide: Error { let error: Error }
    private struct JobSide: Error { let error: Error }

    private static func copySides(
        _ lane: [Piece], snapshot: String, into copy: JobSchema, settings: JobSettings,
        logger: Logger, holdMs: Int
    ) throws -> [String: Int] {
        func onSource<T>(_ body: () throws -> T) throws -> T {
            do { return try body() } catch let e as JobSide { throw e } catch { throw SourceSide(error: error) }
        }
        let source = try onSource { try SourceDatabase.open(settings, snapshot: snapshot) }
        defer { source.close() }
        let db = try JobDatabase.connect(settings)
        defer { db.close() }
        var rows: [String: Int] = [:]
        for (i, piece) in lane.enumerated() {
            let table: SQL = "\(copy.sql).\(ident: piece.table)"
            var n = -1
            try db.transaction {
                try db.execute(
                    """
                    SET LOCAL client_encoding = 'UTF8'; SET LOCAL DateStyle = 'ISO'; SET LOCAL IntervalStyle = 'postgres';
                    DROP TABLE IF EXISTS \(table) CASCADE;
                    CREATE UNLOGGED TABLE \(table) (\(SourceDatabase.definitions(piece.columns))) WITH (autovacuum_enabled = off)
                    """)
                if piece.indexed { try onSource { try source.execute("SET enable_hashagg = off") } }
                let names = piece.columns.map { "\(ident: $0.name)" as SQL }.joined()
                // Binary: the same types on both sides (SourceDatabase.columns), and no text to
                // print and parse again. Created in this transaction, so FREEZE: no hint bits to
                // set, no vacuum to come.
                try db.copyIn("COPY \(table) (\(names)) FROM STDIN WITH (FORMAT binary, FREEZE)") { writer in
                    try onSource {
                        try source.copyOutRaw("COPY (\(piece.select)) TO STDOUT WITH (FORMAT binary)") { chunk in
                            do { try writer.raw(chunk) } catch { throw JobSide(error: error) }
                            n += 1
                        }
                    }
                }
                if piece.indexed { try onSource { try source.execute("RESET enable_hashagg") } }
            }
            if let relation = piece.relation {
                // The chunks: the header with the first row, then one per row, then the trailer.
                rows[relation] = max(n, 0)
                logger.info("source relation copied", metadata: ["relation": "\(relation)", "rows": "\(max(n, 0))"])
            }
            if i == 0, holdMs > 0 {
                logger.warning("fault: holding the source snapshot", metadata: ["ms": "\(holdMs)"])
                usleep(useconds_t(holdMs) * 1000)
            }
        }
        return rows
    }
}
