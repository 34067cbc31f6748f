// The decide stage's two family queries (DecideStage.decideFamilies streams them: FamilyStreams.swift):
// `T`, every Apple transaction, and `G`, every clean grant, each sorted by family key, with
// what the rules read joined in only where a rule reads it,
// and a window count over the family that marks the rows of quiet families
// (FamilyStream.isQuiet). Most quiet families are not sent at all: `crowdedKeysSQL`.

import NightLearn
import Postgres
import Reconciliation

extension DecideStage {
    /// What the `T` rows are joined with (Postgres leaves out what a query does not name). Ties
    /// between receipts or orders go by byte order of their ids (`COLLATE "C"`, as every report
    /// sorts), whatever the database's collation; it also lets Postgres sort with abbreviated keys
    /// instead of calling the locale per comparison.
    ///
    /// A transaction's receipt, user and exact order are read by one rule only, compensate
    /// (Compensate.swift), and only for a transaction whose active grants do not cover its
    /// quantity; unattributed.csv asks for the user only of a transaction with no grant. So they are
    /// looked up for the transactions `owed` holds: those without one active grant of their own
    /// that covers them alone (a superset of those the rules ask about; about a tenth of the
    /// transactions on the benchmark's data), and left empty for the others (the
    /// receipts' join and the orders' sorts over every transaction were
    /// most of the `T` query). The owed transactions' receipts (`owed_links`) are joined once for
    /// both the first receipt and the exact order by receipt: the second join of the receipts
    /// with their transactions was a parallel scan of every receipt.
    var transactionCTEs: SQL {
        """
        WITH owed AS MATERIALIZED (
            SELECT t.transaction_id, t.environment, t.product_id FROM \(appleTransactions) t
            WHERE NOT EXISTS (SELECT 1 FROM g WHERE g.transaction_id = t.transaction_id AND g.revoked_ms IS NULL
                              AND g.quantity >= greatest(t.quantity, 1))
        ), owed_links AS MATERIALIZED (
            SELECT rt.transaction_id, rt.environment, r.receipt_id, r.user_id, r.order_id, r.submitted_ms
            FROM \(S).receipt_transactions rt JOIN r ON r.receipt_id = rt.receipt_id
            WHERE (rt.transaction_id, rt.environment) IN (SELECT transaction_id, environment FROM owed)
        ), first_receipt AS (
            SELECT DISTINCT ON (l.transaction_id COLLATE "C", l.environment COLLATE "C")
                   l.transaction_id, l.environment, l.receipt_id, l.user_id
            FROM owed_links l
            ORDER BY l.transaction_id COLLATE "C", l.environment COLLATE "C", l.submitted_ms, l.receipt_id COLLATE "C"
        ), exact_by_transaction AS (
            SELECT DISTINCT ON (transaction_id COLLATE "C") transaction_id, order_id, user_id, product_id, created_ms
            FROM o WHERE transaction_id IN (SELECT transaction_id FROM owed)
            ORDER BY transaction_id COLLATE "C", created_ms, order_id COLLATE "C"
        ), exact_by_receipt AS (
            SELECT DISTINCT ON (l.transaction_id COLLATE "C", l.environment COLLATE "C") l.transaction_id, l.environment,
                   o.order_id, o.user_id, o.product_id, o.created_ms
            FROM owed_links l
            JOIN o ON o.order_id = l.order_id
            JOIN owed t ON t.transaction_id = l.transaction_id AND t.environment = l.environment
            WHERE o.transaction_id IS NULL AND o.status <> 'delivered' AND o.product_id = t.product_id
            ORDER BY l.transaction_id COLLATE "C", l.environment COLLATE "C", l.submitted_ms, l.receipt_id COLLATE "C"
        )
        """
    }

    /// What the `G` rows are joined with. A grant's receipt links (its receipts by transaction,
    /// then by order, what Apple answered for each) and the quantity of the order linked to its
    /// transaction are read by the rules only for a grant whose transaction Apple never showed
    /// (Clawback's invalid_receipt, wrong_bundle and transaction_not_found; same_transaction's
    /// quantity): a transaction Apple showed is in the grant's family. So they are counted for
    /// those grants alone, `unknown`, one row each (2.3% of the grants on the benchmark's data),
    /// and left at zero for the others: the two joins of every grant with every receipt, the
    /// receipts' states and the orders' sort were most of the `G` query.
    /// "Apple showed it" is `known_to_apple`, in either environment.
    /// Those counts are made before the query (`unknownGrantsSQL`).
    var grantCTEs: SQL {
        """
        WITH grant_family AS (
            SELECT g.grant_id, g.user_id, g.order_id, g.product_id, g.transaction_id, g.original_transaction_id,
                   g.quantity, g.granted_ms, g.revoked_ms,
                   coalesce(tp.original_transaction_id, ts.original_transaction_id, g.original_transaction_id, g.transaction_id) AS fkey,
                   (tp.transaction_id IS NOT NULL OR ts.transaction_id IS NOT NULL) AS known_to_apple,
                   (tp.original_transaction_id = tp.transaction_id AND tp.cancellation_date_ms IS NULL
                    AND tp.revocation_date_ms IS NULL AND g.revoked_ms IS NULL
                    AND g.quantity >= greatest(tp.quantity, 1)) AS covers_its_family
            FROM g
            LEFT JOIN \(appleTransactions) tp ON tp.transaction_id = g.transaction_id AND tp.environment = 'production'
            LEFT JOIN \(appleTransactions) ts ON ts.transaction_id = g.transaction_id AND ts.environment = 'sandbox'
        )
        """
    }

    /// `unknown`: the grants whose transaction Apple never showed, in either environment
    /// (`grantCTEs`). It reads only the grants' copy and what was learned from Apple, so it is made
    /// beside the copies once the grants' is (NightPlan.swift). An unlogged night table
    /// (NightTables.swift).
    var unknownGrantsSQL: SQL {
        """
        DROP TABLE IF EXISTS unknown;
        CREATE \(newTable("unknown")) AS
            SELECT g.grant_id, g.transaction_id, g.order_id FROM g
            WHERE NOT EXISTS (SELECT 1 FROM \(appleTransactions) t
                              WHERE t.transaction_id = g.transaction_id AND t.environment IN ('production', 'sandbox'));
        ANALYZE unknown
        """
    }

    /// What the rules read of the `unknown` grants: `unknown_facts`, one row per such grant with
    /// a receipt link or a linked order: its receipt links counted, and the quantity of the order
    /// linked to its transaction. A temporary table with statistics, made on the `G` stream's
    /// session before its query, so that the query hashes these few rows and streams the million
    /// grants past them.
    /// - Over CTEs, Postgres assumed 200 distinct grants and hashed every receipt (twice) and
    ///   order to probe them with a few grants, a hash each that spills at 5M rows.
    /// - Each link's verdict is looked up by the receipt_state's key (a LATERAL that is not
    ///   pulled up, so an index scan per link). As a join in the query, Postgres hashed every
    ///   receipt's state for a few links; as a scalar subquery there, it misjudged the
    ///   counts' rows and hashed every grant instead.
    /// - The counts and the order in one table: the query probes one small hash per grant, not
    ///   two.
    var unknownFactsSQL: SQL {
        """
        CREATE TEMPORARY TABLE unknown_facts AS
            WITH unknown_links AS (
                SELECT u.grant_id, u.transaction_id, r.receipt_id FROM unknown u JOIN r ON r.transaction_id = u.transaction_id
                UNION ALL
                SELECT u.grant_id, u.transaction_id, r.receipt_id FROM unknown u JOIN r ON r.order_id = u.order_id
                WHERE r.transaction_id IS DISTINCT FROM u.transaction_id
            ), link_counts AS (
                SELECT l.grant_id, count(*) AS linked,
                       count(*) FILTER (WHERE s.verdict = 'invalid_receipt') AS rejected_invalid,
                       count(*) FILTER (WHERE s.verdict = 'wrong_bundle') AS rejected_wrong_bundle,
                       count(*) FILTER (WHERE s.verdict = 'valid' AND NOT EXISTS (
                           SELECT 1 FROM \(S).receipt_transactions a
                           WHERE a.receipt_id = l.receipt_id AND a.transaction_id = l.transaction_id)) AS verified_without_transaction
                FROM unknown_links l
                LEFT JOIN LATERAL (SELECT s.verdict FROM \(S).receipt_state s WHERE s.receipt_id = l.receipt_id OFFSET 0) s ON true
                GROUP BY l.grant_id
            ), linked_order AS (
                SELECT DISTINCT ON (u.grant_id) u.grant_id, o.quantity
                FROM unknown u JOIN o ON o.transaction_id = u.transaction_id
                ORDER BY u.grant_id, o.created_ms, o.order_id COLLATE "C"
            )
            SELECT coalesce(c.grant_id, lo.grant_id) AS grant_id, c.linked, c.rejected_invalid, c.rejected_wrong_bundle,
                   c.verified_without_transaction, lo.quantity AS order_quantity
            FROM link_counts c FULL JOIN linked_order lo ON lo.grant_id = c.grant_id;
        ANALYZE unknown_facts
        """
    }

    /// `crowded_keys`: the family keys whose family may hold more than one `T` row or more than
    /// one `G` row. The family queries leave out every family whose key is its transaction's own id
    /// and is not crowded, and whose only transaction is `settled` with the grant that covers it:
    /// a quiet family (FamilyStream.isQuiet) that Postgres proves quiet before its sort, so its two
    /// rows are neither sorted nor sent nor read (795,827 of 974,772 families on the benchmark's
    /// data). Such a family's key K is a production
    /// transaction's id, and
    /// - another `T` row with the key K is either another transaction whose original id is K (the
    ///   first part) or the same id in another environment (the second);
    /// - a grant lands in the family K when its transaction is K (Apple knows K in production), or
    ///   when Apple knows neither environment of its transaction and its own original id, else its
    ///   transaction id, is K: so a second grant makes K a transaction id or an original id (when
    ///   not its own transaction id) of two grants (the third part).
    /// The grants are counted in the source relation, whose rows include every clean grant, so the
    /// table can be made beside the copies: a key it holds in excess (a duplicated or malformed
    /// grant's) only sends a quiet family to the rules, which find nothing in it. The streams' left
    /// out rows are counted, one transaction and one grant per family (DecideStage.decideFamilies checks that
    /// both counts agree).
    ///
    /// `transactionIndexed`: the source grants have a btree index led by `transaction_id`. The
    /// third part is then counted in that index's order (no hash of every grant's ids), as three
    /// sets: transaction ids of two grants; original ids
    /// (other than the grant's own transaction id) of two grants; and such original ids that are
    /// also a grant's transaction id, looked up in the index (a key named once as each).
    /// `counted`: the third part already made (`SourceCopy` makes it at a source database, from its
    /// indexes), read instead.
    func crowdedKeysSQL(transactionIndexed: Bool, counted: SQL? = nil) -> SQL {
        let namedTwice =
            counted.map { "SELECT k FROM \($0)" }
            ?? Self.namedTwiceSQL(
                grants: "\(src).\(ident: SourceRelation.grants.rawValue)", transactionIndexed: transactionIndexed)
        let indexed = transactionIndexed && counted == nil
        return """
            DROP TABLE IF EXISTS crowded_keys;
            \(indexed ? "SET enable_hashagg = off;" : "" as SQL)
            CREATE \(newTable("crowded_keys")) AS
                SELECT original_transaction_id AS k FROM \(appleTransactions) WHERE original_transaction_id <> transaction_id
                UNION
                SELECT transaction_id FROM \(appleTransactions) WHERE environment <> 'production'
                UNION
                \(namedTwice);
            \(indexed ? "RESET enable_hashagg;" : "" as SQL)
            ANALYZE crowded_keys
            """
    }

    /// `crowdedKeysSQL`'s third part over `grants` (column `k`): the ids two grants name.
    static func namedTwiceSQL(grants: SQL, transactionIndexed: Bool) -> SQL {
        transactionIndexed
            ? """
            SELECT transaction_id FROM \(grants) WHERE transaction_id IS NOT NULL
            GROUP BY transaction_id HAVING count(*) > 1
            UNION
            SELECT o.k FROM (
                SELECT original_transaction_id AS k, count(*) AS n FROM \(grants)
                WHERE original_transaction_id IS NOT NULL AND original_transaction_id IS DISTINCT FROM transaction_id
                GROUP BY 1
            ) o
            LEFT JOIN LATERAL (SELECT 1 AS hit FROM \(grants) g WHERE g.transaction_id = o.k LIMIT 1) h ON true
            WHERE o.n > 1 OR h.hit IS NOT NULL
            """
            : """
            SELECT k FROM (
                SELECT transaction_id AS k FROM \(grants)
                UNION ALL
                SELECT original_transaction_id FROM \(grants)
                WHERE original_transaction_id IS DISTINCT FROM transaction_id
            ) x WHERE k IS NOT NULL GROUP BY k HAVING count(*) > 1
            """
    }

    /// The `T` rows (Apple transactions with their receipt and exact order), sorted by family key;
    /// see `FamilyRow`. The window `family` counts a family's transactions for `settled`; it sorts
    /// as the rows are sorted, so Postgres sorts once. The transactions of the quiet families
    /// `crowdedKeysSQL` describes are left out.
    var transactionRowsSQL: SQL {
        """
        \(transactionCTEs)
        SELECT \(FamilyRow.selectList(TransactionColumn.self, \.sql))
        FROM \(appleTransactions) t
        LEFT JOIN first_receipt f ON f.transaction_id = t.transaction_id AND f.environment = t.environment
        LEFT JOIN exact_by_transaction e1 ON e1.transaction_id = t.transaction_id
        LEFT JOIN exact_by_receipt e2 ON e2.transaction_id = t.transaction_id AND e2.environment = t.environment
        LEFT JOIN who w ON w.transaction_id = t.transaction_id AND w.environment = t.environment
        LEFT JOIN owed ow ON ow.transaction_id = t.transaction_id AND ow.environment = t.environment
        LEFT JOIN crowded_keys ck ON ck.k = t.transaction_id
        WHERE NOT (\(TransactionColumn.standsCovered) AND t.original_transaction_id = t.transaction_id AND ck.k IS NULL)
        WINDOW family AS (PARTITION BY t.original_transaction_id COLLATE "C" ORDER BY t.transaction_id COLLATE "C"
                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
        ORDER BY t.original_transaction_id COLLATE "C", t.transaction_id COLLATE "C"
        """
    }

    /// The `G` rows (a grant with what its linked receipts say), one per grant, sorted by family
    /// key and grant; the window `family` counts a family's grants for `onlyGrant`. The grants of
    /// the quiet families `crowdedKeysSQL` describes are left out: the grant whose transaction is
    /// its family's key and which covers it (`covers_its_family`), the key not crowded.
    var grantRowsSQL: SQL {
        """
        \(grantCTEs)
        SELECT \(FamilyRow.selectList(GrantColumn.self, \.sql))
        FROM grant_family gf
        LEFT JOIN unknown_facts uf ON uf.grant_id = gf.grant_id
        LEFT JOIN crowded_keys ck ON ck.k = gf.transaction_id
        WHERE ck.k IS NOT NULL OR gf.covers_its_family IS NOT TRUE
        WINDOW family AS (PARTITION BY gf.fkey COLLATE "C" ORDER BY gf.grant_id COLLATE "C"
                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
        ORDER BY gf.fkey COLLATE "C", gf.grant_id COLLATE "C"
        """
    }

    // MARK: The same statements one after another (lookup, the rule book's tests)

    /// The working tables `run` makes side by side, made in order on one session from `sources`
    /// (the source relations, or copies of some of their rows), but `crowded_keys`: the caller
    /// makes it (`crowdedKeysSQL`, or `everyKeyCrowdedSQL` to have every family sent).
    package func prepareInOrder(_ db: PGConnection, sources: (SourceRelation) -> SQL) throws -> ProductCatalog {
        try db.execute(productsSQL)
        let products = try ProductCatalog.load(db)
        for relation in [SourceRelation.receipts, .orders, .grants] {
            try db.execute(
                relation.copySQL(
                    source: sources(relation), jobSchema: settings.jobSchema,
                    newTable: { newTable($0) }))
        }
        try db.execute(unknownGrantsSQL)
        try prepareTokenOrders(db)
        try db.execute(attributionSQL)
        try db.execute("DROP TABLE IF EXISTS unknown_facts")
        try db.execute(unknownFactsSQL)
        return products
    }

    /// `crowded_keys` holding every transaction id: the family queries then leave no family out.
    package var everyKeyCrowdedSQL: SQL {
        """
        DROP TABLE IF EXISTS crowded_keys;
        CREATE \(newTable("crowded_keys")) AS
            SELECT transaction_id AS k FROM \(appleTransactions) UNION SELECT transaction_id FROM g;
        ANALYZE crowded_keys
        """
    }

    /// Every family the `T` and `G` queries send, whole, by key (no quiet family is skipped
    /// unread): for lookup's few families and the tests, never for a night.
    package func allFamilies(_ db: PGConnection, products: ProductCatalog) throws -> [String: Family] {
        var families: [String: Family] = [:]
        for sql in [transactionRowsSQL, grantRowsSQL] {
            try db.copyOut("COPY (\(sql)) TO STDOUT") { line in
                guard let row = FamilyRow(line), let key = row.key else { return }
                if row.isTransaction, let t = row.transaction(products) {
                    families[key, default: Family(key: key)].transactions.append(t)
                } else if row.isGrant, let g = row.grant(products) {
                    families[key, default: Family(key: key)].grants.append(g)
                }
            }
        }
        return families
    }
}
