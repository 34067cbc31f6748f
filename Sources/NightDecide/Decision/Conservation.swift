import NightLearn
import PlayNight
import Postgres
import Reconciliation

/// Where every row of one source relation went: `rows` in all, and a count per bucket.
public struct RelationTally: Sendable, Equatable {
    public var rows = 0
    public var buckets: [String: Int] = [:]
    /// Rows of the first-row-per-key set that no bucket took (a bug when not zero).
    public var unplaced = 0

    public var placed: Int { buckets.values.reduce(0, +) }
}

/// Contract §1, "every source row ends in exactly one place": the tally of `summary.json`.
///
/// Each relation is counted twice, independently: `count(*)` of the relation, and its rows sorted
/// into buckets. A null key and every row of a duplicated key but the one used are input errors;
/// the row used for each key lands in the first bucket whose condition holds, and the conditions
/// are written without a catch-all, so a row that nothing accounts for (dropped by a filter, a
/// null where a value was assumed) shows as unplaced and the run fails with exit 70.
enum Conservation {
    /// The buckets of each relation, in the order they are tried.
    static let buckets: [SourceRelation: [String]] = [
        .products: ["input_error", "ok"],
        .orders: ["input_error", "delivered", "open_reported", "open_matched", "outside_window", "open_other"],
        .receipts: ["input_error", "valid", "rejected", "settled_at_upload", "outside_window", "unresolved"],
        .grants: ["input_error", "clawed_back", "duplicate", "kept", "unverified"],
    ]

    /// An order is delivered on its own columns (over `x`); every other order is open.
    static let delivered: SQL = "x.status = 'delivered' OR x.transaction_id IS NOT NULL"

    /// A relation's first bucket when it takes most rows on the row's own columns (most orders
    /// are delivered), with its condition over `x`, as the CASE of `bucketSQL` says it first:
    /// `sql` counts those rows by a filter and joins only the others.
    static let firstBucket: [SourceRelation: (name: String, condition: SQL)] = [
        .orders: ("delivered", delivered)
    ]

    /// The rows a relation's first bucket does not take, made once per query (a materialized
    /// CTE) for the CASE and for the sets its joins ask of them (the orders' were filtered from
    /// `o` three times).
    static let restOfFirstBucket = "rest"

    /// SQL CASE over the clean row `x` used for its key; NULL = no bucket. Reads the decide
    /// stage's working tables (`o`, `r`, `g` and their `bad_`, `dk_`: NightTables.swift).
    /// `layouts`: the reports' descriptions (a test hands in changed ones).
    static func bucketSQL(
        _ relation: SourceRelation, settings: JobSettings,
        layouts: (ReportFile) -> ReportLayout = \.layout
    ) -> (case: SQL, joins: SQL) {
        let S = settings.jobSchema.sql
        let start: SQL = "to_timestamp(\(settings.windowStart)::bigint / 1000.0)"
        let end: SQL = "to_timestamp(\(settings.asOf)::bigint / 1000.0)"
        // Membership through LEFT JOINs to distinct sets (hash joins that may spill), never
        // correlated subqueries: one pass per relation at any size.
        func distinct(_ column: SQL, _ from: SQL, _ alias: String, on: String) -> SQL {
            "LEFT JOIN (SELECT DISTINCT \(column) AS k FROM \(from)) \(ident: alias) ON \(ident: alias).k = x.\(ident: on)"
        }
        // The findings table's column of a report's cell, from the report's description.
        func cell(_ report: ReportFile, _ name: String) -> SQL { "\(ident: layouts(report).cellColumn(name)!)" }
        // The App Store's findings: Google Play's ids are Play's own (contract §1, "Two stores in one shop").
        func findings(_ report: ReportFile) -> SQL {
            "\(S).current_findings WHERE report = \(report.rawValue)"
                + (settings.playReports ? " AND NOT starts_with(finding_key, \(literal: .text(PlayDecide.keyPrefix)))" as SQL : "")
        }
        switch relation {
        case .products:
            return ("CASE WHEN x.product_type IN \(SourceRelation.productTypes) THEN 'ok' END", "")
        case .orders:
            // `rest`: the open orders, made once by `sql` (the first bucket's other rows).
            let openOrders: SQL = "(SELECT order_id FROM \(ident: restOfFirstBucket))"
            return (
                """
                CASE WHEN \(delivered) THEN 'delivered'
                     WHEN rep.k IS NOT NULL THEN 'open_reported'
                     WHEN ag.k IS NOT NULL OR vr.k IS NOT NULL THEN 'open_matched'
                     WHEN x.created_at < \(start) OR x.created_at > \(end) THEN 'outside_window'
                     WHEN x.created_at >= \(start) AND x.created_at <= \(end) THEN 'open_other'
                END
                """,
                [
                    distinct(cell(.compensate, "order_id"), findings(.compensate), "rep", on: "order_id"),
                    // Only open orders reach these two, so their sets hold open orders only: a
                    // hash of the few open orders probed by the grants and receipts, instead of
                    // hashing a million of each.
                    distinct("order_id", "g WHERE revoked_ms IS NULL AND order_id IN \(openOrders)", "ag", on: "order_id"),
                    distinct(
                        "r.order_id",
                        "r JOIN \(S).receipt_state s ON s.receipt_id = r.receipt_id "
                            + "WHERE s.definitive AND s.verdict = 'valid' AND r.order_id IN \(openOrders)", "vr", on: "order_id"),
                ].joined(separator: "\n")
            )
        case .receipts:
            // Over `receiptRows` (below): each receipt with its state, and `granted` only where
            // the third branch can be reached.
            return (
                """
                CASE WHEN x.definitive AND x.verdict = 'valid' THEN 'valid'
                     WHEN x.definitive AND x.verdict IN ('invalid_receipt', 'wrong_bundle') THEN 'rejected'
                     WHEN coalesce(x.verify_status, -1) IN (0, 21006) AND x.granted THEN 'settled_at_upload'
                     WHEN x.submitted_at < \(start) OR x.submitted_at > \(end) THEN 'outside_window'
                     WHEN x.submitted_at >= \(start) AND x.submitted_at <= \(end) AND NOT coalesce(x.definitive, false)
                          THEN 'unresolved'
                END
                """, ""
            )
        case .grants:
            let linked: SQL = "(at.k IS NOT NULL OR rt.k IS NOT NULL OR ro.k IS NOT NULL)"
            return (
                """
                CASE WHEN cb.k IS NOT NULL THEN 'clawed_back'
                     WHEN dg.k IS NOT NULL THEN 'duplicate'
                     WHEN x.revoked_at IS NOT NULL OR \(linked) THEN 'kept'
                     WHEN x.revoked_at IS NULL AND NOT \(linked) THEN 'unverified'
                END
                """,
                [
                    distinct(cell(.clawback, "grant_id"), findings(.clawback), "cb", on: "grant_id"),
                    distinct(cell(.duplicateGrants, "grant_id"), findings(.duplicateGrants), "dg", on: "grant_id"),
                    distinct("transaction_id", "\(S).apple_transactions", "at", on: "transaction_id"),
                    distinct("transaction_id", "r", "rt", on: "transaction_id"),
                    distinct("order_id", "r", "ro", on: "order_id"),
                ].joined(separator: "\n")
            )
        }
    }

    /// The working table of the receipts the tally places in `unresolved`: unresolved.csv's rows
    /// (ReportWriter), so that file is the tally's bucket by construction and its query reads the
    /// few unresolved receipts, not the join of every receipt with its state again.
    static let unresolvedTable = "unresolved_ids"

    /// The receipts the tally places, as `x`: the clean copy with its verification state, and
    /// `granted` (an active grant has its transaction_id) asked only of the receipts whose state
    /// does not already place them and whose upload was answered 0 or 21006. Most nights Apple
    /// settled nearly every receipt, so the grants probed are a few; before, every active grant's
    /// transaction_id was hashed for every receipt (a third of the query, and it spilled at 5M
    /// rows). The receipts with their state are read twice from one materialized set.
    static func receiptRows(settings: JobSettings) -> SQL {
        let S = settings.jobSchema.sql
        let src: SQL = "\(ident: settings.sourceSchema)"
        return """
            (WITH j AS MATERIALIZED (
                SELECT x.receipt_id, x.transaction_id, x.verify_status, x.submitted_at, s.definitive, s.verdict
                FROM r x LEFT JOIN \(S).receipt_state s ON s.receipt_id = x.receipt_id
            ), asked AS (
                SELECT transaction_id FROM j
                WHERE coalesce(verify_status, -1) IN (0, 21006)
                  AND NOT coalesce(definitive AND verdict IN ('valid', 'invalid_receipt', 'wrong_bundle'), false)
            )
            SELECT j.*, ag.k IS NOT NULL AS granted FROM j
            LEFT JOIN (SELECT DISTINCT transaction_id AS k FROM \(src).iap_grants
                       WHERE revoked_at IS NULL AND transaction_id IN (SELECT transaction_id FROM asked)) ag
                   ON ag.k = j.transaction_id) x
            """
    }

    /// One query per relation: the bucket of every clean row of its copy (SourceCopies.swift),
    /// the first rows with a problem and every further row of a duplicated key as input errors,
    /// and the independent row count of the relation itself. (Products, a handful of rows, are
    /// read from the source.)
    /// `bucketed: false`: the rows' buckets are counted elsewhere (the grants', by the decide stage:
    /// `counted` of `compute`); only the input errors and the independent row count are asked.
    static func sql(_ relation: SourceRelation, settings: JobSettings, bucketed: Bool = true) -> SQL {
        let table: SQL = "\(ident: settings.sourceSchema).\(relation.name)"
        let key = relation.keySQL
        let (bucket, joins) = bucketSQL(relation, settings: settings)
        guard let copy = relation.copy else {
            return """
                WITH firsts AS (
                    SELECT x.*, \(relation.hasProblem(jobSchema: settings.jobSchema)) AS bad
                    FROM \(relation.from(relation.firstRowPerKey(table)))
                )
                SELECT CASE WHEN bad THEN 'input_error' ELSE b END, count(*)
                FROM (SELECT bad, \(bucket) AS b FROM firsts x \(joins)) placed GROUP BY 1
                UNION ALL
                SELECT 'input_error', count(*) FROM \(table) WHERE \(key) IS NULL
                UNION ALL
                SELECT 'input_error', coalesce(sum(n - 1), 0) FROM (
                    SELECT count(*) AS n FROM \(table) WHERE \(key) IS NOT NULL GROUP BY \(key) HAVING count(*) > 1) d
                UNION ALL
                \(rowCount(relation, of: table, settings: settings))
                """
        }
        let from = relation == .receipts ? receiptRows(settings: settings) : "\(ident: copy) x"
        var placed: SQL = "SELECT b, count(*) FROM (SELECT \(bucket) AS b FROM \(from) \(joins)) placed GROUP BY b"
        if relation == .receipts {
            // The unresolved receipts are also kept (`unresolvedTable`): a data-modifying CTE runs
            // once, to the end, whether or not the query reads it.
            placed = """
                WITH placed AS MATERIALIZED (SELECT x.receipt_id, \(bucket) AS b FROM \(from) \(joins)),
                kept AS (INSERT INTO \(ident: unresolvedTable) SELECT receipt_id FROM placed WHERE b = 'unresolved')
                SELECT b, count(*) FROM placed GROUP BY b
                """
        }
        if let (first, condition) = firstBucket[relation] {
            // Most rows go to the first bucket on their own columns: counted by a filter, so that
            // only the rest (the CASE tries the first bucket again, and it takes none of them)
            // are joined with the sets the other buckets ask. Together the two filters take
            // every row once: a condition is true, or it is not.
            placed = """
                WITH \(ident: restOfFirstBucket) AS MATERIALIZED (SELECT * FROM \(from) WHERE (\(condition)) IS NOT TRUE)
                SELECT \(first)::text, count(*) FROM \(from) WHERE \(condition)
                UNION ALL
                SELECT b, count(*) FROM (SELECT \(bucket) AS b FROM \(ident: restOfFirstBucket) x \(joins)) placed GROUP BY b
                """
        }
        return """
            \(bucketed ? placed + "\nUNION ALL" : "" as SQL)
            SELECT 'input_error', count(*) FROM \(ident: "bad_" + copy)
            UNION ALL
            SELECT 'input_error', coalesce(sum(n - 1), 0) FROM \(ident: "dk_" + copy)
            UNION ALL
            \(rowCount(relation, of: table, settings: settings))
            """
    }

    /// The relation's own row count. With two stores (contract §1, "Two stores in one shop"), the
    /// relation whole, and its rows the App Store's views leave out: Play's (`google_play`, not
    /// read by this night) and those of an unknown store (input errors), from the night's tables
    /// of them (OtherStoreRows.swift).
    static func rowCount(_ relation: SourceRelation, of table: SQL, settings: JobSettings) -> SQL {
        guard let rows = settings.storeRows else { return "SELECT '#rows', count(*) FROM \(table)" }
        let whole: SQL = "SELECT '#rows', count(*) FROM \(ident: rows).\(relation.name)"
        guard let other = otherStoreRows(relation, settings: settings) else { return whole }
        return whole + "\nUNION ALL\n" + other
    }

    /// With two stores, the rows of a relation with the `store` column that the App Store's views
    /// leave out, as the tally places them: the rows of no store are input errors; Google Play's
    /// as the App Store's are placed, from their copy (`gp_o`, `gp_r`, `gp_g`: OtherStoreRows.swift):
    /// its clean rows set aside (`otherStore`), its first rows with a problem and every further row
    /// of a duplicated key input errors (the products, a handful of rows, from Play's rows
    /// themselves). `counted`: also all of them, as `#elsewhere` (the hold check's: the tally
    /// counts the relation whole). nil: no such rows.
    static func otherStoreRows(_ relation: SourceRelation, settings: JobSettings, counted: Bool = false) -> SQL? {
        guard settings.storeRows != nil, settings.storeColumns.contains(relation) else { return nil }
        let S = settings.jobSchema.sql
        let table: SQL = "\(S).\(ident: relation.playRowsTable)", none: SQL = "\(S).\(ident: relation.noStoreTable)"
        let all: SQL = "SELECT '#elsewhere', (SELECT count(*) FROM \(table)) + (SELECT count(*) FROM \(none))\nUNION ALL\n"
        let head: SQL = "\(counted ? all : "")SELECT 'input_error', count(*) FROM \(none)\nUNION ALL\n"
        guard let copy = relation.copy(.googlePlay) else {
            let key = relation.keySQL
            let bad = relation.hasProblem(jobSchema: settings.jobSchema, store: .googlePlay)
            return head + """
                SELECT CASE WHEN \(bad) THEN 'input_error' ELSE \(literal: .text(otherStore)) END, count(*)
                FROM \(relation.from(relation.firstRowPerKey(table), store: .googlePlay)) GROUP BY 1
                UNION ALL
                SELECT 'input_error', count(*) FROM \(table) WHERE \(key) IS NULL
                UNION ALL
                SELECT 'input_error', coalesce(sum(n - 1), 0) FROM (
                    SELECT count(*) AS n FROM \(table) WHERE \(key) IS NOT NULL GROUP BY \(key) HAVING count(*) > 1) d
                """
        }
        return head + """
            SELECT \(literal: .text(otherStore)), count(*) FROM \(S).\(ident: copy)
            UNION ALL
            SELECT 'input_error', count(*) FROM \(S).\(ident: "bad_" + copy)
            UNION ALL
            SELECT 'input_error', coalesce(sum(n - 1), 0) FROM \(S).\(ident: "dk_" + copy)
            """
    }

    /// The bucket of Google Play's rows without a problem, set aside: the night reads the App Store's.
    static let otherStore = "google_play"

    /// The tally of one relation, on `db` (the night's plan runs the four side by side: NightPlan.swift).
    /// `dropOne` is a deliberate fault for the tests: one row of the relation named is taken out
    /// of its bucket, as a bug would, so the check must fail.
    /// `counted`: buckets of clean rows counted by the decide stage as the rules saw them (the
    /// grants': DecideStage.Result), so the relation's query only adds its input errors and its
    /// own row count; a row the rules never saw then shows as missing.
    /// The receipts' query also fills `unresolvedTable` afresh.
    static func tally(
        _ relation: SourceRelation, db: PGConnection, settings: JobSettings, dropOne: String? = nil,
        counted: [String: Int]? = nil
    ) throws -> RelationTally {
        let query = sql(relation, settings: settings, bucketed: counted == nil)
        if relation == .receipts {
            try db.execute(
                """
                DROP TABLE IF EXISTS \(ident: unresolvedTable);
                CREATE UNLOGGED TABLE \(ident: unresolvedTable) (receipt_id text) WITH (autovacuum_enabled = false)
                """)
        }
        let rows = try db.query(query).rows
        var tally = RelationTally()
        for name in buckets[relation] ?? [] { tally.buckets[name] = 0 }
        if settings.storeColumns.contains(relation) { tally.buckets[otherStore] = 0 }
        for (name, n) in counted ?? [:] { tally.buckets[name, default: 0] += n }
        for row in rows {
            let n = Int(row[1] ?? "0") ?? 0
            switch row[0] {
            case nil: tally.unplaced += n
            case "#rows": tally.rows = n
            case let name?: tally.buckets[name, default: 0] += n
            }
        }
        if dropOne == relation.rawValue, let fullest = tally.buckets.max(by: { $0.value < $1.value })?.key {
            tally.buckets[fullest]! -= 1
        }
        return tally
    }

    /// nil when every row of every relation is in exactly one bucket; else the one line to print.
    static func problem(
        _ tallies: [String: RelationTally],
        relations: [SourceRelation] = SourceRelation.allCases
    ) -> String? {
        for relation in relations {
            guard let t = tallies[relation.rawValue] else { return "no tally for \(relation.rawValue)" }
            if t.unplaced > 0 || t.placed != t.rows {
                return "the conservation check failed for \(relation.rawValue): \(t.rows) rows, \(t.placed) accounted for"
                    + (t.unplaced > 0 ? " (\(t.unplaced) in no bucket)" : "")
                    + "; this is a bug in iap-reconcile: no report was written"
            }
        }
        return nil
    }
}
