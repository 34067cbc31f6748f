// The rows the App Store's views leave out, set aside once a night (contract §1, "Two stores in
// one shop"): each relation's Google Play rows (`play_rows_<relation>`) and its rows of no store
// (`no_store_<relation>`). Four steps read them: the input errors, the tally, the hold check and
// Google Play's decisions. Each used to read them through the views, which filter the whole
// relation, most twice (once for the duplicated keys, once for the rows): about twenty scans of
// each relation a night, where these tables take one (docs/benchmarks.md, "Two stores").

import JobStore
import Postgres

/// The statements of the night's tables of the rows the App Store's views leave out.
package enum OtherStoreRows {
    /// The statements that make both tables of every relation of `rows` (the schema of the
    /// relations whole), then the copies of Play's rows (`gp_o`, `gp_r`, `gp_g`, with their `bad_`
    /// and `dk_` tables, as the App Store's copies are made: SourceCopySQL.swift) that the tally,
    /// the hold check, the input errors and Play's decisions read: Play's rows are checked once.
    /// A relation without the `store` column (not in `storeColumns`) is the App Store's, all of
    /// it: its tables are made empty, so that the readers read four of each. `newTable`: the
    /// night's `CREATE` of a working table.
    package static func sql(
        rows: String, jobSchema: JobSchema, storeColumns: Set<SourceRelation>, newTable: (SQL) -> SQL
    ) -> SQL {
        let S = jobSchema.sql
        let copies = [SourceRelation.orders, .receipts, .grants].map {
            $0.copySQL(source: "\(S).\(ident: $0.playRowsTable)", jobSchema: jobSchema, store: .googlePlay, newTable: newTable)
        }
        return SourceRelation.allCases.map { relation -> SQL in
            let play: SQL = "\(S).\(ident: relation.playRowsTable)", none: SQL = "\(S).\(ident: relation.noStoreTable)"
            let whole: SQL = "\(ident: rows).\(relation.name)"
            guard storeColumns.contains(relation) else {
                return """
                    DROP TABLE IF EXISTS \(play), \(none);
                    CREATE \(newTable(play)) AS SELECT * FROM \(whole) WHERE false;
                    CREATE \(newTable(none)) AS SELECT * FROM \(whole) WHERE false
                    """
            }
            // One scan of the relation takes every row not of the App Store (into a table of this
            // session), then each table takes its share of them. Statistics from 3,000 rows, as
            // the copies' (SourceCopies.swift): a fifth of a second less per table.
            return """
                DROP TABLE IF EXISTS \(play), \(none), pg_temp.other_store_rows;
                CREATE TEMPORARY TABLE other_store_rows AS SELECT * FROM \(whole) WHERE store IS DISTINCT FROM 'app_store';
                CREATE \(newTable(play)) AS SELECT * FROM pg_temp.other_store_rows WHERE store = 'google_play';
                CREATE \(newTable(none)) AS SELECT * FROM pg_temp.other_store_rows WHERE store IS DISTINCT FROM 'google_play';
                DROP TABLE pg_temp.other_store_rows;
                SET default_statistics_target = 10;
                ANALYZE \(play); ANALYZE \(none);
                RESET default_statistics_target
                """
        }.joined(separator: ";\n") + ";\n" + copies.joined(separator: "\n")
    }
}
