// The decide stage's copies of the source relations, in one pass over each (the stage's
// SourceCopies.swift makes them; the text is the relation's own, so it is said here, beside its
// checks). Each copy holds the first row of every key with the columns the night reads and the
// problems the row has; the rows with a problem then move to a small `bad_` table.

import JobStore
import Postgres

extension SourceRelation {
    /// The temporary table of its clean rows (products, a handful of rows, have none).
    package var copy: String? {
        switch self {
        case .products: return nil
        case .orders: return "o"
        case .receipts: return "r"
        case .grants: return "g"
        }
    }

    /// The night's copy of the relation's rows of `store`: the App Store's `o`, `r`, `g`, Google
    /// Play's `gp_o`, `gp_r`, `gp_g` (made from `playRowsTable`: OtherStoreRows.swift).
    package func copy(_ store: SourceStore) -> String? { store == .appStore ? copy : playCopyTable }

    /// The columns of the copy of `store`'s rows: Play's receipts keep their purchase token.
    package func copyColumns(_ store: SourceStore) -> SQL {
        store == .googlePlay && self == .receipts ? copyColumns + ", x.receipt_data" : copyColumns
    }

    /// The columns of the copy, over the source row `x` (times also in epoch milliseconds).
    package var copyColumns: SQL {
        func ms(_ c: String) -> SQL {
            "\(Self.epochMilliseconds("x.\(ident: c)")) AS \(ident: String(c.dropLast(3)) + "_ms")"
        }
        switch self {
        case .products: return "x.*"
        case .orders:
            return "x.order_id, x.user_id, x.product_id, x.quantity, x.status, x.transaction_id, x.created_at, \(ms("created_at"))"
        case .receipts:
            return "x.receipt_id, x.user_id, x.order_id, x.transaction_id, x.verify_status, x.submitted_at, \(ms("submitted_at"))"
        case .grants:
            return "x.grant_id, x.user_id, x.order_id, x.product_id, x.transaction_id, x.original_transaction_id, "
                + "x.quantity, x.granted_at, \(ms("granted_at")), x.revoked_at, \(ms("revoked_at"))" as SQL
        }
    }

    /// Whether the relation in `schema` (on `db`) has a valid, whole (not partial) btree index whose
    /// first column is `column`.
    package func indexLed(by column: String, schema: String, _ db: PGConnection) throws -> Bool {
        let r = try db.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM pg_index i
                JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
                WHERE n.nspname = \(schema) AND c.relname = \(rawValue) AND a.attname = \(column)
                  AND am.amname = 'btree' AND i.indisvalid AND i.indpred IS NULL)
            """)
        return r.value(0, 0) == "t"
    }

    /// The keys of several rows of `source`, and their row counts (`k`, `n`).
    package func duplicatedKeysSQL(source: SQL) -> SQL {
        "SELECT \(keySQL) AS k, count(*) AS n FROM \(source) WHERE \(keySQL) IS NOT NULL GROUP BY \(keySQL) HAVING count(*) > 1"
    }

    /// Creates `dk_<copy>` (the duplicated keys and their row counts), the copy itself (the first
    /// row of every key, null keys included, with a column per check holding its problem),
    /// then moves the rows with a problem to `bad_<copy>` (one pass: a DELETE that returns them).
    /// Its statistics come from a sample of 3,000 rows (target 10), not 30,000: every statement
    /// reads these tables whole, the plans of the family queries were the same, and ANALYZE took
    /// a tenth of the time.
    /// `keyIndexed`: the source has a btree index led by its key, so the duplicated keys are
    /// counted in key order from that index, with no sort and no hash of every key (where the
    /// planner chose the hash; without the index, key order would need a sort, slower, so the
    /// planner chooses then).
    /// `counted`: a table of those keys and counts already made (the night's copy of a source
    /// database counts them there, in the copy's snapshot, from the source's indexes:
    /// `SourceCopy`), read instead of counting again.
    /// Autovacuum is off on these tables, as on every working table (NightTables.swift).
    /// `store`: the copy of Play's rows (`copy(_:)`), checked as Play's rows are.
    package func copySQL(
        source: SQL, jobSchema: JobSchema, keyIndexed: Bool = false, counted: SQL? = nil, store: SourceStore = .appStore,
        newTable: (SQL) -> SQL
    ) -> SQL {
        guard let copyName = copy(store) else { return "" }
        let checks = checks(jobSchema: jobSchema, store: store)
        let problems = checks.map { "(\($0.problem)) AS \($0.problemColumn)" as SQL }.joined(separator: ",\n       ")
        let bad = checks.map { "y.\($0.problemColumn) IS NOT NULL" as SQL }.joined(separator: " OR ")
        let copy: SQL = "\(ident: copyName)", dk: SQL = "\(ident: "dk_" + copyName)", badCopy: SQL = "\(ident: "bad_" + copyName)"
        let key = keySQL
        return """
            DROP TABLE IF EXISTS \(copy), \(badCopy), \(dk);
            \(keyIndexed && counted == nil ? "SET enable_hashagg = off;" : "" as SQL)
            CREATE \(newTable(dk)) AS \(counted.map { "SELECT k, n FROM \($0)" } ?? duplicatedKeysSQL(source: source));
            \(keyIndexed && counted == nil ? "RESET enable_hashagg;" : "" as SQL)
            ANALYZE \(dk);
            CREATE \(newTable(copy)) AS
            SELECT y.*, (\(bad)) AS bad FROM (
                SELECT \(copyColumns(store)), x.dup_key,
                       \(problems)
                FROM (
                    SELECT x.*, false AS dup_key FROM \(source) x WHERE x.\(key) IS NULL OR x.\(key) NOT IN (SELECT k FROM \(dk))
                    UNION ALL
                    (SELECT DISTINCT ON (\(key)) x.*, true FROM \(source) x WHERE x.\(key) IN (SELECT k FROM \(dk))
                     ORDER BY \(key), \(firstRowOrder))
                ) x\(productJoin(store))
                OFFSET 0  -- a fence: each check runs once per row, not again inside `bad`
            ) y;
            CREATE \(newTable(badCopy)) AS SELECT * FROM \(copy) WITH NO DATA;
            WITH moved AS (DELETE FROM \(copy) WHERE bad RETURNING *) INSERT INTO \(badCopy) SELECT * FROM moved;
            SET default_statistics_target = 10;
            ANALYZE \(copy);
            RESET default_statistics_target;
            """
    }
}
