import AppStore
import Postgres
import Reconciliation

// Whose purchase a transaction is when no upload showed it (docs/rules.md "Whose purchase"):
// learned from the App Store Server API alone (notification or transaction history), it belongs
// to the order its appAccountToken names, else to the user on whose behalf transaction history
// returned it, else to the earliest uploader or grantee of its family. And refunds.csv, which is
// a set operation over what the job learned and the grants, so it is plain SQL.
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

    /// refunds.csv into `{S}.current_findings` (contract §6): every production transaction with a
    /// refund (a verifyReceipt cancellation, or a signed revocation that is not FAMILY_REVOKE)
    /// whose revocation or reversal date lies in the refund window.
    var refundsSQL: SQL {
        let window: SQL = "BETWEEN \(settings.refundWindowStart)::bigint AND \(settings.asOf)::bigint"
        return """
            INSERT INTO \(S).current_findings (report, finding_key, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14)
            WITH refunded AS (
                SELECT t.*, coalesce(t.cancellation_date_ms,
                                     CASE WHEN t.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE' THEN t.revocation_date_ms END) AS rev_ms
                FROM \(S).apple_transactions t WHERE t.environment = 'production'
            ), sel AS (
                SELECT *, (reversed_date_ms IS NOT NULL AND reversed_date_ms >= rev_ms) AS reversed,
                       CASE WHEN price_milliunits IS NOT NULL THEN price_milliunits END AS apple_milli
                FROM refunded WHERE rev_ms IS NOT NULL AND (rev_ms \(window) OR reversed_date_ms \(window))
            ), uploader AS (
                SELECT DISTINCT ON (rt.transaction_id) rt.transaction_id, r.user_id
                FROM sel JOIN \(S).receipt_transactions rt ON rt.transaction_id = sel.transaction_id AND rt.environment = 'production'
                JOIN r ON r.receipt_id = rt.receipt_id
                ORDER BY rt.transaction_id, r.submitted_ms, r.receipt_id COLLATE "C"
            ), granted AS (
                SELECT g.transaction_id, string_agg(g.grant_id, ' ' ORDER BY g.grant_id COLLATE "C") AS ids,
                       count(*) FILTER (WHERE g.revoked_ms IS NULL) AS active,
                       (array_agg(g.user_id ORDER BY g.granted_ms, g.grant_id COLLATE "C"))[1] AS first_user
                -- a semi-join, so that Postgres hashes the few refunds and scans the grants, not the
                -- other way round (sel is one row per transaction id: production only)
                FROM g WHERE g.transaction_id IN (SELECT transaction_id FROM sel) GROUP BY g.transaction_id
            ), priced AS (
                SELECT sel.*, coalesce(sel.apple_milli, p.list_milli * sel.quantity) AS amount_milli,
                       CASE WHEN sel.apple_milli IS NOT NULL THEN sel.currency ELSE p.list_currency END AS amount_currency,
                       p.product_type, u.user_id AS uploader, w.user_id AS attributed, gr.ids, gr.active, gr.first_user
                FROM sel LEFT JOIN p ON p.product_id = sel.product_id
                LEFT JOIN uploader u ON u.transaction_id = sel.transaction_id
                LEFT JOIN who w ON w.transaction_id = sel.transaction_id AND w.environment = 'production'
                LEFT JOIN granted gr ON gr.transaction_id = sel.transaction_id
            )
            SELECT 'refunds.csv', 'refund|' || transaction_id, transaction_id, original_transaction_id,
                   coalesce(uploader, attributed, first_user), product_id, product_type,
                   to_char(to_timestamp(rev_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   coalesce(revocation_reason::text, cancellation_reason), revocation_type, revocation_percentage::text,
                   \(S).money_in_units(amount_milli, amount_currency),
                   -- prorated: amount × percentage, exact, rounded once to the currency's minor unit
                   \(S).money_in_units(CASE WHEN revocation_percentage IS NULL THEN amount_milli
                                             ELSE amount_milli::numeric * revocation_percentage / 100000 END, amount_currency),
                   CASE WHEN amount_milli IS NOT NULL THEN amount_currency END,
                   CASE WHEN reversed THEN 'reversed' WHEN ids IS NULL THEN 'never_granted'
                        WHEN active = 0 THEN 'clawed_back' ELSE 'still_granted' END,
                   ids
            FROM priced
            """
    }
}
