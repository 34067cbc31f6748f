import AppStore
import Postgres
import Reconciliation

// Whose purchase a transaction is when no upload showed it (docs/rules.md "Whose purchase"):
// learned from the App Store Server API alone (notification or transaction history), it belongs
// to the order its appAccountToken names, else to the user on whose behalf transaction history
// returned it, else to the earliest uploader or grantee of its family.
extension DecideStage {
    /// `token_orders(token, order_id)`: the appAccountToken each order stands for. Order ids that
    /// are UUIDs stand for themselves (any case); with `--account-token-namespace`, every order
    /// created from a day before the window on stands for the UUIDv5 of its id in the namespace.
    /// Of the orders that stand for themselves only those a transaction to attribute names are
    /// kept (`who` reads no other): Postgres hashes those few tokens and, when there are none (no
    /// Server API sweep learned a transaction), reads no order at all. Testing every order id
    /// against the UUID pattern took up to a second, on the path before the `T` query.
    func prepareTokenOrders(_ db: PGConnection) throws {
        try db.execute("DROP TABLE IF EXISTS token_orders; CREATE \(newTable("token_orders", " (token text, order_id text)"))")
        if let namespace = settings.accountTokenNamespace {
            var orders: [String] = []
            try db.copyOut(
                """
                COPY (SELECT order_id FROM o WHERE created_ms >= \(literal: .int(settings.windowStart - 86_400_000))) TO STDOUT
                """
            ) { line in
                if let id = CopyText.fields(line).first ?? nil { orders.append(id) }
            }
            try db.copyIn("COPY token_orders FROM STDIN") { w in
                for id in orders {
                    if let token = AccountToken.nameBased(namespace: namespace, name: id) { try w.row([token, id]) }
                }
            }
        }
        try db.execute(
            """
            INSERT INTO token_orders SELECT token, order_id FROM (
                SELECT lower(o.order_id) AS token, o.order_id FROM o
                WHERE lower(o.order_id) IN (SELECT lower(t.app_account_token) FROM \(appleTransactions) t
                                            WHERE \(Self.attributedSources) AND t.app_account_token IS NOT NULL)
                OFFSET 0  -- a fence: the pattern is tested on the few orders named, not on every order
            ) named
            WHERE length(order_id) = 36 AND order_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
            ANALYZE token_orders;
            """)
    }

    /// The transactions (`t`) learned from the Server API alone, whose purchase `who` attributes.
    static let attributedSources: SQL = "t.source IN ('notification', 'transaction_history')"

    /// `who`: for each transaction learned from the Server API alone, its token order and its user.
    var attributionSQL: SQL {
        """
        DROP TABLE IF EXISTS who;
        CREATE \(newTable("who")) AS
        WITH needs AS (
            SELECT transaction_id, environment, original_transaction_id, lower(app_account_token) AS token, history_user_id
            FROM \(appleTransactions) t WHERE \(Self.attributedSources)
        ), keys AS (
            SELECT DISTINCT original_transaction_id AS okey FROM needs
        ), family_ids AS (
            SELECT t.original_transaction_id AS okey, t.transaction_id AS tid
            FROM \(appleTransactions) t JOIN keys k ON k.okey = t.original_transaction_id
            UNION SELECT okey, okey FROM keys
        ), family_user AS (
            SELECT DISTINCT ON (okey) okey, user_id FROM (
                SELECT f.okey, r.user_id, 0 AS k, r.submitted_ms AS at, r.receipt_id AS id
                FROM family_ids f JOIN r ON r.transaction_id = f.tid
                UNION ALL
                SELECT f.okey, g.user_id, 1, g.granted_ms, g.grant_id FROM family_ids f JOIN g ON g.transaction_id = f.tid
                UNION ALL
                SELECT f.okey, g.user_id, 1, g.granted_ms, g.grant_id FROM family_ids f JOIN g ON g.original_transaction_id = f.tid
            ) x ORDER BY okey, k, at, id COLLATE "C"
        )
        SELECT DISTINCT ON (n.transaction_id, n.environment) n.transaction_id, n.environment,
               tk.order_id AS token_order_id, tk.user_id AS token_user_id, tk.product_id AS token_product_id,
               tk.created_ms AS token_created_ms, coalesce(tk.user_id, n.history_user_id, fu.user_id) AS user_id
        FROM needs n
        LEFT JOIN token_orders tko ON tko.token = n.token
        LEFT JOIN o tk ON tk.order_id = tko.order_id
        LEFT JOIN family_user fu ON fu.okey = n.original_transaction_id
        ORDER BY n.transaction_id, n.environment, tk.created_ms, tk.order_id COLLATE "C";
        CREATE INDEX ON who (transaction_id);
        ANALYZE who;
        """
    }
}
