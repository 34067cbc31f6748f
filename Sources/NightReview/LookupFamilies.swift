import AppStore
import Foundation
import JobStore
import Logging
import NightDecide
import NightLearn
import Postgres
import Reconciliation

/// `lookup` decides as the night does, through the night's own SQL and
/// rules: for the families of the transactions Apple returned, it copies the source rows those
/// families read into temporary tables, runs the decide stage's statements over them in the
/// `lookup` scope (`DecideStage.Scope`: temporary tables, the families' Apple transactions in
/// `pg_temp.lk_apple`), reads the same `T` and `G` rows and hands each family to `Decide.family`.
/// A compensation without an exact order gets the inferred match of the night, which crosses
/// families: the other purchases of the same user and product, and the purchases whose exact
/// order is one of that user's open orders, are decided too (a second pass).
///
/// Everything happens in one REPEATABLE READ transaction on one session that is rolled back: the
/// job schema and the source relations are only read. The session's search path is `pg_temp`
/// alone, so no statement of the stage can reach the night's working tables by their short names.
///
/// The source rows are read on `source`: the same session without `SOURCE_DATABASE_URL`, else a
/// session on the source database in a read-only snapshot of its own (`SourceDatabase.open`).
/// So no statement joins a source relation with a table of the job schema: what one side needs
/// of the other travels as array parameters, and the rows read are copied into the temporary
/// tables of the job's session (`mirror`).
package struct LookupFamilies {
    let db: PGConnection
    let source: PGConnection
    let settings: JobSettings
    let stage: DecideStage
    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }

    /// `source`: where the source relations are read (nil: `db`).
    package init(db: PGConnection, source: PGConnection? = nil, settings: JobSettings) {
        self.db = db
        self.source = source ?? db
        self.settings = settings
        // The stage reads `iap_products` from its source schema: with SOURCE_DATABASE_URL, the
        // products mirrored into `pg_temp` (`gatherRows`).
        var stageSettings = settings
        if self.source !== db { stageSettings.sourceSchema = "pg_temp" }
        stage = DecideStage(settings: stageSettings, runID: 0, logger: Logger(label: "lookup"), scope: .lookup)
    }

    /// What the rules say of the families of `transactions`.
    package struct Decided {
        /// The families decided, by family key, and what the rules said of each.
        package var families: [String: Family] = [:]
        /// The rules' decision of each family, by family key.
        package var decisions: [String: FamilyDecision] = [:]
        /// The inferred order of each compensation without an exact order, by transaction id and
        /// environment; absent: `none`.
        var inferred: [String: OrderRef] = [:]

        static func key(_ transactionID: String, _ environment: AppStoreEnvironment) -> String {
            transactionID + "|" + environment.rawValue
        }

        /// The inferred order of a compensation without an exact order.
        package func inferredOrder(_ transactionID: String, _ environment: AppStoreEnvironment) -> OrderRef? {
            inferred[Self.key(transactionID, environment)]
        }

        /// The family holding grants of `transactionID` that Apple never showed the job (no
        /// transaction of the family has that id), and its decision.
        package func family(ofGrantsOf transactionID: String) -> (Family, FamilyDecision)? {
            for (key, family) in families
            where family.grants.contains(where: { $0.grant.transactionID == transactionID })
                && !family.transactions.contains(where: { $0.transaction.transactionID == transactionID })
            {
                if let decision = decisions[key] { return (family, decision) }
            }
            return nil
        }

        /// The family holding `transactionID` in `environment`, and its decision.
        package func family(of transactionID: String, _ environment: AppStoreEnvironment) -> (Family, FamilyDecision)? {
            for (key, family) in families
            where family.transactions.contains(where: {
                $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
            }) {
                if let decision = decisions[key] { return (family, decision) }
            }
            return nil
        }
    }

    /// `transactions`: what Apple answered now (merged into what the nights learned); `keys`: more
    /// family keys (original transaction ids, or a grant's own ids) to decide beside theirs.
    package func decide(_ transactions: [SignedTransaction], keys: Set<String> = []) throws -> Decided {
        guard !transactions.isEmpty || !keys.isEmpty else { return Decided() }
        let decisionSettings = settings.decisionSettings
        try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = pg_temp; SET LOCAL jit = off")
        defer { try? db.execute("ROLLBACK") }
        let seeds = Set(transactions.map(\.transaction.originalTransactionID)).union(keys)
        var decided = try pass(keys: seeds, fresh: transactions, userProducts: [], settings: decisionSettings)
        // The inferred match crosses families: the users and products of compensations without an
        // exact order are decided again with every family that may compete for their open orders.
        let needInference = Set(
            decided.decisions.values.flatMap(\.compensations).filter { $0.exactOrder == nil }
                .map { UserProduct(user: $0.userID, product: $0.transaction.productID) })
        guard !needInference.isEmpty else { return decided }
        var keys = seeds
        for up in needInference { keys.formUnion(try competingKeys(up)) }
        try db.execute("DISCARD TEMP")
        decided = try pass(keys: keys, fresh: transactions, userProducts: needInference, settings: decisionSettings)
        let all = decided.decisions.values.flatMap(\.compensations)
        let exactlyMatched = Set(all.compactMap { $0.exactOrder?.orderID })
        for up in needInference {
            let purchases = all.filter { $0.exactOrder == nil && $0.userID == up.user && $0.transaction.productID == up.product }
                .sorted {
                    ($0.transaction.purchaseDate, $0.transaction.transactionID, $0.transaction.environment.rawValue)
                        < ($1.transaction.purchaseDate, $1.transaction.transactionID, $1.transaction.environment.rawValue)
                }
            let open = try openOrders(up).filter { !exactlyMatched.contains($0.orderID) }
            let matched = Decide.inferOrders(
                userID: up.user, productID: up.product,
                purchases: purchases.map(\.transaction.purchaseDate), openOrders: open)
            for (c, order) in zip(purchases, matched) {
                guard let order else { continue }
                decided.inferred[Decided.key(c.transaction.transactionID, c.transaction.environment)] =
                    OrderRef(orderID: order.orderID, userID: order.userID, productID: order.productID, createdAt: order.createdAt)
            }
        }
        return decided
    }

    /// The families of `keys`, decided in one pass, for `check`'s counts of what tonight would list:
    /// without the inferred match, which names an order for a compensation and adds no row.
    func decideOnce(keys: Set<String>) throws -> Decided {
        guard !keys.isEmpty else { return Decided() }
        try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = pg_temp; SET LOCAL jit = off")
        defer { try? db.execute("ROLLBACK") }
        return try pass(keys: keys, fresh: [], userProducts: [], settings: settings.decisionSettings)
    }

    /// A user and a product: the families an inferred order match compares.
    package struct UserProduct: Hashable {
        /// The user id of the source.
        package var user: String
        /// The product.
        package var product: String

        /// The pair.
        package init(user: String, product: String) { (self.user, self.product) = (user, product) }
    }

    // MARK: One pass: the families of `keys`

    private func pass(
        keys: Set<String>, fresh: [SignedTransaction], userProducts: Set<UserProduct>,
        settings decisionSettings: DecisionSettings
    ) throws -> Decided {
        try gatherRows(keys: keys, fresh: fresh, userProducts: userProducts)
        let products = try stage.prepareInOrder(db, sources: { "pg_temp.\(ident: "lk_" + $0.rawValue)" })
        // Every family is sent: the night leaves out only families it proves quiet, whose verdict
        // the rules give all the same.
        try db.execute(stage.everyKeyCrowdedSQL)
        var decided = Decided()
        decided.families = try stage.allFamilies(db, products: products)
        for (key, family) in decided.families {
            decided.decisions[key] = Decide.family(family, settings: decisionSettings)
        }
        return decided
    }

    /// The source rows the families of `keys` read, as `pg_temp.lk_<relation>` (every row of each
    /// key taken, so that a duplicated key keeps the night's first row), and their Apple
    /// transactions as `pg_temp.lk_apple`: what earlier nights learned, merged with what Apple
    /// answered now by the night's own merge (`learn_transactions`), as learned from the Server API.
    private func gatherRows(keys: Set<String>, fresh: [SignedTransaction], userProducts: Set<UserProduct>) throws {
        // Parameters travel in INSERTs (CREATE TABLE AS takes none).
        try db.execute("CREATE TEMPORARY TABLE lk_keys (k text PRIMARY KEY)")
        try db.query("INSERT INTO lk_keys SELECT DISTINCT unnest(\(keys.sorted())::text[])")
        try db.execute(
            """
            CREATE TEMPORARY TABLE lk_apple (LIKE \(S).apple_transactions INCLUDING DEFAULTS);
            INSERT INTO lk_apple SELECT * FROM \(S).apple_transactions WHERE original_transaction_id IN (SELECT k FROM lk_keys);
            ALTER TABLE lk_apple ADD PRIMARY KEY (transaction_id, environment)
            """)
        // One at a time, in order, as learn_transactions merges: the same transaction twice merges.
        let encoder = JSONEncoder()
        for signed in fresh {
            let item = LearnTransactions.Item(signed, source: .transactionHistory)
            let json = String(decoding: try encoder.encode(item), as: UTF8.self)
            try db.query(
                AppleTransactionColumns.learnSQL(into: "pg_temp.lk_apple", element: "\(json)::jsonb", schema: settings.jobSchema))
        }
        let users = userProducts.sorted { ($0.user, $0.product) < ($1.user, $1.product) }
        try db.execute("CREATE TEMPORARY TABLE lk_user_products (user_id text, product_id text)")
        try db.query("INSERT INTO lk_user_products SELECT * FROM unnest(\(users.map(\.user))::text[], \(users.map(\.product))::text[])")
        if source !== db { try mirror("iap_products", .products, where: "true") }
        try db.execute("CREATE TEMPORARY TABLE lk_ids AS SELECT transaction_id AS id FROM lk_apple UNION SELECT k FROM lk_keys")
        let ids = try column(db, "SELECT id FROM lk_ids")
        try mirror(
            "lk_iap_grants", .grants,
            where: """
                grant_id IN (SELECT grant_id FROM \(src).iap_grants
                             WHERE transaction_id = ANY(\(ids)::text[]) OR original_transaction_id = ANY(\(ids)::text[]))
                """)
        let transactions = ids + (try column(db, "SELECT transaction_id FROM lk_iap_grants"))
        let grantOrders = try column(db, "SELECT order_id FROM lk_iap_grants")
        let knownReceipts = try column(
            db,
            """
            SELECT receipt_id FROM \(S).receipt_transactions WHERE transaction_id IN (SELECT id FROM lk_ids)
            """)
        try mirror(
            "lk_iap_receipts", .receipts,
            where: """
                receipt_id IN (SELECT receipt_id FROM \(src).iap_receipts
                               WHERE transaction_id = ANY(\(transactions)::text[]) OR order_id = ANY(\(grantOrders)::text[])
                               UNION SELECT unnest(\(knownReceipts)::text[]))
                """)
        let tokenOrders = try namespaceTokenOrders()
        let tokens = try column(db, "SELECT DISTINCT lower(app_account_token) FROM lk_apple WHERE app_account_token IS NOT NULL")
        let receiptOrders = try column(db, "SELECT order_id FROM lk_iap_receipts")
        try mirror(
            "lk_iap_orders", .orders,
            where: """
                order_id IN (SELECT order_id FROM \(src).iap_orders
                             WHERE transaction_id = ANY(\(transactions)::text[])
                                OR lower(order_id) = ANY(\(tokens)::text[])
                                OR (user_id, product_id) IN (SELECT * FROM unnest(\(users.map(\.user))::text[], \(users.map(\.product))::text[]))
                             UNION SELECT unnest(\(receiptOrders)::text[])
                             UNION SELECT unnest(\(tokenOrders)::text[]))
                """)
    }

    /// The first column of a query's rows, nulls left out.
    private func column(_ session: PGConnection, _ sql: SQL) throws -> [String] {
        try session.query(sql).rows.compactMap { $0[0] }
    }

    /// `pg_temp.<table>`: the rows of the source relation that `condition` (over its columns,
    /// binding values) selects, every column. On one database, by `CREATE TABLE AS` and `INSERT`;
    /// with `SOURCE_DATABASE_URL`, read there (the columns as `SourceDatabase.columns` gives them)
    /// and written here by COPY. A handful of families' rows: held in memory on the way.
    private func mirror(_ table: String, _ relation: SourceRelation, where condition: SQL) throws {
        let name: SQL = "pg_temp.\(ident: table)", from: SQL = "\(src).\(ident: relation.rawValue)"
        guard source !== db else {
            try db.execute("CREATE TEMPORARY TABLE \(ident: table) AS SELECT * FROM \(from) WITH NO DATA")
            try db.query("INSERT INTO \(name) SELECT * FROM \(from) WHERE \(condition)")
            return
        }
        let columns = try SourceDatabase.columns(source, schema: settings.sourceSchema, relation: relation.rawValue)
        try db.execute("CREATE TEMPORARY TABLE \(ident: table) (\(SourceDatabase.definitions(columns)))")
        let rows = try source.query("SELECT \(SourceDatabase.selectList(columns)) FROM \(from) WHERE \(condition)")
        guard rows.rowCount > 0 else { return }
        try db.copyIn("COPY \(name) FROM STDIN") { writer in
            for i in 0..<rows.rowCount { try writer.row((0..<rows.columnCount).map { rows.value(i, $0) }) }
        }
    }

    /// With `--account-token-namespace`: the orders whose name-based token one of `lk_apple`'s
    /// transactions carries. A name-based UUID cannot be inverted, so the orders the night hashes
    /// (created from a day before the window on) are hashed here too; a day more is read, and
    /// `prepareTokenOrders` keeps the night's bound.
    private func namespaceTokenOrders() throws -> [String] {
        guard let namespace = settings.accountTokenNamespace else { return [] }
        let tokens = try db.query("SELECT DISTINCT lower(app_account_token) FROM lk_apple WHERE app_account_token IS NOT NULL")
        let wanted = Set(tokens.rows.compactMap { $0[0] })
        guard !wanted.isEmpty else { return [] }
        var found: [String] = []
        let from = SQLLiteral.timestamptz(UTC.timestamp(settings.windowStart - 2 * 86_400_000))
        try source.copyOut("COPY (SELECT order_id FROM \(src).iap_orders WHERE created_at >= \(literal: from)) TO STDOUT") { line in
            if let id = CopyText.fields(line).first ?? nil, let token = AccountToken.nameBased(namespace: namespace, name: id),
                wanted.contains(token)
            {
                found.append(id)
            }
        }
        return found
    }

    // MARK: The inferred match across families

    /// The family keys of every production purchase of `up.product` in the window that may be
    /// `up.user`'s (docs/rules.md "Whose purchase": a receipt the user uploaded, the user's
    /// transaction history, a token of one of the user's orders, a family the user's uploads or
    /// grants name), and of every purchase whose exact order may be one of the user's orders of
    /// that product (a receipt naming it, or its token). A superset: the rules decide.
    package func competingKeys(_ up: UserProduct) throws -> Set<String> {
        // The user's side from the source relations, then Apple's side from the job schema.
        let orders = try source.query(
            """
            SELECT lower(order_id), order_id FROM \(src).iap_orders WHERE user_id = \(up.user) AND order_id IS NOT NULL
            """
        ).rows
        var tokens = orders.compactMap { $0[0] }
        if let namespace = settings.accountTokenNamespace {
            tokens += orders.compactMap { $0[1].flatMap { AccountToken.nameBased(namespace: namespace, name: $0) } }
        }
        let userIDs = try column(
            source,
            """
            SELECT transaction_id FROM \(src).iap_grants WHERE user_id = \(up.user)
            UNION SELECT original_transaction_id FROM \(src).iap_grants WHERE user_id = \(up.user)
            UNION SELECT transaction_id FROM \(src).iap_receipts WHERE user_id = \(up.user)
            """)
        let userReceipts = try column(source, "SELECT receipt_id FROM \(src).iap_receipts WHERE user_id = \(up.user)")
        let orderReceipts = try column(
            source,
            """
            SELECT receipt_id FROM \(src).iap_receipts
            WHERE order_id IN (SELECT order_id FROM \(src).iap_orders WHERE user_id = \(up.user) AND product_id = \(up.product))
            """)
        let result = try db.query(
            """
            WITH user_receipts AS (
                SELECT transaction_id FROM \(S).receipt_transactions WHERE receipt_id = ANY(\(userReceipts)::text[])
            ), order_receipts AS (
                SELECT transaction_id FROM \(S).receipt_transactions WHERE receipt_id = ANY(\(orderReceipts)::text[])
            )
            SELECT DISTINCT t.original_transaction_id FROM \(S).apple_transactions t
            WHERE (t.product_id = \(up.product) AND t.environment = 'production' AND t.purchase_date_ms BETWEEN \(settings.windowStart)::bigint AND \(settings.asOf)::bigint
                   AND (t.history_user_id = \(up.user)
                        OR t.transaction_id IN (SELECT transaction_id FROM user_receipts)
                        OR lower(t.app_account_token) = ANY(\(tokens)::text[])
                        OR t.original_transaction_id = ANY(\(userIDs)::text[])
                        OR t.original_transaction_id IN (SELECT a.original_transaction_id FROM \(S).apple_transactions a
                                                         WHERE a.transaction_id = ANY(\(userIDs)::text[]))))
               OR t.transaction_id IN (SELECT transaction_id FROM order_receipts)
               OR lower(t.app_account_token) = ANY(\(tokens)::text[])
            """)
        return Set(result.rows.compactMap { $0[0] })
    }

    /// The open orders of a user and product (`o`, the clean copy), as the night's spool reads them.
    private func openOrders(_ up: UserProduct) throws -> [Order] {
        let r = try db.query(
            """
            SELECT order_id, quantity::text, created_ms::text FROM o
            WHERE user_id = \(up.user) AND product_id = \(up.product) AND transaction_id IS NULL AND status <> 'delivered'
            """)
        return r.rows.compactMap { row in
            guard let id = row[0], let at = row[2].flatMap({ Int64($0) }) else { return nil }
            return Order(
                orderID: id, userID: up.user, productID: up.product, quantity: row[1].flatMap { Int($0) } ?? 1,
                status: "open", transactionID: nil, createdAt: at)
        }
    }
}
