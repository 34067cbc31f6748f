// Contract §4 "Order match" for compensation rows (docs/rules.md "Order match"):
// - exact: an order with this transaction_id, or an open order of the same product named by a
//   receipt containing the transaction (found by the data path: `CompensationCandidate.exactOrder`);
// - inferred: the open order of the same user and product created within
//   [purchase_date − 24 h, purchase_date + 5 min], closest in time, each order used once,
//   transactions taken in purchase_date order; orders used as an exact match are not available;
// - none: no order found.

enum OrderMatching {
    /// How far before the purchase an inferred order may have been created (24 h, included).
    static let inferredLookBack: EpochMillis = 24 * millisPerHour
    /// How far after the purchase an inferred order may have been created (5 min, included).
    static let inferredLookAhead: EpochMillis = 5 * 60_000

    static func rows(_ candidates: [CompensationCandidate], openOrders: [Order]) -> [CompensationRow] {
        let byPurchase = candidates.sorted {
            ($0.transaction.purchaseDate, $0.transaction.transactionID, $0.transaction.environment.rawValue)
                < ($1.transaction.purchaseDate, $1.transaction.transactionID, $1.transaction.environment.rawValue)
        }
        var available = inferable(openOrders, exactlyMatched: Set(candidates.compactMap { $0.exactOrder?.orderID }))
        return byPurchase.map { candidate in
            if let order = candidate.exactOrder {
                return row(candidate, match: .exact, orderID: order.orderID)
            }
            if let order = inferred(for: candidate, from: &available) {
                return row(candidate, match: .inferred, orderID: order.orderID)
            }
            return row(candidate, match: .none, orderID: nil)
        }
    }

    /// The orders inference may use: open, not an exact match of any candidate, each order id once,
    /// grouped by user and product.
    static func inferable(_ orders: [Order], exactlyMatched: Set<String>) -> [UserProduct: [Order]] {
        var seen = Set<String>()
        var pool: [UserProduct: [Order]] = [:]
        for order in orders.sorted(by: { ($0.createdAt, $0.orderID) < ($1.createdAt, $1.orderID) })
        where order.isOpen && !exactlyMatched.contains(order.orderID) && seen.insert(order.orderID).inserted {
            pool[UserProduct(userID: order.userID, productID: order.productID), default: []].append(order)
        }
        return pool
    }

    /// inferred: the closest open order of the candidate's user and product inside the window
    /// (ties: the earlier `created_at`, then the lower `order_id`). The order is taken out of the pool.
    static func inferred(for candidate: CompensationCandidate, from pool: inout [UserProduct: [Order]]) -> Order? {
        inferred(UserProduct(userID: candidate.userID, productID: candidate.transaction.productID),
                 purchase: candidate.transaction.purchaseDate, from: &pool)
    }

    static func inferred(_ key: UserProduct, purchase: EpochMillis, from pool: inout [UserProduct: [Order]]) -> Order? {
        guard let orders = pool[key] else { return nil }
        let window = (purchase - inferredLookBack)...(purchase + inferredLookAhead)
        let best = orders.indices.filter { window.contains(orders[$0].createdAt) }.min { a, b in
            let (x, y) = (orders[a], orders[b])
            return (distance(x.createdAt, purchase), x.createdAt, x.orderID)
                < (distance(y.createdAt, purchase), y.createdAt, y.orderID)
        }
        guard let best else { return nil }
        pool[key]?.remove(at: best)
        return orders[best]
    }

    static func distance(_ a: EpochMillis, _ b: EpochMillis) -> EpochMillis { a > b ? a - b : b - a }

    static func row(_ candidate: CompensationCandidate, match: OrderMatch, orderID: String?) -> CompensationRow {
        let transaction = candidate.transaction
        return CompensationRow(
            orderID: orderID, userID: candidate.userID, productID: transaction.productID,
            productType: candidate.productType, quantity: candidate.owed, transactionID: transaction.transactionID,
            originalTransactionID: transaction.originalTransactionID, purchaseDate: transaction.purchaseDate,
            environment: transaction.environment, match: match, reason: candidate.reason,
            receiptID: candidate.receiptID, amount: candidate.amount, source: candidate.source)
    }

    struct UserProduct: Hashable {
        var userID: String
        var productID: String
    }
}
