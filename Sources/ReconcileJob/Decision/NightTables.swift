// The decide stage's working tables (the copies `o`, `r`, `g`, `p`, their `bad_` and `dk_`
// tables, `known_products`, `token_orders`, `who`, `crowded_keys`, `unknown`, the tally's
// `unresolved_ids`) are unlogged tables in the job schema, not temporary ones (issue "The night
// at Postgres's floor"). Two things follow: the stage's other sessions see them, so the copies
// are made side by side and the tally's queries run at once on the machine's cores; and Postgres
// may scan them with parallel workers, which it never does for a temporary table. Each run
// drops and makes them afresh under its lock, and drops them when the night has written its
// reports; a run killed in the middle leaves them for the next run.
// (A schema of their own would need CREATE on the database every night: docs/contract.md,
// "Database privileges".)
// Each is made `WITH (autovacuum_enabled = false)`, as is the compensation spool: they live for
// one night and the stage ANALYZEs each itself, while autovacuum's vacuum and analyze of the fresh
// copies took about 3 CPU s and 15 s of disk work beside the stage at 1M rows per relation.

import Foundation
import Postgres
import Synchronization

enum NightTables {
    /// Every working table, for the drops (a new one belongs in this list).
    static let names = ["p", "known_products", "o", "r", "g", "bad_o", "bad_r", "bad_g", "dk_o", "dk_r", "dk_g",
                        "token_orders", "who", "crowded_keys", "unknown", Conservation.unresolvedTable]

    /// No working table of an earlier run, and this session finds the new ones by name.
    static func create(_ db: PGConnection, schema: JobSchema) throws {
        try drop(db, schema: schema)
        try use(db, schema: schema)
    }

    /// This session finds the night's tables by their short names (as the stage's SQL says them),
    /// creates them in the job schema, and has the stage's planner settings: no JIT (it compiled
    /// every expression of these plans again on each run, 2.6 s of the family query alone, and
    /// earns nothing back on rows this simple), room for the hash joins, and no parallel workers:
    /// the night runs its own statements side by side (the copies one per core, both family
    /// queries, the tally beside them), so a worker only takes a core from another of them and
    /// adds its coordination (on 2 cores: whole runs 24.7-29.2 s against 26.5-30.4 s, five of six
    /// alternated pairs faster, 3 fewer busy core-seconds).
    static func use(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute("""
            SELECT set_config('search_path', \(literal: .text(schema.sql.text + ", ")) || current_setting('search_path'), false);
            SET work_mem = '128MB'; SET jit = off; SET max_parallel_workers_per_gather = 0
            """)
    }

    /// `sql` on a session of its own with the night's settings (`use`), on a thread of its own:
    /// start it, go on, and wait for it with `value()`.
    static func alongside(_ sql: SQL, settings: JobSettings) -> Alongside<Void> {
        Alongside {
            let db = try JobDatabase.connect(settings)
            defer { db.close() }
            try use(db, schema: settings.jobSchema)
            if sql.bindsValues { try db.query(sql) } else { try db.execute(sql) }
        }
    }

    static func drop(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute("DROP TABLE IF EXISTS \(names.map { "\(schema.sql).\(ident: $0)" as SQL }.joined())")
    }

    /// Runs each piece of work with a session of the night (`use`), as many at a time as the
    /// machine has cores (two at least), in the order given (so the longest first keeps both cores busy to the end), and returns each one's value
    /// in that order. The first failure is thrown once every piece has ended.
    static func inParallel<T: Sendable>(_ pieces: [@Sendable (PGConnection) throws -> T],
                                        settings: JobSettings) throws -> [T] {
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        let next = Mutex(0)
        let width = min(pieces.count, max(2, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: width) { _ in
            do {
                let db = try JobDatabase.connect(settings)
                defer { db.close() }
                try use(db, schema: settings.jobSchema)
                while true {
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    guard i < pieces.count else { return }
                    let outcome = Result { try pieces[i](db) }
                    results.withLock { $0[i] = outcome }
                }
            } catch {
                results.withLock { $0[-1] = .failure(error) }
            }
        }
        return try results.withLock { all in
            if case .failure(let e)? = all[-1] { throw e }
            return try pieces.indices.map { i in
                guard let r = all[i] else { throw JobError(.internalCheck, "a parallel statement did not run") }
                return try r.get()
            }
        }
    }
}
