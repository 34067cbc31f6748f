import AppStore
import Foundation
import Logging
import Postgres
import Reconciliation

/// `lookup` decides as the night does, through the night's own SQL and rules (issue "One rule
/// book"): for the families of the transactions Apple returned, it copies the source rows those
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
struct LookupFamilies {
    let db: PGConnection
    let settings: JobSettings
    let stage: DecideStage
    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }

    init(db: PGConnection, settings: JobSettings) {
        self.db = db
        self.settings = settings
        stage = DecideStage(settings: settings, runID: 0, logger: Logger(label: "lookup"), scope: .lookup)
    }

    /// What the rules say of the families of `transactions`.
    struct Decided {
        var families: [String: Family] = [:]
        var decisions: [String: FamilyDecision] = [:]
        /// The inferred order of each compensation without an exact order, by transaction id and
        /// environment; absent: `none`.
        var inferred: [String: OrderRef] = [:]

        static func key(_ transactionID: String, _ environment: AppStoreEnvironment) -> String {
            transactionID + "|" + environment.rawValue
        }

        func inferredOrder(_ transactionID: String, _ environment: AppStoreEnvironment) -> OrderRef? {
            inferred[Self.key(transactionID, environment)]
        }

        func family(of transactionID: String, _ environment: AppStoreEnvironment) -> (Family, FamilyDecision)? {
            for (key, family) in families where family.transactions.contains(where: {
                $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
            }) {
                if let decision = decisions[key] { return (family, decision) }
            }
            return nil
        }
    }

    func decide(_ transactions: [SignedTransaction]) throws -> Decided {
        guard !transactions.isEmpty else { return Decided() }
        let decisionSettings = settings.decisionSettings
        try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path = pg_temp; SET LOCAL jit = off")
        defer { try? db.execute("ROLLBACK") }
        let seeds = Set(transactions.map(\.transaction.originalTransactionID))
        var decided = try pass(keys: seeds, fresh: transactions, userProducts: [], settings: decisionSettings)
        // The inferred match crosses families: the users and products of compensations without an
        // exact order are decided again with every family that may compete for their open orders.
        let needInference = Set(decided.decisions.values.flatMap(\.compensations).filter { $0.exactOrder == nil }
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
            let matched = Decide.inferOrders(userID: up.user, productID: up.product,
                                             purchases: purchases.map(\.transaction.purchaseDate), openOrders: open)
            for (c, order) in zip(purchases, matched) {
                guard let order else { continue }
                decided.inferred[Decided.key(c.transaction.transactionID, c.transaction.environment)] =
                    OrderRef(orderID: order.orderID, userID: order.userID, productID: order.productID, createdAt: order.createdAt)
            }
        }
        return decided
    }

    struct UserProduct: Hashable {
        var user: String
        var product: String
    }

    // MARK: One pass: the families of `keys`

    private func pass(keys: Set<String>, fresh: [SignedTransaction], userProducts: Set<UserProduct>,
                      settings decisionSettings: DecisionSettings) throws -> Decided {
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
        try db.execute("""
            CREATE TEMPORARY TABLE lk_apple (LIKE \(S).apple_transactions INCLUDING DEFAULTS);
            INSERT INTO lk_apple SELECT * FROM \(S).apple_transactions WHERE original_transaction_id IN (SELECT k FROM lk_keys);
            ALTER TABLE lk_apple ADD PRIMARY KEY (transaction_id, environment);
            \(Migrations.learnTransactions.replacingOccurrences(of: "{S}.apple_transactions", with: "pg_temp.lk_apple")
                .replacingOccurrences(of: "{S}.learn_transactions", with: "pg_temp.learn_transactions")
                .replacingSchema(settings.jobSchema))
            """)
        let items = fresh.map { LearnTransactions.Item($0, source: .transactionHistory) }
        let json = String(decoding: try JSONEncoder().encode(items), as: UTF8.self)
        try db.query("SELECT pg_temp.learn_transactions(\(json)::jsonb)")
        let users = userProducts.sorted { ($0.user, $0.product) < ($1.user, $1.product) }
        try db.execute("CREATE TEMPORARY TABLE lk_user_products (user_id text, product_id text)")
        try db.query("INSERT INTO lk_user_products SELECT * FROM unnest(\(users.map(\.user))::text[], \(users.map(\.product))::text[])")
        try db.execute("""
            CREATE TEMPORARY TABLE lk_ids AS SELECT transaction_id AS id FROM lk_apple UNION SELECT k FROM lk_keys;
            CREATE TEMPORARY TABLE lk_iap_grants AS SELECT * FROM \(src).iap_grants WHERE grant_id IN (
                SELECT grant_id FROM \(src).iap_grants
                WHERE transaction_id IN (SELECT id FROM lk_ids) OR original_transaction_id IN (SELECT id FROM lk_ids));
            CREATE TEMPORARY TABLE lk_iap_receipts AS SELECT * FROM \(src).iap_receipts WHERE receipt_id IN (
                SELECT receipt_id FROM \(src).iap_receipts
                WHERE transaction_id IN (SELECT id FROM lk_ids UNION SELECT transaction_id FROM lk_iap_grants)
                   OR order_id IN (SELECT order_id FROM lk_iap_grants)
                UNION SELECT receipt_id FROM \(S).receipt_transactions WHERE transaction_id IN (SELECT id FROM lk_ids));
            """)
        let tokenOrders = try namespaceTokenOrders()
        try db.execute("CREATE TEMPORARY TABLE lk_iap_orders AS SELECT * FROM \(src).iap_orders WITH NO DATA")
        try db.query("""
            INSERT INTO lk_iap_orders SELECT * FROM \(src).iap_orders WHERE order_id IN (
                SELECT order_id FROM \(src).iap_orders
                WHERE transaction_id IN (SELECT id FROM lk_ids UNION SELECT transaction_id FROM lk_iap_grants)
                   OR lower(order_id) IN (SELECT lower(app_account_token) FROM lk_apple WHERE app_account_token IS NOT NULL)
                   OR (user_id, product_id) IN (SELECT user_id, product_id FROM lk_user_products)
                UNION SELECT order_id FROM lk_iap_receipts
                UNION SELECT unnest(\(tokenOrders)::text[]))
            """)
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
        try db.copyOut("COPY (SELECT order_id FROM \(src).iap_orders WHERE created_at >= \(literal: from)) TO STDOUT") { line in
            if let id = CopyText.fields(line).first ?? nil, let token = AccountToken.nameBased(namespace: namespace, name: id),
               wanted.contains(token) { found.append(id) }
        }
        return found
    }

    // MARK: The inferred match across families

    /// The family keys of every production purchase of `up.product` in the window that may be
    /// `up.user`'s (docs/rules.md "Whose purchase": a receipt the user uploaded, the user's
    /// transaction history, a token of one of the user's orders, a family the user's uploads or
    /// grants name), and of every purchase whose exact order may be one of the user's orders of
    /// that product (a receipt naming it, or its token). A superset: the rules decide.
    private func competingKeys(_ up: UserProduct) throws -> Set<String> {
        var tokens = try db.query("SELECT lower(order_id) FROM \(src).iap_orders WHERE user_id = \(up.user) AND order_id IS NOT NULL")
            .rows.compactMap { $0[0] }
        if let namespace = settings.accountTokenNamespace {
            let ids = try db.query("SELECT order_id FROM \(src).iap_orders WHERE user_id = \(up.user) AND order_id IS NOT NULL")
            tokens += ids.rows.compactMap { $0[0].flatMap { AccountToken.nameBased(namespace: namespace, name: $0) } }
        }
        let result = try db.query("""
            WITH user_ids AS (
                SELECT transaction_id AS id FROM \(src).iap_grants WHERE user_id = \(up.user)
                UNION SELECT original_transaction_id FROM \(src).iap_grants WHERE user_id = \(up.user)
                UNION SELECT transaction_id FROM \(src).iap_receipts WHERE user_id = \(up.user)
            ), user_receipts AS (
                SELECT rt.transaction_id FROM \(S).receipt_transactions rt
                JOIN \(src).iap_receipts r ON r.receipt_id = rt.receipt_id WHERE r.user_id = \(up.user)
            ), order_receipts AS (
                SELECT rt.transaction_id FROM \(S).receipt_transactions rt
                JOIN \(src).iap_receipts r ON r.receipt_id = rt.receipt_id
                WHERE r.order_id IN (SELECT order_id FROM \(src).iap_orders WHERE user_id = \(up.user) AND product_id = \(up.product))
            )
            SELECT DISTINCT t.original_transaction_id FROM \(S).apple_transactions t
            WHERE (t.product_id = \(up.product) AND t.environment = 'production' AND t.purchase_date_ms BETWEEN \(settings.windowStart)::bigint AND \(settings.asOf)::bigint
                   AND (t.history_user_id = \(up.user)
                        OR t.transaction_id IN (SELECT transaction_id FROM user_receipts)
                        OR lower(t.app_account_token) = ANY(\(tokens)::text[])
                        OR t.original_transaction_id IN (SELECT id FROM user_ids)
                        OR t.original_transaction_id IN (SELECT a.original_transaction_id FROM \(S).apple_transactions a
                                                         WHERE a.transaction_id IN (SELECT id FROM user_ids))))
               OR t.transaction_id IN (SELECT transaction_id FROM order_receipts)
               OR lower(t.app_account_token) = ANY(\(tokens)::text[])
            """)
        return Set(result.rows.compactMap { $0[0] })
    }

    /// The open orders of a user and product (`o`, the clean copy), as the night's spool reads them.
    private func openOrders(_ up: UserProduct) throws -> [Order] {
        let r = try db.query("""
            SELECT order_id, quantity::text, created_ms::text FROM o
            WHERE user_id = \(up.user) AND product_id = \(up.product) AND transaction_id IS NULL AND status <> 'delivered'
            """)
        return r.rows.compactMap { row in
            guard let id = row[0], let at = row[2].flatMap({ Int64($0) }) else { return nil }
            return Order(orderID: id, userID: up.user, productID: up.product, quantity: row[1].flatMap { Int($0) } ?? 1,
                         status: "open", transactionID: nil, createdAt: at)
        }
    }
}
