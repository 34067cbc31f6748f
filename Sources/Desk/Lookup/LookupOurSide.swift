import AppStore
import NightDecide
import NightLearn
import NightReview
import Postgres
import Reconciliation

/// What our data ties to the id asked: the transactions to list, the family keys to decide, the
/// orders asked about. Read on `source` (the source relations) and `db` (what the nights learned)
/// apart: no statement joins the two, as in LookupFamilies.
struct OurSide {
    /// Transaction ids listed whatever their verdict (`--our-order` also lists every decided
    /// transaction whose verdict names the order: a purchase of a receipt of the order, or one the
    /// inferred match gives it).
    var listed: Set<String> = []
    /// Transaction ids of grants listed when Apple never showed them.
    var grantOnly: Set<String> = []
    /// Family keys to decide: the originals of the listed transactions, the grants' own ids, and
    /// for an open order the purchases that compete for it (`competingKeys`).
    var keys: Set<String> = []
    /// The transaction ids asked of Apple when the Server API is configured.
    var askable: Set<String> = []
    var orders: [Order] = []
    /// `--our-order`: receipts of the order without a definitive answer yet, by order.
    var waitingReceipts: [String: Int] = [:]
    /// Whether our data knows the id (an order, a receipt or a grant names it).
    var known = false
    /// `--user`: the first instant of the days listed, and the last (`--as-of`).
    var since: EpochMillis = 0
    var until: EpochMillis = 0

    func inDays(_ t: EpochMillis) -> Bool { since <= t && t <= until }

    /// Only what Apple could know is asked: 1 to 20 digits.
    static func isTransactionID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 20 && id.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    static func gather(
        _ target: LookupTarget, db: PGConnection, source: PGConnection, settings: JobSettings,
        families: LookupFamilies
    ) throws -> OurSide {
        var side = OurSide()
        let reader = Reader(db: db, source: source, settings: settings)
        switch target {
        case .order, .playOrder, .playToken: break
        case .transaction(let tid):
            side.listed = [tid]
            side.grantOnly = [tid]
            side.keys = [tid]
            side.known = true
        case .ourOrder(let orderID):
            side.orders = try reader.orders(where: "order_id = \(orderID)")
            let grants = try reader.grants(where: "order_id = \(orderID)")
            let receipts = try reader.receipts(where: "order_id = \(orderID)")
            side.known = !side.orders.isEmpty || !grants.isEmpty || !receipts.isEmpty
            side.listed.formUnion(side.orders.compactMap(\.transactionID))
            side.listed.formUnion(grants.map(\.transactionID))
            side.listed.formUnion(receipts.compactMap(\.transactionID))
            side.listed.formUnion(try reader.tokenTransactions([orderID]))
            side.grantOnly = Set(grants.map(\.transactionID))
            side.keys.formUnion(grants.flatMap { [$0.transactionID, $0.originalTransactionID].compactMap { $0 } })
            // What the nights learned from the order's receipts: decided, listed when their verdict names the order.
            let receiptIDs = receipts.map(\.receiptID)
            side.keys.formUnion(try reader.originals(of: try reader.receiptTransactions(receiptIDs)))
            side.waitingReceipts[orderID] = try reader.waiting(receiptIDs)
            for o in side.orders where o.isOpen {
                side.keys.formUnion(try families.competingKeys(.init(user: o.userID, product: o.productID)))
            }
            side.askable = side.listed
        case .user(let userID, let days):
            side.until = settings.asOf
            side.since = DecisionSettings.windowStart(asOf: settings.asOf, days: days)
            let orders = try reader.orders(where: "user_id = \(userID)")
            let grants = try reader.grants(where: "user_id = \(userID)")
            let receipts = try reader.receipts(where: "user_id = \(userID)")
            side.known = !orders.isEmpty || !grants.isEmpty || !receipts.isEmpty
            side.orders = orders.filter { side.inDays($0.createdAt) }
            // Every id our rows of the user name, the transactions the nights learned from the
            // user's uploads, those whose token is one of the user's orders, those transaction
            // history returned for the user; then every purchase of their families in the days listed.
            var named = Set(orders.compactMap(\.transactionID))
            named.formUnion(grants.flatMap { [$0.transactionID, $0.originalTransactionID].compactMap { $0 } })
            named.formUnion(receipts.compactMap(\.transactionID))
            named.formUnion(try reader.receiptTransactions(receipts.map(\.receiptID)))
            named.formUnion(try reader.tokenTransactions(orders.map(\.orderID)))
            named.formUnion(try reader.historyTransactions(userID))
            let inDays = try reader.familyPurchases(named, from: side.since, to: side.until)
            side.listed = Set(inDays.map(\.transactionID))
            side.keys = Set(inDays.map(\.original))
            let recent = grants.filter { side.inDays($0.grantedAt) }
            side.grantOnly = Set(recent.map(\.transactionID))
            side.keys.formUnion(recent.flatMap { [$0.transactionID, $0.originalTransactionID].compactMap { $0 } })
            // Apple is asked about the purchases listed, and about what our rows of these days name.
            side.askable = side.listed.union(recent.map(\.transactionID))
                .union(receipts.filter { side.inDays($0.submittedAt) }.compactMap(\.transactionID))
                .union(side.orders.compactMap(\.transactionID))
            side.listed.formUnion(side.askable)
        }
        side.askable = side.askable.filter(isTransactionID)
        side.keys.formUnion(side.listed)
        side.keys.formUnion(try reader.originals(of: side.listed))
        return side
    }

    /// The few statements of `gather`, each on the session that holds its relation.
    struct Reader {
        let db: PGConnection
        let source: PGConnection
        let settings: JobSettings
        var S: SQL { settings.jobSchema.sql }
        var src: SQL { "\(ident: settings.sourceSchema)" }

        func ms(_ column: SQL) -> SQL { "(extract(epoch FROM \(column)) * 1000)::bigint::text" }

        /// Orders with the columns the contract requires; a row with a null there (an input error) is left out.
        func orders(where condition: SQL) throws -> [Order] {
            try source.query(
                """
                SELECT order_id, user_id, product_id, coalesce(quantity, 1)::text, status, transaction_id, \(ms("created_at"))
                FROM \(src).iap_orders WHERE \(condition) ORDER BY created_at DESC, order_id
                """
            ).rows.compactMap { r in
                guard let id = r[0], let user = r[1], let product = r[2], let status = r[4],
                    let at = r[6].flatMap({ EpochMillis($0) })
                else { return nil }
                return Order(
                    orderID: id, userID: user, productID: product, quantity: r[3].flatMap { Int($0) } ?? 1,
                    status: status, transactionID: r[5], createdAt: at)
            }
        }

        struct GrantRow {
            var transactionID: String
            var originalTransactionID: String?
            var grantedAt: EpochMillis
        }

        func grants(where condition: SQL) throws -> [GrantRow] {
            try source.query(
                """
                SELECT transaction_id, original_transaction_id, \(ms("granted_at")) FROM \(src).iap_grants
                WHERE \(condition) AND transaction_id IS NOT NULL AND granted_at IS NOT NULL
                """
            ).rows.compactMap { r in
                guard let t = r[0], let at = r[2].flatMap({ EpochMillis($0) }) else { return nil }
                return GrantRow(transactionID: t, originalTransactionID: r[1], grantedAt: at)
            }
        }

        struct ReceiptRow {
            var receiptID: String
            var transactionID: String?
            var submittedAt: EpochMillis
        }

        func receipts(where condition: SQL) throws -> [ReceiptRow] {
            try source.query(
                """
                SELECT receipt_id, transaction_id, \(ms("submitted_at")) FROM \(src).iap_receipts
                WHERE \(condition) AND receipt_id IS NOT NULL
                """
            ).rows.compactMap { r in
                guard let id = r[0] else { return nil }
                return ReceiptRow(receiptID: id, transactionID: r[1], submittedAt: r[2].flatMap { EpochMillis($0) } ?? 0)
            }
        }

        /// The transactions the nights learned from these receipts' valid answers.
        func receiptTransactions(_ receiptIDs: [String]) throws -> Set<String> {
            guard !receiptIDs.isEmpty else { return [] }
            return Set(
                try db.query(
                    """
                    SELECT DISTINCT transaction_id FROM \(S).receipt_transactions WHERE receipt_id = ANY(\(receiptIDs)::text[])
                    """
                ).rows.compactMap { $0[0] })
        }

        /// Receipts without a definitive answer yet (unresolved.csv's, or not tried).
        func waiting(_ receiptIDs: [String]) throws -> Int {
            guard !receiptIDs.isEmpty else { return 0 }
            let done =
                try db.query(
                    """
                    SELECT count(*)::text FROM \(S).receipt_state WHERE receipt_id = ANY(\(receiptIDs)::text[]) AND definitive
                    """
                ).value(0, 0).flatMap { Int($0) } ?? 0
            return Set(receiptIDs).count - done
        }

        /// The transactions whose `appAccountToken` is one of these orders: the order id read as a
        /// UUID, or with `--account-token-namespace` its name-based UUID (docs/rules.md "Whose purchase").
        func tokenTransactions(_ orderIDs: [String]) throws -> Set<String> {
            guard !orderIDs.isEmpty else { return [] }
            var tokens = orderIDs.map { $0.lowercased() }
            if let namespace = settings.accountTokenNamespace {
                tokens += orderIDs.compactMap { AccountToken.nameBased(namespace: namespace, name: $0) }
            }
            return Set(
                try db.query(
                    """
                    SELECT transaction_id FROM \(S).apple_transactions WHERE lower(app_account_token) = ANY(\(tokens)::text[])
                    """
                ).rows.compactMap { $0[0] })
        }

        /// The transactions transaction history returned on behalf of the user.
        func historyTransactions(_ userID: String) throws -> Set<String> {
            Set(
                try db.query("SELECT transaction_id FROM \(S).apple_transactions WHERE history_user_id = \(userID)")
                    .rows.compactMap { $0[0] })
        }

        /// The original transaction ids of the transactions the nights learned among `ids`.
        func originals(of ids: Set<String>) throws -> Set<String> {
            guard !ids.isEmpty else { return [] }
            return Set(
                try db.query(
                    """
                    SELECT DISTINCT original_transaction_id FROM \(S).apple_transactions WHERE transaction_id = ANY(\(ids.sorted())::text[])
                    """
                ).rows.compactMap { $0[0] })
        }

        /// Every learned purchase in `[from, to]` of the families that `ids` names (as a
        /// transaction id or an original transaction id).
        func familyPurchases(_ ids: Set<String>, from: EpochMillis, to: EpochMillis) throws -> [(transactionID: String, original: String)] {
            guard !ids.isEmpty else { return [] }
            let list = ids.sorted()
            return try db.query(
                """
                SELECT DISTINCT transaction_id, original_transaction_id FROM \(S).apple_transactions
                WHERE purchase_date_ms BETWEEN \(from)::bigint AND \(to)::bigint
                  AND (original_transaction_id = ANY(\(list)::text[])
                       OR original_transaction_id IN (SELECT original_transaction_id FROM \(S).apple_transactions
                                                      WHERE transaction_id = ANY(\(list)::text[])))
                """
            ).rows.compactMap { r in r[0].flatMap { t in r[1].map { (t, $0) } } }
        }
    }
}
