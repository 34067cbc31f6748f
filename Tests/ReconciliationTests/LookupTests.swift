// `iap-reconcile lookup`'s verdicts for customer service: each kind, from what Apple signed and
// what our data shows.

import Testing

@testable import Reconciliation

@Suite("Lookup verdicts for customer service")
struct LookupTests {
    static let paidAt: EpochMillis = 1_794_470_460_000  // 2026-11-12T08:01:00Z
    static func tx(_ env: AppStoreEnvironment = .production, quantity: Int = 1) -> AppleTransaction {
        AppleTransaction(transactionID: "2000000000000001", originalTransactionID: "2000000000000001",
                         productID: "coins100", quantity: quantity, purchaseDate: paidAt, environment: env)
    }
    static func grant(_ id: String, revoked: EpochMillis? = nil, quantity: Int = 1) -> Grant {
        Grant(grantID: id, userID: "U1", orderID: "O1", productID: "coins100", transactionID: "2000000000000001",
              originalTransactionID: nil, quantity: quantity, grantedAt: paidAt + 60_000, revokedAt: revoked)
    }
    static let order = Order(orderID: "O1", userID: "U1", productID: "coins100", quantity: 1, status: "paid",
                             transactionID: nil, createdAt: paidAt - 5_000)

    @Test("paid and granted: nothing to do, with the grant")
    func granted() {
        let v = Lookup.verdict(Self.tx(), revokedAt: nil, familyRevoke: false, ours: OurRecord(grants: [Self.grant("G1")]))
        #expect(v.kind == .granted && v.userID == "U1" && v.grantIDs == ["G1"])
        #expect(v.text == "paid 2026-11-12 08:01 UTC, granted to user U1 (grant G1, 2026-11-12 08:02): nothing to do")
    }

    @Test("paid, never granted, an upload and an order: compensate the units to the user, naming the order")
    func compensate() {
        let v = Lookup.verdict(Self.tx(quantity: 2), revokedAt: nil, familyRevoke: false,
                               ours: OurRecord(orders: [Self.order], uploaders: ["U1"]))
        #expect(v.kind == .compensate && v.owed == 2 && v.orderID == "O1")
        #expect(v.text == "paid 2026-11-12 08:01 UTC, never granted: compensate 2 × coins100 to user U1, order O1")
        let partial = Lookup.verdict(Self.tx(quantity: 2), revokedAt: nil, familyRevoke: false,
                                     ours: OurRecord(grants: [Self.grant("G1")]))
        #expect(partial.kind == .compensate && partial.owed == 1)
    }

    @Test("refunded, goods still granted: claw back; refunded and revoked: nothing to do")
    func refunded() {
        let refundedAt = Self.paidAt + 86_400_000
        let v = Lookup.verdict(Self.tx(), revokedAt: refundedAt, familyRevoke: false, ours: OurRecord(grants: [Self.grant("G1")]))
        #expect(v.kind == .clawBack && v.grantIDs == ["G1"])
        #expect(v.text.contains("refunded on 2026-11-13 08:01 UTC, goods still granted (grant G1)") && v.text.hasSuffix("claw back"))
        let done = Lookup.verdict(Self.tx(), revokedAt: refundedAt, familyRevoke: false,
                                  ours: OurRecord(grants: [Self.grant("G1", revoked: refundedAt + 1)]))
        #expect(done.kind == .refunded)
    }

    @Test("Apple knows it, we do not: ask the customer for their user id")
    func unknown() {
        let v = Lookup.verdict(Self.tx(), revokedAt: nil, familyRevoke: false, ours: OurRecord())
        #expect(v.kind == .unknownToUs && v.userID == nil)
        #expect(v.text.hasSuffix("ask the customer for their user id"))
    }

    @Test("a sandbox purchase is never compensated")
    func sandbox() {
        let v = Lookup.verdict(Self.tx(.sandbox), revokedAt: nil, familyRevoke: false, ours: OurRecord(uploaders: ["U1"]))
        #expect(v.kind == .sandbox && v.owed == nil)
    }
}
