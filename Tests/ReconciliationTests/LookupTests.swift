// `iap-reconcile lookup`'s verdicts for customer service: each kind, read from the night's own
// decision on the purchase's family (`Decide.family`), so lookup and the night cannot disagree.

import Testing

@testable import Reconciliation

@Suite("Lookup verdicts for customer service")
struct LookupTests {
    static let paidAt: EpochMillis = asOf - 9 * day + 5 * hour + minute  // 2026-11-12T08:01:00Z
    static let tid = "2000000000000001"
    static func tx(_ env: AppStoreEnvironment = .production, quantity: Int = 1, at: EpochMillis = paidAt,
                   cancelled: EpochMillis? = nil, product: String = "coins100") -> AppleTransaction {
        apple(tid, product: product, quantity: quantity, at: at, cancelled: cancelled, env: env)
    }
    static func g(_ id: String, user: String = "U1", revoked: EpochMillis? = nil, quantity: Int = 1,
                  product: String = "coins100", tx: String = tid) -> GrantFacts {
        facts(grant(id, tx: tx, user: user, product: product, quantity: quantity, at: paidAt + minute, revoked: revoked,
                    order: "O1"))
    }

    /// The verdict on `tid` in a family of `transactions` and `grants`, as lookup reads it.
    static func verdict(_ transactions: [KnownTransaction], _ grants: [GrantFacts] = [], inferred: OrderRef? = nil,
                        env: AppStoreEnvironment = .production) -> LookupVerdict {
        let family = Family(key: tid, transactions: transactions, grants: grants)
        return Lookup.verdict(transactionID: tid, environment: env, in: family,
                              decision: Decide.family(family, settings: standardSettings), inferredOrder: inferred,
                              settings: standardSettings)!
    }

    @Test("paid and granted: nothing to do, with the grant")
    func granted() {
        let v = Self.verdict([known(Self.tx(), user: "U1")], [Self.g("G1")])
        #expect(v.kind == .granted && v.userID == "U1" && v.grantIDs == ["G1"] && v.report == nil)
        #expect(v.text == "paid 2026-11-12 08:01 UTC, granted to user U1 (grant G1, 2026-11-12 08:02): nothing to do")
    }

    @Test("paid, never granted: compensate the units to the transaction's user, naming the exact order; partly granted: the rest")
    func compensate() {
        let exact = OrderRef(orderID: "O1", userID: "U1", productID: "coins100", createdAt: Self.paidAt - 5_000)
        let v = Self.verdict([known(Self.tx(quantity: 2), user: "U1", exactOrder: exact)])
        #expect(v.kind == .compensate && v.owed == 2 && v.orderID == "O1" && v.userID == "U1")
        #expect(v.report == .compensate && v.findingKeys == ["compensate|\(Self.tid)|production"])
        #expect(v.text == "paid 2026-11-12 08:01 UTC, never granted: compensate 2 × coins100 to user U1, order O1")
        let partial = Self.verdict([known(Self.tx(quantity: 2), user: "U1")], [Self.g("G1")])
        #expect(partial.kind == .compensate && partial.owed == 1 && partial.grantIDs == ["G1"] && partial.orderID == nil)
        #expect(partial.text.contains("granted 1 of 2"))
        // The inferred match crosses families: the caller hands its order in.
        let inferred = Self.verdict([known(Self.tx(), user: "U1")], inferred: exact)
        #expect(inferred.orderID == "O1" && inferred.text.hasSuffix("order O1 (inferred)"))
        // The user is the rule book's (the transaction's), not the first order's or uploader's.
        let other = Self.verdict([known(Self.tx(), user: "U7")])
        #expect(other.userID == "U7")
    }

    @Test("refunded, goods still granted: claw back; refunded and revoked: nothing to do")
    func refunded() {
        let refundedAt = Self.paidAt + day
        let v = Self.verdict([known(Self.tx(cancelled: refundedAt), user: "U1")], [Self.g("G1")])
        #expect(v.kind == .clawBack && v.grantIDs == ["G1"] && v.report == .clawback && v.findingKeys == ["clawback|G1"])
        #expect(v.text.contains("refunded on 2026-11-13 08:01 UTC, goods still granted (grant G1)") && v.text.hasSuffix("claw back"))
        let done = Self.verdict([known(Self.tx(cancelled: refundedAt), user: "U1")], [Self.g("G1", revoked: refundedAt + 1)])
        #expect(done.kind == .refunded && done.report == nil)
    }

    @Test("Apple knows it, nothing of ours names a user: ask the customer; from the Server API alone it is in unattributed.csv")
    func unknown() {
        let v = Self.verdict([known(Self.tx(), user: nil, receipt: nil)])
        #expect(v.kind == .unknownToUs && v.userID == nil && v.report == nil)
        #expect(v.text.hasSuffix("ask the customer for their user id"))
        var history = known(Self.tx(), user: nil, receipt: nil)
        history.source = .transactionHistory
        let listed = Self.verdict([history])
        #expect(listed.kind == .unknownToUs && listed.report == .unattributed && listed.findingKeys == ["unattributed|\(Self.tid)"])
    }

    @Test("a sandbox purchase is never compensated; granted in production, it is clawed back")
    func sandbox() {
        let v = Self.verdict([known(Self.tx(.sandbox), user: "U1")], env: .sandbox)
        #expect(v.kind == .sandbox && v.owed == nil)
        let granted = Self.verdict([known(Self.tx(.sandbox), user: "U1")], [Self.g("G1")], env: .sandbox)
        #expect(granted.kind == .clawBack && granted.grantIDs == ["G1"] && granted.text.contains("sandbox"))
    }

    @Test("not granted, yet nothing owed: a restore, or a purchase before the window")
    func notOwed() {
        let old = Self.verdict([known(Self.tx(at: asOf - 40 * day), user: "U1")])
        #expect(old.kind == .outsideWindow && old.userID == "U1" && old.text.contains("30-day window"))
        // A non-consumable bought again: the original's standing grant holds it.
        let original = apple("1000000000000009", product: "level2", at: Self.paidAt - day)
        let again = apple(Self.tid, original: "1000000000000009", product: "level2")
        let family = Family(key: "1000000000000009",
                            transactions: [known(original, .nonConsumable, user: "U1"), known(again, .nonConsumable, user: "U1")],
                            grants: [facts(grant("G0", tx: "1000000000000009", user: "U1", product: "level2", at: Self.paidAt - day),
                                           .nonConsumable)])
        let v = Lookup.verdict(transactionID: Self.tid, environment: .production, in: family,
                               decision: Decide.family(family, settings: standardSettings), settings: standardSettings)
        #expect(v?.kind == .restore && v?.userID == "U1")
        #expect(Lookup.verdict(transactionID: "9", environment: .production, in: family,
                               decision: Decide.family(family, settings: standardSettings), settings: standardSettings) == nil)
    }
}
