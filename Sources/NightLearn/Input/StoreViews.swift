import JobStore
import Postgres

/// Contract §1, "Two stores in one shop": when a source relation has the optional `store`
/// column, the App Store's night reads its rows through views that keep `store = 'app_store'`
/// (and every row of a relation without the column), in the schema `<job schema>_app_store`.
/// Every later step reads them as it reads the sources of a shop that sells on the App Store
/// only; the Google Play rows and the rows whose `store` is neither never reach Apple's checks,
/// queries or decisions. The keys are then per store: an order id, or a product id, may be used
/// once in each store (a shop that maps two tables into one view keeps its ids).
///
/// The views are made once and kept while the sources keep their columns: each carries, as its
/// comment, the text it was made from and the columns it read, and a view whose comment differs
/// is made again (`SELECT *` takes the columns of the moment it is made).
package enum StoreViews {
    /// The stores a `store` value may name (contract §1): anything else is an input error.
    package static let stores = ["app_store", "google_play"]

    /// The views' schema of `store`'s rows in the job's database: `<job schema>_app_store`, `<job schema>_google_play`.
    package static func schema(of jobSchema: JobSchema, store: SourceStore = .appStore) throws -> JobSchema {
        try store.viewsSchema(of: jobSchema)
    }

    /// Says which schemas are the job's views: a schema of that name without it is someone else's.
    static func marker(_ store: SourceStore) -> String {
        "iap-reconcile: the \(store.rawValue) rows of the source relations (their store column); made again when their columns change"
    }

    /// SQL predicate over a row (alias `x`) of a relation with the column: its `store` is neither
    /// store, or null (an input error).
    package static let unknownStore: SQL = "(x.store IS NULL OR x.store::text NOT IN ('app_store', 'google_play'))"

    /// The input-error text of a row's unknown `store` (over `x`), NULL when it names a store.
    package static let storeProblem: SQL = """
        CASE WHEN x.store IS NULL THEN 'store is null'
             WHEN x.store::text NOT IN ('app_store', 'google_play') THEN 'store ' || x.store || ' is not app_store or google_play' END
        """

    /// Makes (or keeps) each store's views over the relations of `rows` (the source schema, or
    /// the night's copy of it), and returns the App Store's schema. `stores`: the relations with a
    /// `store` column. Two runs making them at once take turns (an advisory lock); a view that a
    /// running night reads is made again only when the sources' columns changed, waiting at most 10 s.
    package static func prepare(
        _ db: PGConnection, rows: String, jobSchema: JobSchema, stores: Set<SourceRelation>
    ) throws -> JobSchema {
        for store in SourceStore.allCases { try prepare(db, rows: rows, jobSchema: jobSchema, stores: stores, store: store) }
        return try schema(of: jobSchema)
    }

    private static func prepare(
        _ db: PGConnection, rows: String, jobSchema: JobSchema, stores: Set<SourceRelation>, store: SourceStore
    ) throws {
        let views = try schema(of: jobSchema, store: store)
        let wanted = try definitions(db, rows: rows, stores: stores, store: store)
        func current() throws -> [String: String] {
            let r = try db.query(
                """
                SELECT c.relname, obj_description(c.oid, 'pg_class') FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = \(views.name) AND c.relkind = 'v'
                """)
            return Dictionary(r.rows.compactMap { row in row[0].map { ($0, row[1] ?? "") } }) { a, _ in a }
        }
        if try current() == wanted.mapValues(\.comment), try schemaIsOurs(db, views, store) == true { return }
        do {
            try db.transaction {
                try db.execute(
                    """
                    SET LOCAL lock_timeout = '10s';
                    SELECT pg_advisory_xact_lock(hashtext(\(literal: .string("iap-reconcile store views " + views.name))))
                    """)
                switch try schemaIsOurs(db, views, store) {
                case nil:
                    try db.execute("CREATE SCHEMA \(views.sql); COMMENT ON SCHEMA \(views.sql) IS \(literal: .string(Self.marker(store)))")
                case false?:
                    throw JobError(
                        .configuration,
                        "the job's database has a schema \(views.name) that is not the job's views of the \(store.rawValue) rows "
                            + "(its comment is not the job's); the night would overwrite it: rename it, or choose another --job-schema")
                case true?: break
                }
                let found = try current()
                for relation in SourceRelation.allCases {
                    let name = relation.rawValue
                    guard let view = wanted[name], found[name] != view.comment else { continue }
                    let target: SQL = "\(views.sql).\(ident: name)"
                    try db.execute(
                        """
                        DROP VIEW IF EXISTS \(target);
                        CREATE VIEW \(target) AS \(view.select);
                        COMMENT ON VIEW \(target) IS \(literal: .string(view.comment))
                        """)
                }
            }
        } catch let e as PGError where e.sqlState == "55P03" {
            throw JobError(
                .temporary,
                "the views of the \(store.rawValue) rows in \(views.name) must be made again (the source relations' columns "
                    + "changed) and another run is reading them; try again when it has finished")
        } catch let e as PGError where e.sqlState == "42501" {
            throw JobError(
                .configuration,
                "the source relations have a store column and the job's role may not create the schema \(views.name) "
                    + "or its views (\(e.message)); grant CREATE on the database for the first run, or create the schema "
                    + "for the role (see docs/contract.md, 'Two stores in one shop')")
        }
    }

    /// nil: no such schema; else whether it carries the job's marker.
    private static func schemaIsOurs(_ db: PGConnection, _ views: JobSchema, _ store: SourceStore) throws -> Bool? {
        let r = try db.query("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = \(views.name)")
        guard r.rowCount > 0 else { return nil }
        return r.value(0, 0) == Self.marker(store)
    }

    /// Each view's text and the comment that says what it was made from (the text and the
    /// columns of the relation it reads, in order, with their types).
    private static func definitions(
        _ db: PGConnection, rows: String, stores: Set<SourceRelation>, store: SourceStore
    ) throws -> [String: (select: SQL, comment: String)] {
        let r = try db.query(
            """
            SELECT c.relname, string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE n.nspname = \(rows) AND c.relname IN ('iap_products', 'iap_orders', 'iap_receipts', 'iap_grants')
            GROUP BY c.relname
            """)
        let columns = Dictionary(r.rows.compactMap { row in row[0].map { ($0, row[1] ?? "") } }) { a, _ in a }
        var out: [String: (select: SQL, comment: String)] = [:]
        for relation in SourceRelation.allCases {
            // A relation without the column is the App Store's, all of it.
            let filter: SQL =
                stores.contains(relation)
                ? " WHERE store = \(literal: .string(store.rawValue))" : store == .appStore ? "" : " WHERE false"
            let select: SQL = "SELECT * FROM \(ident: rows).\(relation.name)\(filter)"
            out[relation.rawValue] = (select, "\(marker(store))\n\(select.text)\ncolumns: \(columns[relation.rawValue] ?? "")")
        }
        return out
    }

    /// The source check of the commands that read the sources between nights (`check`, `lookup`,
    /// `respond`): `settings` takes what it found, and, when a relation has the `store` column,
    /// reads the App Store's rows through the views (made on `db`, where they must be next to the
    /// rows). Through `SOURCE_DATABASE_URL` the rows are in another database: exit 78, said so.
    package static func checkSources(_ settings: inout JobSettings, db: PGConnection, source: PGConnection, command: String) throws {
        let shape = try SourceCheck.verify(source, schema: settings.sourceSchema)
        settings.listPriceColumns = shape.listPrices
        guard !shape.storeColumns.isEmpty else { return }
        guard source === db else {
            throw JobError(
                .configuration,
                "\(command): the source relations have a store column and are read through SOURCE_DATABASE_URL; "
                    + "\(command) does not yet read a two-store shop from another database: to read last night's copy, run it "
                    + "without SOURCE_DATABASE_URL and with --source-schema \(settings.jobSchema.name)_source "
                    + "(docs/contract.md, 'Two stores in one shop')")
        }
        let views = try prepare(db, rows: settings.sourceSchema, jobSchema: settings.jobSchema, stores: shape.storeColumns)
        settings.storeRows = settings.sourceSchema
        settings.storeColumns = shape.storeColumns
        settings.sourceSchema = views.name
    }
}
