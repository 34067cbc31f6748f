// Decide.family and Decide.matchOrders together, on one mixed family, as the data path calls them.

import Testing

@testable import Reconciliation

@Suite("Decide")
struct DecideTests {
    /// An auto-renewable subscription (original t1):
    /// - t1 (w1) granted to u1 twice: g1 kept, g1b same_transaction;
    /// - t2 (w2) refunded, still granted to u1: g2 refunded;
    /// - t3 (w3, in the window) never granted, but t3r (w3 again: the same period) is granted to u1:
    ///   t3 is a restore, not owed;
    /// - t3r granted to u2 as well (g5): same_transaction comes before cross_account;
    /// - t1 once granted to u2 (g4), revoked: in no report;
    /// - t4 (w4, in the window) never granted, its order known: paid_not_granted, exact;
    /// - t9 known in the sandbox only, granted to u3: sandbox_transaction, so u3 does not make a cross_account.
    static let family = Family(
        key: "t1",
        transactions: [
            known(old("t1", webOrder: "w1"), .autoRenewable),
            known(old("t2", original: "t1", webOrder: "w2", cancelled: asOf - 50 * day), .autoRenewable),
            known(apple("t3", original: "t1", at: asOf - 3 * day, webOrder: "w3"), .autoRenewable, receipt: "r3"),
            known(apple("t3r", original: "t1", at: asOf - 2 * day, webOrder: "w3"), .autoRenewable, receipt: "r3r"),
            known(apple("t4", original: "t1", at: asOf - day, webOrder: "w4"), .autoRenewable, receipt: "r4",
                  exactOrder: OrderRef(orderID: "o-exact", userID: "u1", productID: "gems", createdAt: asOf - day)),
            known(old("t9", original: "t1", env: .sandbox), .autoRenewable),
        ],
        grants: [
            facts(grant("g1", tx: "t1", at: t0), .autoRenewable),
            facts(grant("g1b", tx: "t1", at: t0 + hour), .autoRenewable),
            facts(grant("g2", tx: "t2", at: t0 + day), .autoRenewable),
            facts(grant("g3r", tx: "t3r", at: asOf - 2 * day + hour), .autoRenewable),
            facts(grant("g4", tx: "t1", user: "u2", at: t0 + 2 * day, revoked: t0 + 3 * day), .autoRenewable),
            facts(grant("g5", tx: "t3r", user: "u2", at: asOf - 2 * day + 2 * hour), .autoRenewable),
            facts(grant("g9", tx: "t9", user: "u3", at: t0 + 4 * day), .autoRenewable),
        ])

    @Test func mixedFamily() {
        let decision = Decide.family(Self.family, settings: standardSettings)
        #expect(decision.clawbacks.map { "\($0.grantID) \($0.reason.rawValue)" } ==
                ["g2 refunded", "g9 sandbox_transaction"])
        #expect(decision.duplicates.map { "\($0.grantID) \($0.kind.rawValue) \($0.keptGrantID)" } ==
                ["g1b same_transaction g1", "g5 same_transaction g3r"])
        #expect(decision.compensations.map { "\($0.transaction.transactionID) \($0.reason.rawValue) \($0.owed)" } ==
                ["t4 paid_not_granted 1"])

        let rows = Decide.matchOrders(decision.compensations, openOrders: [order("o-exact", at: asOf - day)])
        #expect(rows.map { "\($0.transactionID) \($0.match.rawValue) \($0.orderID ?? "-")" } == ["t4 exact o-exact"])
    }

    @Test func theSameWhateverTheInputOrder() {
        var reversed = Self.family
        reversed.transactions.reverse()
        reversed.grants.reverse()
        #expect(Decide.family(reversed, settings: standardSettings)
                == Decide.family(Self.family, settings: standardSettings))
    }

    @Test func anEmptyFamilyDecidesNothing() {
        #expect(Decide.family(Family(key: "x"), settings: standardSettings) == FamilyDecision())
    }
}
