// Contract §4 compensate: reasons, owed units, the window, sandbox and cancelled transactions,
// and the restore rules per product type.

import Testing

@testable import Reconciliation

/// What a compensation candidate should say: transaction, reason, units owed.
struct Owed: Equatable, Sendable, CustomStringConvertible {
    var tx: String
    var reason: CompensationReason
    var owed: Int
    init(_ tx: String, _ reason: CompensationReason, _ owed: Int) { (self.tx, self.reason, self.owed) = (tx, reason, owed) }
    var description: String { "\(tx) \(reason.rawValue) ×\(owed)" }
}

struct CompensateCase: NamedCase {
    var name: String
    var transactions: [KnownTransaction]
    var grants: [GrantFacts] = []
    var settings: DecisionSettings = standardSettings
    var expected: [Owed]
}

@Suite("compensate")
struct CompensateTests {
    static let reasonsAndQuantitiesCases: [CompensateCase] = [
        .init(name: "paid_not_granted: no grant at all",
              transactions: [known(apple("t1"))], expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "paid_not_granted owes every unit",
              transactions: [known(apple("t1", quantity: 3))], expected: [Owed("t1", .paidNotGranted, 3)]),
        .init(name: "partially_granted: one of three units granted",
              transactions: [known(apple("t1", quantity: 3))], grants: [facts(grant("g1", tx: "t1"))],
              expected: [Owed("t1", .partiallyGranted, 2)]),
        .init(name: "partially_granted: grants add up, still short",
              transactions: [known(apple("t1", quantity: 5))],
              grants: [facts(grant("g1", tx: "t1", quantity: 2)), facts(grant("g2", tx: "t1", quantity: 2))],
              expected: [Owed("t1", .partiallyGranted, 1)]),
        .init(name: "fully granted: nothing owed",
              transactions: [known(apple("t1", quantity: 2))], grants: [facts(grant("g1", tx: "t1", quantity: 2))],
              expected: []),
        .init(name: "over-granted: nothing owed",
              transactions: [known(apple("t1"))], grants: [facts(grant("g1", tx: "t1", quantity: 4))],
              expected: []),
        .init(name: "a grant to another user still covers the transaction",
              transactions: [known(apple("t1"))], grants: [facts(grant("g1", tx: "t1", user: "u9"))],
              expected: []),
        .init(name: "revoked_not_refunded: the only grant was revoked",
              transactions: [known(apple("t1"))], grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour))],
              expected: [Owed("t1", .revokedNotRefunded, 1)]),
        .init(name: "revoked_not_refunded: every grant revoked, every unit owed",
              transactions: [known(apple("t1", quantity: 2))],
              grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour)),
                       facts(grant("g2", tx: "t1", revoked: asOf - hour))],
              expected: [Owed("t1", .revokedNotRefunded, 2)]),
        .init(name: "partially_granted: one revoked, one active, short",
              transactions: [known(apple("t1", quantity: 3))],
              grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour)), facts(grant("g2", tx: "t1"))],
              expected: [Owed("t1", .partiallyGranted, 2)]),
        .init(name: "one revoked, an active one covers: nothing owed",
              transactions: [known(apple("t1"))],
              grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour)), facts(grant("g2", tx: "t1"))],
              expected: []),
        .init(name: "Apple quantity 0 counts as one unit",
              transactions: [known(apple("t1", quantity: 0))], expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "a grant of another transaction does not cover a consumable",
              transactions: [known(apple("t1"))], grants: [facts(grant("g1", tx: "t0"))],
              expected: [Owed("t1", .paidNotGranted, 1)]),
    ]

    @Test(arguments: reasonsAndQuantitiesCases)
    func reasonsAndQuantities(_ c: CompensateCase) { check(c) }

    static let whichTransactionsCases: [CompensateCase] = [
        .init(name: "cancelled (refunded) transaction is not compensated",
              transactions: [known(apple("t1", cancelled: asOf - hour))], expected: []),
        .init(name: "cancelled, revoked grant: not revoked_not_refunded",
              transactions: [known(apple("t1", cancelled: asOf - hour))],
              grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour))], expected: []),
        .init(name: "sandbox transaction is never compensated",
              transactions: [known(apple("t1", env: .sandbox))], expected: []),
        .init(name: "known in both environments: the production one is compensated once",
              transactions: [known(apple("t1", env: .sandbox)), known(apple("t1"))],
              expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "window start included (as_of − 30 days)",
              transactions: [known(apple("t1", at: asOf - 30 * day))], expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "1 ms before the window start: not checked",
              transactions: [known(apple("t1", at: asOf - 30 * day - 1))], expected: []),
        .init(name: "window end included (as_of)",
              transactions: [known(apple("t1", at: asOf))], expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "1 ms after as_of: not checked",
              transactions: [known(apple("t1", at: asOf + 1))], expected: []),
        .init(name: "--window-days 7: 8 days ago is outside",
              transactions: [known(apple("t1", at: asOf - 8 * day))],
              settings: DecisionSettings(asOf: asOf, windowDays: 7), expected: []),
        .init(name: "--window-days 7: 7 days ago is inside",
              transactions: [known(apple("t1", at: asOf - 7 * day))],
              settings: DecisionSettings(asOf: asOf, windowDays: 7), expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "unknown product type: skipped (an input error elsewhere)",
              transactions: [known(apple("t1"), nil)], expected: []),
        .init(name: "no user: skipped",
              transactions: [known(apple("t1"), user: nil)], expected: []),
        .init(name: "no receipt but a user (learned from the Server API alone): owed, receipt_id empty",
              transactions: [known(apple("t1"), receipt: nil)], expected: [Owed("t1", .paidNotGranted, 1)]),
        .init(name: "a grant of unknown product type is left out: it covers nothing",
              transactions: [known(apple("t1"))], grants: [facts(grant("g1", tx: "t1"), nil)],
              expected: [Owed("t1", .paidNotGranted, 1)]),
    ]

    @Test(arguments: whichTransactionsCases)
    func whichTransactions(_ c: CompensateCase) { check(c) }

    static let restoresCases: [CompensateCase] = [
        // non_consumable
        .init(name: "non_consumable: another transaction of the original granted to the user → restore",
              transactions: [known(apple("t1"), .nonConsumable), known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1"), .nonConsumable)], expected: []),
        .init(name: "non_consumable: the original ungranted, a later transaction granted → restore",
              transactions: [known(apple("t1"), .nonConsumable), known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g2", tx: "t2"), .nonConsumable)], expected: []),
        .init(name: "non_consumable: granted to another user → not a restore for this user",
              transactions: [known(apple("t1"), .nonConsumable), known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", user: "u2"), .nonConsumable)],
              expected: [Owed("t2", .paidNotGranted, 1)]),
        .init(name: "non_consumable: the other grant was revoked → not a restore",
              transactions: [known(apple("t1"), .nonConsumable), known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", revoked: asOf - hour), .nonConsumable)],
              expected: [Owed("t1", .revokedNotRefunded, 1), Owed("t2", .paidNotGranted, 1)]),
        .init(name: "non_consumable: the other grant is clawed back (refunded) → not a restore",
              transactions: [known(apple("t1", at: asOf - 9 * day, cancelled: asOf - 5 * day), .nonConsumable),
                             known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1"), .nonConsumable)],
              expected: [Owed("t2", .paidNotGranted, 1)]),
        .init(name: "non_consumable: the grant row's original joins the family → restore",
              transactions: [known(apple("t2", original: "t1"), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1", original: "t1"), .nonConsumable)], expected: []),
        // non_renewing
        .init(name: "non_renewing: transaction ≠ original and the original is granted to the user → restore",
              transactions: [known(apple("t1", at: asOf - 40 * day), .nonRenewing),
                             known(apple("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1"), .nonRenewing)], expected: []),
        .init(name: "non_renewing: the original granted to another user → owed",
              transactions: [known(apple("t1", at: asOf - 40 * day), .nonRenewing),
                             known(apple("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1", user: "u2"), .nonRenewing)],
              expected: [Owed("t2", .paidNotGranted, 1)]),
        .init(name: "non_renewing: a sibling (not the original) granted → owed",
              transactions: [known(apple("t2", original: "t1"), .nonRenewing),
                             known(apple("t3", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g2", tx: "t2"), .nonRenewing)],
              expected: [Owed("t3", .paidNotGranted, 1)]),
        .init(name: "non_renewing: the original itself is never a restore",
              transactions: [known(apple("t1"), .nonRenewing), known(apple("t2", original: "t1"), .nonRenewing)],
              grants: [facts(grant("g2", tx: "t2"), .nonRenewing)],
              expected: [Owed("t1", .paidNotGranted, 1)]),
        // auto_renewable
        .init(name: "auto_renewable: same web_order_line_item_id granted → restore",
              transactions: [known(apple("t1", webOrder: "w1"), .autoRenewable),
                             known(apple("t2", original: "t1", webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1"), .autoRenewable)], expected: []),
        .init(name: "auto_renewable: same web_order_line_item_id granted to another user → still a restore",
              transactions: [known(apple("t1", webOrder: "w1"), .autoRenewable),
                             known(apple("t2", original: "t1", webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1", user: "u2"), .autoRenewable)], expected: []),
        .init(name: "auto_renewable: a renewal (new web_order_line_item_id) is owed",
              transactions: [known(apple("t1", at: asOf - 40 * day, webOrder: "w1"), .autoRenewable),
                             known(apple("t2", original: "t1", webOrder: "w2"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1"), .autoRenewable)], expected: [Owed("t2", .paidNotGranted, 1)]),
        .init(name: "auto_renewable: no web_order_line_item_id → not a restore",
              transactions: [known(apple("t1", at: asOf - 40 * day), .autoRenewable),
                             known(apple("t2", original: "t1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1"), .autoRenewable)], expected: [Owed("t2", .paidNotGranted, 1)]),
        // a transaction's own grants never make it a restore: it is partially granted
        .init(name: "non_consumable: its own grant does not make it a restore",
              transactions: [known(apple("t1", quantity: 2), .nonConsumable)],
              grants: [facts(grant("g1", tx: "t1"), .nonConsumable)], expected: [Owed("t1", .partiallyGranted, 1)]),
        .init(name: "non_renewing: the original's own grant does not make it a restore",
              transactions: [known(apple("t1", quantity: 2), .nonRenewing)],
              grants: [facts(grant("g1", tx: "t1"), .nonRenewing)], expected: [Owed("t1", .partiallyGranted, 1)]),
        .init(name: "auto_renewable: its own grant does not make it a restore",
              transactions: [known(apple("t1", quantity: 2, webOrder: "w1"), .autoRenewable)],
              grants: [facts(grant("g1", tx: "t1"), .autoRenewable)], expected: [Owed("t1", .partiallyGranted, 1)]),
        // consumable
        .init(name: "consumable: never a restore, even with a granted original",
              transactions: [known(apple("t1", at: asOf - 40 * day), .consumable),
                             known(apple("t2", original: "t1"), .consumable)],
              grants: [facts(grant("g1", tx: "t1"), .consumable)], expected: [Owed("t2", .paidNotGranted, 1)]),
    ]

    @Test(arguments: restoresCases)
    func restores(_ c: CompensateCase) { check(c) }

    private func check(_ c: CompensateCase) {
        let decision = decide(c.transactions, c.grants, settings: c.settings)
        let got = decision.compensations.map { Owed($0.transaction.transactionID, $0.reason, $0.owed) }
        #expect(got == c.expected)
        #expect(decision.compensations.allSatisfy { $0.transaction.environment == .production })
    }

    @Test func candidateCarriesTheTransactionsUserReceiptTypeAndExactOrder() {
        let ref = OrderRef(orderID: "o7", userID: "u3", productID: "gems", createdAt: asOf - 3 * day)
        let t = apple("t1", quantity: 2)
        let decision = decide([known(t, .consumable, user: "u3", receipt: "r9", exactOrder: ref)])
        #expect(decision.compensations == [
            CompensationCandidate(transaction: t, productType: .consumable, userID: "u3", receiptID: "r9", owed: 2,
                                  reason: .paidNotGranted, exactOrder: ref)
        ])
    }

    @Test func candidatesComeInPurchaseDateOrder() {
        let decision = decide([known(apple("a", at: asOf - day)), known(apple("b", at: asOf - 3 * day)),
                               known(apple("c", at: asOf - 2 * day))])
        #expect(decision.compensations.map(\.transaction.transactionID) == ["b", "c", "a"])
    }
}
