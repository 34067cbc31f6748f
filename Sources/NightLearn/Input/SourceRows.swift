// Contract §1, row by row: what makes a source row an input error, said once.
//
// The same definitions build `input_errors.csv` (every problem of every row), the clean copies
// the decisions read (the first row of each key, without problems), the receipts sent to the
// App Store, and the conservation tally (where every row went). So a row is either an input
// error or taken into account: it can never fall between the two.

import JobStore
import Postgres

/// The stores a source row may be of (contract §1, "Two stores in one shop": the `store` column).
package enum SourceStore: String, CaseIterable, Sendable {
    case appStore = "app_store"
    case googlePlay = "google_play"

    /// The known products of the store's rows (`kp` of the checks): the decide stage's table.
    package var knownProducts: SQL { self == .appStore ? "known_products" : "play_known_products" }

    /// The schema of the job's views of this store's rows (`StoreViews` in NightDecide):
    /// `<job schema>_app_store`, `<job schema>_google_play`.
    package func viewsSchema(of jobSchema: JobSchema) throws -> JobSchema {
        try jobSchema.sibling(
            "_" + rawValue, when: "when the source relations have a store column",
            holding: "the schema of the views of the \(rawValue) rows")
    }
}

/// The four source relations and the checks of their rows.
package enum SourceRelation: String, CaseIterable, Sendable {
    case products = "iap_products"
    case orders = "iap_orders"
    case receipts = "iap_receipts"
    case grants = "iap_grants"

    /// One row of a relation breaks §1 in `column` when `problem` (SQL over the row `x`, and
    /// `kp` for the relations that name a product) is not NULL; its value is the problem text.
    package struct Check {
        /// The column the check reads.
        package let column: String
        /// SQL giving the problem text, NULL when the row is fine.
        package let problem: SQL
        /// Its column in the job's copy of the relation (SourceCopies.swift): the problem text, or NULL.
        package var problemColumn: SQL { "\(ident: "p_" + column)" }
    }

    /// The key column: a null key or a key of several rows is an input error (`keySQL` in SQL).
    package var key: String {
        switch self {
        case .products: return "product_id"
        case .orders: return "order_id"
        case .receipts: return "receipt_id"
        case .grants: return "grant_id"
        }
    }

    /// The night's table of the relation's Google Play rows, every one of them, as the Play view
    /// holds them (contract §1, "Two stores in one shop"): made once a night by the decide stage
    /// from one scan of the relation, and read by each step that reads Play's rows.
    package var playRowsTable: String { "play_rows_" + rawValue }

    /// The night's copy of the relation's Google Play rows, made from `playRowsTable` as the App
    /// Store's copies are made (NightDecide's SourceCopies.swift): the first row of each key with
    /// its problems, the rows with one moved to `bad_<copy>`, the duplicated keys in `dk_<copy>`.
    /// The products, a handful of rows, have none.
    package var playCopyTable: String? {
        switch self {
        case .products: return nil
        case .orders: return "gp_o"
        case .receipts: return "gp_r"
        case .grants: return "gp_g"
        }
    }

    /// The night's table of the relation's rows of no store (`store` null, or neither store):
    /// input errors, made beside `playRowsTable`.
    package var noStoreTable: String { "no_store_" + rawValue }

    /// The key column as an identifier.
    package var keySQL: SQL { "\(ident: key)" }

    /// The relation as an identifier (the caller puts the source schema before it).
    package var name: SQL { "\(ident: rawValue)" }

    /// Which row of a duplicated key is used: the first by these columns.
    package var firstRowOrder: SQL {
        switch self {
        case .products: return "product_type, bundle_id"
        case .orders: return "user_id, product_id, quantity, status, transaction_id, created_at"
        case .receipts: return "submitted_at, user_id, receipt_data"
        case .grants:
            return "user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at, revoked_at"
        }
    }

    /// Orders and grants name a product, which must have a valid row in `iap_products`.
    var namesProduct: Bool { self == .orders || self == .grants }

    /// A product row's list price is usable (contract §1 `price`, `currency`): 0 or more, below
    /// 10^12, in a currency of three upper-case letters. Any other value counts as no price.
    package static let usablePrice: SQL = "price >= 0 AND price < 1e12 AND currency::text ~ '^[A-Z]{3}$'"

    /// A product row's list price as `list_milli` (milliunits of one unit) and `list_currency`;
    /// nulls when the relation has no price columns (`present`) or the price is not usable.
    package static func listPriceColumns(present: Bool) -> SQL {
        guard present else { return "NULL::bigint AS list_milli, NULL::text AS list_currency" }
        return "CASE WHEN \(usablePrice) THEN round(price * 1000)::bigint END AS list_milli, "
            + "CASE WHEN \(usablePrice) THEN currency::text END AS list_currency"
    }

    /// `play_known_products` made anew as `table` (the night's, or `pg_temp.play_known_products`,
    /// `temporary`, for `lookup`, which must never touch the night's): every Google Play product id
    /// of the views in `views`, with whether its first row is valid (the product checks of Play's
    /// orders and grants, as `kp`).
    package static func playKnownProductsSQL(views: SQL, table: SQL, temporary: Bool) -> SQL {
        let create: SQL = temporary ? "TEMPORARY TABLE \(table)" : "UNLOGGED TABLE \(table) WITH (autovacuum_enabled = false)"
        return """
            DROP TABLE IF EXISTS \(table);
            CREATE \(create) AS
                SELECT DISTINCT ON (product_id) product_id,
                       coalesce(product_type IN \(productTypes), false) AS valid
                FROM \(views).iap_products WHERE product_id IS NOT NULL
                ORDER BY product_id, \(SourceRelation.products.firstRowOrder);
            ANALYZE \(table);
            """
    }

    /// The product types a valid product row names.
    package static let productTypes: SQL = "('consumable', 'non_consumable', 'auto_renewable', 'non_renewing')"

    /// Every column the contract does not mark `null`, with the problem a row may have there.
    /// `dataFormLater`: the receipts' `receipt_data` is checked here only for null, and the caller
    /// checks its form (`ReceiptSelection.kind(ofCandidate:)`, equal to `is_base64` and `is_jws`).
    /// `store`: Google Play's rows are checked as Play's (`receipt_data` a purchase token, not a
    /// receipt), and each problem says `google_play: ` first (their keys are Play's own).
    package func checks(jobSchema: JobSchema, dataFormLater: Bool = false, store: SourceStore = .appStore) -> [Check] {
        let checks = appStoreChecks(jobSchema: jobSchema, dataFormLater: dataFormLater)
        guard store == .googlePlay else { return checks }
        return checks.map { check in
            var problem = check.problem
            if self == .receipts, check.column == "receipt_data" {
                problem = """
                    CASE WHEN x.receipt_data IS NULL THEN 'receipt_data is null'
                         WHEN NOT \(Self.isPurchaseToken("x.receipt_data")) THEN 'receipt_data is not a Google Play purchase token (1 to 2,048 letters, digits, ".", "-", "_")' END
                    """
            }
            return Check(column: check.column, problem: "('google_play: ' || (\(problem)))")
        }
    }

    /// SQL predicate: the text is a Google Play purchase token as `PlayPaths.isPurchaseToken` checks it.
    package static func isPurchaseToken(_ column: SQL) -> SQL {
        "(\(column)::text ~ '^[A-Za-z0-9._-]+$' AND octet_length(\(column)::text) <= 2048)"
    }

    private func appStoreChecks(jobSchema: JobSchema, dataFormLater: Bool) -> [Check] {
        func notNull(_ column: String) -> Check {
            Check(column: column, problem: "CASE WHEN x.\(ident: column) IS NULL THEN \(literal: .text(column + " is null")) END")
        }
        let product = Check(
            column: "product_id",
            problem: """
                CASE WHEN x.product_id IS NULL THEN 'product_id is null'
                     WHEN kp.product_id IS NULL THEN 'unknown product_id ' || x.product_id
                     WHEN NOT kp.valid THEN 'product_id ' || x.product_id || ' has no valid row in iap_products' END
                """)
        let quantity = Check(
            column: "quantity",
            problem: """
                CASE WHEN x.quantity IS NULL THEN 'quantity is null'
                     WHEN x.quantity < 1 THEN 'quantity ' || x.quantity || ' is below 1' END
                """)
        switch self {
        case .products:
            return [
                notNull("product_id"),
                Check(
                    column: "product_type",
                    problem: """
                        CASE WHEN x.product_id IS NOT NULL AND (x.product_type IS NULL OR x.product_type NOT IN \(Self.productTypes))
                             THEN 'product_type ' || coalesce(x.product_type, '(null)') || ' is not one of consumable, non_consumable, auto_renewable, non_renewing' END
                        """),
            ]
        case .orders:
            return [notNull("order_id"), notNull("user_id"), product, quantity, notNull("status"), notNull("created_at")]
        case .receipts:
            if dataFormLater { return [notNull("receipt_id"), notNull("user_id"), notNull("receipt_data"), notNull("submitted_at")] }
            return [
                notNull("receipt_id"), notNull("user_id"),
                Check(
                    column: "receipt_data",
                    problem: """
                        CASE WHEN x.receipt_data IS NULL THEN 'receipt_data is null'
                             WHEN NOT \(Self.decodable("x.receipt_data", schema: jobSchema)) THEN 'receipt_data is neither base64 (an app receipt) nor a JWS (a signed transaction)' END
                        """), notNull("submitted_at"),
            ]
        case .grants:
            return [
                notNull("grant_id"), notNull("user_id"), product, quantity, notNull("transaction_id"),
                notNull("granted_at"),
            ]
        }
    }

    /// SQL boolean over `x` (and `kp`): the row has at least one problem.
    package func hasProblem(jobSchema: JobSchema, dataFormLater: Bool = false, store: SourceStore = .appStore) -> SQL {
        "(\(checks(jobSchema: jobSchema, dataFormLater: dataFormLater, store: store).map { "(\($0.problem)) IS NOT NULL" as SQL }.joined(separator: " OR ")))"
    }

    /// `FROM` text: `relation` as `x`, joined to the known products as `kp` where the checks need them.
    package func from(_ relation: SQL, store: SourceStore = .appStore) -> SQL { "\(relation) x\(productJoin(store))" }

    /// The join to the known products (as `kp`) that the checks of `x` need, or nothing.
    package var productJoin: SQL { productJoin(.appStore) }

    /// The join to the known products of `store`'s rows (as `kp`), or nothing.
    package func productJoin(_ store: SourceStore) -> SQL {
        namesProduct ? " LEFT JOIN \(store.knownProducts) kp ON kp.product_id = x.product_id" : ""
    }

    /// SQL bigint: the timestamptz `column` as UNIX milliseconds, rounded half away from zero: the
    /// value of `(extract(epoch FROM column) * 1000)::bigint`, which is exact but computes in
    /// numeric. Between 1970-01-02 and 2041-01-01 (any time zone) the same value comes from
    /// float8: `date_part` divides the whole microseconds (below 2^51 there) by 10^6, so times
    /// 10^6 it is within a quarter of them and the cast recovers them exactly; the rounding to
    /// milliseconds is then integer arithmetic. Other times (and null, and infinity, which fails
    /// as before) take the numeric path. Faster in the copies (docs/benchmarks.md, "Measured
    /// choices"); checked equal on millions of times, half of them at .5 ms, and in IntegrationTests.
    package static func epochMilliseconds(_ column: SQL) -> SQL {
        "CASE WHEN \(column) >= '1970-01-02' AND \(column) < '2041-01-01' "
            + "THEN ((date_part('epoch', \(column)) * 1000000::float8)::bigint + 500) / 1000 "
            + "ELSE (extract(epoch FROM \(column)) * 1000)::bigint END"
    }

    /// SQL predicate: the text is non-empty standard base64 (an app receipt; whitespace allowed, as
    /// clients send it) or a JWS in compact form (a StoreKit 2 signed transaction). The two forms
    /// are disjoint: base64 has no dot, a JWS has two. So a text with a dot is asked the JWS
    /// question alone, one without the base64 one: `is_base64` of a JWS missed its fast pattern
    /// and translated the whole text twice.
    static func decodable(_ column: SQL, schema: JobSchema) -> SQL {
        "(CASE WHEN \(hasDot(column)) THEN \(schema.sql).is_jws(\(column)) "
            + "ELSE coalesce(\(schema.sql).is_base64(\(column)), false) END)"
    }

    /// SQL predicate: the text holds a `.`. Postgres's substring search finds none in base64 at
    /// memchr's speed and then hands the text back as it is, without a copy (LIKE, tried, scans
    /// byte by byte and slowed the night's check of a million receipts). Where it finds one,
    /// `strpos` counted the characters before it to give a position (2,400 of them in a JWS, a
    /// third of the candidates query of `make bench-sk2`); `replace` copies the text instead, and
    /// the lengths compare in bytes.
    package static func hasDot(_ column: SQL) -> SQL {
        "octet_length(replace(\(column), '.', '')) < octet_length(\(column))"
    }

    /// One row per key of a source relation, cheaply: rows whose key is unique pass as they are
    /// (a hash of the key column only); the few keys that occur twice or more keep their first
    /// row by `firstRowOrder` (contract: a duplicated key is an input error, and one row is used).
    /// The duplicated keys are found once (a materialized CTE both branches read): written twice,
    /// the second branch hashed every row of the relation to find none, before the verify
    /// stage's first candidate could leave (90 ms of 300 at 57,652 receipts).
    package func firstRowPerKey(_ relation: SQL) -> SQL {
        let key = keySQL
        return """
            (WITH duplicated AS MATERIALIZED (
                 SELECT \(key) FROM \(relation) WHERE \(key) IS NOT NULL GROUP BY \(key) HAVING count(*) > 1)
             SELECT * FROM \(relation) WHERE \(key) IS NOT NULL AND \(key) NOT IN (SELECT \(key) FROM duplicated)
             UNION ALL
             (SELECT DISTINCT ON (\(key)) * FROM \(relation) WHERE \(key) IN (SELECT \(key) FROM duplicated)
              ORDER BY \(key), \(firstRowOrder)))
            """
    }

    /// The rows the decisions use: the first row of each key, without problems (alias `x`).
    package func cleanRows(_ relation: SQL, jobSchema: JobSchema, dataFormLater: Bool = false, store: SourceStore = .appStore) -> SQL {
        "(SELECT x.* FROM \(from(firstRowPerKey(relation), store: store)) WHERE NOT \(hasProblem(jobSchema: jobSchema, dataFormLater: dataFormLater, store: store)))"
    }
}
