// The decide stage's working tables (the copies `o`, `r`, `g`, `p`, their `bad_` and `dk_`
// tables, `known_products`, `token_orders`, `who`, `crowded_keys`, `unknown`, the tally's
// `unresolved_ids`, the findings history's `closing_reasons`) are unlogged tables in the job
// schema, not temporary ones. Two things follow: the stage's other sessions see them, so the copies
// are made side by side and the tally's queries run at once on the machine's cores; and Postgres
// may scan them with parallel workers, which it never does for a temporary table. Each run
// drops and makes them afresh under its lock, and drops them when the night has written its
// reports; a run killed in the middle leaves them for the next run.
// (A schema of their own would need CREATE on the database every night: docs/contract.md,
// "Database privileges".)
// Each is made `WITH (autovacuum_enabled = false)`, as is the compensation spool: they live for
// one night and the stage ANALYZEs each itself, while autovacuum's vacuum and analyze of the fresh
// copies took CPU and disk beside the stage.

import Foundation
import JobStore
import NightLearn
import PlayNight
import Postgres

enum NightTables {
    /// Every working table, for the drops (a new one belongs in this list).
    static let names =
        [
            "p", "known_products", "o", "r", "g", "bad_o", "bad_r", "bad_g", "dk_o", "dk_r", "dk_g",
            "token_orders", "who", "crowded_keys", "unknown", Conservation.unresolvedTable, "closing_reasons",
            "play_known_products",
        ] + PlayDecide.tables + SourceRelation.allCases.flatMap { [$0.playRowsTable, $0.noStoreTable] }
        + SourceRelation.allCases.compactMap(\.playCopyTable).flatMap { [$0, "bad_" + $0, "dk_" + $0] }

    /// No working table of an earlier run, and this session finds the new ones by name.
    static func create(_ db: PGConnection, schema: JobSchema) throws {
        try drop(db, schema: schema)
        try use(db, schema: schema)
    }

    /// This session finds the night's tables by their short names (as the stage's SQL says them),
    /// creates them in the job schema, and has the stage's planner settings: no JIT (it compiled
    /// every expression of these plans again on each run and earns nothing back on rows this
    /// simple), room for the hash joins, and no parallel workers: the night runs its own
    /// statements side by side (the plan: NightPlan.swift), so a worker only takes a core from
    /// another of them and adds its coordination (docs/benchmarks.md, "Measured choices").
    static func use(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute(
            """
            SELECT set_config('search_path', \(literal: .text(schema.sql.text + ", ")) || current_setting('search_path'), false);
            SET work_mem = '128MB'; SET jit = off; SET max_parallel_workers_per_gather = 0
            """)
    }

    static func drop(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute("DROP TABLE IF EXISTS \(names.map { "\(schema.sql).\(ident: $0)" as SQL }.joined())")
    }
}
