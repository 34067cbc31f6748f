// Contract §4 "Order match": exact, inferred (window, closest, once, purchase_date order), none.

import AppStoreSimulator
@testable import Reconciliation
import SimulatorData
import Testing

/// The purchase every single-candidate case is built around.
let purchase: EpochMillis = asOf - 2 * day

struct Matched: Equatable, Sendable, CustomStringConvertible {
    var tx: String
    var match: OrderMatch
    var order: String?
    init(_ tx: String, _ match: OrderMatch, _ order: String? = nil) { (self.tx, self.match, self.order) = (tx, match, order) }
    var description: String { "\(tx) \(match.rawValue) \(order ?? "-")" }
}

struct OrderMatchCase: NamedCase {
    var name: String
    var candidates: [CompensationCandidate]
    var orders: [Order]
    /// Sorted by purchase_date, then transaction_id.
    var expected: [Matched]
}

func ref(_ id: String, user: String = "u1", at: EpochMillis = purchase - hour) -> OrderRef {
    OrderRef(orderID: id, userID: user, productID: "gems", createdAt: at)
}

@Suite("order match")
struct OrderMatchTests {
    static let cases: [OrderMatchCase] = [
        // exact
        .init(name: "exact (order with this transaction_id) passes through, even with a closer open order",
              candidates: [candidate(apple("t1", at: purchase), exact: ref("o-linked"))],
              orders: [order("o-near", at: purchase)], expected: [Matched("t1", .exact, "o-linked")]),
        .init(name: "exact via a receipt-named open order; that order is not inferred for another",
              candidates: [candidate(apple("t1", at: purchase), exact: ref("o1", at: purchase - minute)),
                           candidate(apple("t2", at: purchase + minute))],
              orders: [order("o1", at: purchase - minute)],
              expected: [Matched("t1", .exact, "o1"), Matched("t2", .none)]),
        .init(name: "exact-used order unavailable even to a transaction purchased earlier",
              candidates: [candidate(apple("t1", at: purchase + minute), exact: ref("o1", at: purchase)),
                           candidate(apple("t0", at: purchase))],
              orders: [order("o1", at: purchase), order("o2", at: purchase - 2 * hour)],
              expected: [Matched("t0", .inferred, "o2"), Matched("t1", .exact, "o1")]),
        // inferred window edges
        .init(name: "inferred: created exactly 24 h before the purchase (included)",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", at: purchase - 24 * hour)],
              expected: [Matched("t1", .inferred, "o1")]),
        .init(name: "24 h + 1 ms before: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", at: purchase - 24 * hour - 1)],
              expected: [Matched("t1", .none)]),
        .init(name: "inferred: created exactly 5 min after the purchase (included)",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", at: purchase + 5 * minute)],
              expected: [Matched("t1", .inferred, "o1")]),
        .init(name: "5 min + 1 ms after: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", at: purchase + 5 * minute + 1)],
              expected: [Matched("t1", .none)]),
        // same user and product, open orders only
        .init(name: "another user's order: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", user: "u2", at: purchase)],
              expected: [Matched("t1", .none)]),
        .init(name: "another product's order: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", product: "coins", at: purchase)],
              expected: [Matched("t1", .none)]),
        .init(name: "a delivered order is not open: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", status: "delivered", at: purchase)],
              expected: [Matched("t1", .none)]),
        .init(name: "an order linked to a transaction is not open: none",
              candidates: [candidate(apple("t1", at: purchase))], orders: [order("o1", tx: "t9", at: purchase)],
              expected: [Matched("t1", .none)]),
        .init(name: "failed and cancelled orders are open",
              candidates: [candidate(apple("t1", at: purchase)), candidate(apple("t2", at: purchase + hour))],
              orders: [order("o1", status: "failed", at: purchase), order("o2", status: "cancelled", at: purchase + hour)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .inferred, "o2")]),
        // closest in time
        .init(name: "closest in time wins (1 h before over 2 h before)",
              candidates: [candidate(apple("t1", at: purchase))],
              orders: [order("o-far", at: purchase - 2 * hour), order("o-near", at: purchase - hour)],
              expected: [Matched("t1", .inferred, "o-near")]),
        .init(name: "closest in time wins (3 min after over 10 min before)",
              candidates: [candidate(apple("t1", at: purchase))],
              orders: [order("o-before", at: purchase - 10 * minute), order("o-after", at: purchase + 3 * minute)],
              expected: [Matched("t1", .inferred, "o-after")]),
        .init(name: "equally close: the earlier created_at",
              candidates: [candidate(apple("t1", at: purchase))],
              orders: [order("o-after", at: purchase + minute), order("o-before", at: purchase - minute)],
              expected: [Matched("t1", .inferred, "o-before")]),
        .init(name: "same created_at: the lower order_id",
              candidates: [candidate(apple("t1", at: purchase))],
              orders: [order("o2", at: purchase - minute), order("o1", at: purchase - minute)],
              expected: [Matched("t1", .inferred, "o1")]),
        // each order once, transactions in purchase_date order
        .init(name: "each order used once: the second transaction gets none",
              candidates: [candidate(apple("t1", at: purchase)), candidate(apple("t2", at: purchase + minute))],
              orders: [order("o1", at: purchase)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .none)]),
        .init(name: "taken in purchase_date order, not input order, not by closeness",
              candidates: [candidate(apple("t-late", at: purchase + 3 * minute)), candidate(apple("t-early", at: purchase))],
              orders: [order("o1", at: purchase + 3 * minute)],
              expected: [Matched("t-early", .inferred, "o1"), Matched("t-late", .none)]),
        .init(name: "two transactions, two orders: each its own",
              candidates: [candidate(apple("t2", at: purchase + 2 * hour)), candidate(apple("t1", at: purchase))],
              orders: [order("o2", at: purchase + 2 * hour - minute), order("o1", at: purchase - minute)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .inferred, "o2")]),
        .init(name: "the earlier transaction takes its closest; the later one falls back to the next",
              candidates: [candidate(apple("t1", at: purchase)), candidate(apple("t2", at: purchase + minute))],
              orders: [order("o1", at: purchase), order("o2", at: purchase - 3 * hour)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .inferred, "o2")]),
        .init(name: "same purchase_date: taken by transaction_id",
              candidates: [candidate(apple("t2", at: purchase)), candidate(apple("t1", at: purchase))],
              orders: [order("o1", at: purchase)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .none)]),
        .init(name: "the same order listed twice is still used once",
              candidates: [candidate(apple("t1", at: purchase)), candidate(apple("t2", at: purchase))],
              orders: [order("o1", at: purchase), order("o1", at: purchase)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .none)]),
        .init(name: "users are matched separately",
              candidates: [candidate(apple("t1", at: purchase), user: "u1"), candidate(apple("t2", at: purchase), user: "u2")],
              orders: [order("o2", user: "u2", at: purchase), order("o1", user: "u1", at: purchase)],
              expected: [Matched("t1", .inferred, "o1"), Matched("t2", .inferred, "o2")]),
        .init(name: "none: no order at all",
              candidates: [candidate(apple("t1", at: purchase))], orders: [], expected: [Matched("t1", .none)]),
    ]

    @Test(arguments: cases)
    func match(_ c: OrderMatchCase) {
        let rows = Decide.matchOrders(c.candidates, openOrders: c.orders)
        #expect(rows.map { Matched($0.transactionID, $0.match, $0.orderID) } == c.expected)
    }

    @Test(arguments: cases)
    func deterministicWhateverTheInputOrder(_ c: OrderMatchCase) {
        let forward = Decide.matchOrders(c.candidates, openOrders: c.orders)
        let backward = Decide.matchOrders(c.candidates.reversed(), openOrders: c.orders.reversed())
        #expect(forward == backward)
    }

    @Test func rowCellsFollowTheCompensateColumns() {
        let t = apple("1000000315361723", original: "1000000315361700", product: "vip_month", quantity: 3,
                      at: UTC.millis(year: 2026, month: 11, day: 20, hour: 3, minute: 8, second: 45) + 999)
        var c = CompensationCandidate(transaction: t, productType: .nonRenewing, userID: "u1", receiptID: "r1", owed: 2,
                                      reason: .partiallyGranted, exactOrder: nil)
        let none = Decide.matchOrders([c], openOrders: [])[0]
        #expect(ReportFile.compensate.columns == ["order_id", "user_id", "product_id", "product_type",
            "quantity", "transaction_id", "original_transaction_id", "purchase_date", "environment", "match", "reason",
            "receipt_id", "first_seen", "amount", "currency", "source", "proceeds", "proceeds_currency"])
        #expect(none.cells == ["", "u1", "vip_month", "non_renewing", "2", "1000000315361723", "1000000315361700",
                               "2026-11-20T03:08:45Z", "production", "none", "partially_granted", "r1", "", "", "receipt"])
        #expect(none.findingKey == "compensate|1000000315361723|production")

        c.exactOrder = OrderRef(orderID: "o9", userID: "u1", productID: "vip_month", createdAt: t.purchaseDate)
        let exact = Decide.matchOrders([c], openOrders: [])[0]
        #expect(exact.cells[0] == "o9")
        #expect(exact.cells[9] == "exact")
        #expect(exact.findingKey == none.findingKey)
    }
}

/// The streaming data path matches one user and product at a time (`Decide.inferOrders`): on the
/// same candidates and orders it must give what `matchOrders` gives for all of them at once.
@Suite("order match, one group at a time")
struct GroupedOrderMatchTests {
    @Test(arguments: 1...40)
    func groupedEqualsWhole(seed: Int) {
        var rng = SeededRandom(seed: UInt64(seed))
        let users = ["u1", "u2", "u3"], products = ["gems", "coins"]
        var candidates: [CompensationCandidate] = []
        var orders: [Order] = []
        for i in 0..<Int(rng.next() % 12) {
            let t = apple("t\(i)", product: products[Int(rng.next() % 2)], at: asOf - Int64(rng.next() % 30) * hour)
            var c = candidate(t, user: users[Int(rng.next() % 3)])
            if rng.next() % 5 == 0 {
                c.exactOrder = OrderRef(orderID: "o\(rng.next() % 9)", userID: c.userID, productID: t.productID,
                                        createdAt: t.purchaseDate)
            }
            candidates.append(c)
        }
        for k in 0..<Int(rng.next() % 10) {
            orders.append(order("o\(k)", user: users[Int(rng.next() % 3)], product: products[Int(rng.next() % 2)],
                                at: asOf - Int64(rng.next() % 40) * hour + Int64(rng.next() % 600_000)))
        }
        let whole = Dictionary(uniqueKeysWithValues: Decide.matchOrders(candidates, openOrders: orders)
            .map { ($0.transactionID, ($0.match, $0.orderID)) })
        // What the data path does: exact ones at once, the rest per user and product, sorted.
        let exact = Set(candidates.compactMap { $0.exactOrder?.orderID })
        var grouped: [String: (OrderMatch, String?)] = [:]
        for c in candidates where c.exactOrder != nil { grouped[c.transaction.transactionID] = (.exact, c.exactOrder?.orderID) }
        let rest = candidates.filter { $0.exactOrder == nil }
        for user in users {
            for product in products {
                let mine = rest.filter { $0.userID == user && $0.transaction.productID == product }.sorted {
                    ($0.transaction.purchaseDate, $0.transaction.transactionID) < ($1.transaction.purchaseDate, $1.transaction.transactionID)
                }
                let pool = orders.filter { $0.userID == user && $0.productID == product && !exact.contains($0.orderID) }
                let got = Decide.inferOrders(userID: user, productID: product,
                                             purchases: mine.map(\.transaction.purchaseDate), openOrders: pool)
                for (c, o) in zip(mine, got) { grouped[c.transaction.transactionID] = (o == nil ? .none : .inferred, o?.orderID) }
            }
        }
        #expect(grouped.count == whole.count)
        for (tid, want) in whole {
            #expect(grouped[tid]?.0 == want.0 && grouped[tid]?.1 == want.1, "seed \(seed) \(tid)")
        }
    }
}
