// Contract §4 clawback: refunded, wrong_bundle / invalid_receipt, transaction_not_found,
// sandbox_transaction, in that order; revoked grants never; no linked receipt, no finding.

import Testing

@testable import Reconciliation

struct ClawbackCase: NamedCase {
    var name: String
    var transactions: [KnownTransaction] = []
    var links = ReceiptLinks()
    var revoked = false
    var type: ProductType? = .consumable
    /// The reason for grant g1 of transaction t1, or nil when it is not clawed back.
    var expected: ClawbackReason?
}

let refundedAt = asOf - 10 * day

@Suite("clawback")
struct ClawbackTests {
    static let cases: [ClawbackCase] = [
        // refunded
        .init(name: "refunded: the transaction has a cancellation_date",
              transactions: [known(old("t1", cancelled: refundedAt))], expected: .refunded),
        .init(name: "refunded, but the grant was already revoked: nothing",
              transactions: [known(old("t1", cancelled: refundedAt))], revoked: true, expected: nil),
        .init(name: "refunded in production while the sandbox copy is not: refunded",
              transactions: [known(old("t1", env: .sandbox)), known(old("t1", cancelled: refundedAt))],
              expected: .refunded),
        .init(name: "production preferred: a cancellation seen only on the sandbox copy does not count",
              transactions: [known(old("t1", env: .sandbox, cancelled: refundedAt)), known(old("t1"))], expected: nil),
        .init(name: "refunded beats sandbox_transaction",
              transactions: [known(old("t1", env: .sandbox, cancelled: refundedAt))], expected: .refunded),
        .init(name: "a valid, not cancelled production transaction: nothing",
              transactions: [known(old("t1"))], links: ReceiptLinks(linked: 1), expected: nil),
        // invalid_receipt / wrong_bundle
        .init(name: "invalid_receipt: every linked receipt definitively rejected",
              links: ReceiptLinks(linked: 2, rejectedInvalid: 2), expected: .invalidReceipt),
        .init(name: "wrong_bundle: every linked receipt rejected, one for its bundle",
              links: ReceiptLinks(linked: 2, rejectedInvalid: 1, rejectedWrongBundle: 1), expected: .wrongBundle),
        .init(name: "wrong_bundle: the only linked receipt belongs to another app",
              links: ReceiptLinks(linked: 1, rejectedWrongBundle: 1), expected: .wrongBundle),
        .init(name: "one linked receipt still unresolved: not invalid_receipt",
              links: ReceiptLinks(linked: 2, rejectedInvalid: 1), expected: nil),
        .init(name: "rejected receipts, but a valid answer showed the transaction: nothing",
              transactions: [known(old("t1"))], links: ReceiptLinks(linked: 1, rejectedInvalid: 1), expected: nil),
        .init(name: "no linked receipt and Apple never showed the transaction: nothing (unverified)",
              links: ReceiptLinks(), expected: nil),
        .init(name: "rejected receipts, revoked grant: nothing",
              links: ReceiptLinks(linked: 1, rejectedInvalid: 1), revoked: true, expected: nil),
        // transaction_not_found
        .init(name: "transaction_not_found: a verified linked receipt does not contain the transaction",
              links: ReceiptLinks(linked: 1, verifiedWithoutTransaction: 1), expected: .transactionNotFound),
        .init(name: "transaction_not_found: one rejected, one verified without it",
              links: ReceiptLinks(linked: 2, rejectedInvalid: 1, verifiedWithoutTransaction: 1),
              expected: .transactionNotFound),
        .init(name: "another receipt showed the transaction: not transaction_not_found",
              transactions: [known(old("t1"))], links: ReceiptLinks(linked: 1, verifiedWithoutTransaction: 1),
              expected: nil),
        // sandbox_transaction
        .init(name: "sandbox_transaction: known in the sandbox only",
              transactions: [known(old("t1", env: .sandbox))], expected: .sandboxTransaction),
        .init(name: "sandbox_transaction even when another linked receipt lacks it (Apple did show it)",
              transactions: [known(old("t1", env: .sandbox))], links: ReceiptLinks(linked: 2, verifiedWithoutTransaction: 1),
              expected: .sandboxTransaction),
        .init(name: "known in both environments: not sandbox_transaction",
              transactions: [known(old("t1", env: .sandbox)), known(old("t1"))], expected: nil),
        .init(name: "sandbox only, but the grant was revoked: nothing",
              transactions: [known(old("t1", env: .sandbox))], revoked: true, expected: nil),
        // rows the rules skip
        .init(name: "grant of an unknown product: left out",
              transactions: [known(old("t1", cancelled: refundedAt))], type: nil, expected: nil),
        .init(name: "non_consumable grants are clawed back the same way",
              transactions: [known(old("t1", cancelled: refundedAt), .nonConsumable)], type: .nonConsumable,
              expected: .refunded),
    ]

    @Test(arguments: cases)
    func reason(_ c: ClawbackCase) {
        let g = grant("g1", tx: "t1", at: t0, revoked: c.revoked ? t0 + day : nil)
        let decision = decide(c.transactions, [facts(g, c.type, links: c.links)])
        #expect(decision.clawbacks.map(\.reason) == (c.expected.map { [$0] } ?? []))
        #expect(decision.duplicates.isEmpty)
    }

    @Test func reasonsAreListedInPrecedenceOrder() {
        #expect(Clawback.rules.map(\.reason) == [.refunded, .familyRevoked, .wrongBundle, .invalidReceipt,
                                                  .transactionNotFound, .sandboxTransaction])
    }

    @Test func oneRowPerActiveGrant() {
        let decision = decide(
            [known(old("t1", quantity: 2, cancelled: refundedAt))],
            [facts(grant("g2", tx: "t1", at: t0 + hour)), facts(grant("g1", tx: "t1", at: t0)),
             facts(grant("g3", tx: "t1", at: t0, revoked: t0 + day))])
        #expect(decision.clawbacks.map(\.grantID) == ["g1", "g2"])
    }

    @Test func rowCellsFollowTheClawbackColumns() throws {
        let cancelled = UTC.millis(year: 2026, month: 11, day: 2, hour: 8, minute: 30)
        let decision = decide(
            [known(old("t2", original: "t1", cancelled: cancelled), .autoRenewable)],
            [facts(grant("g1", tx: "t2", original: nil, user: "u7", product: "vip", quantity: 1,
                         at: UTC.millis(year: 2026, month: 10, day: 1), order: "o5"), .autoRenewable)])
        #expect(ReportFile.clawback.columns == ["grant_id", "user_id", "order_id", "product_id",
            "product_type", "quantity", "transaction_id", "original_transaction_id", "granted_at", "reason",
            "cancellation_date", "cancellation_reason", "first_seen", "amount", "currency", "proceeds", "proceeds_currency"])
        let row = try #require(decision.clawbacks.first)
        #expect(row.cells == ["g1", "u7", "o5", "vip", "auto_renewable", "1", "t2", "t1", "2026-10-01T00:00:00Z",
                              "refunded", "2026-11-02T08:30:00Z", "", "", ""])
        #expect(row.findingKey == "clawback|g1")

        let notFound = decide([], [facts(grant("g9", tx: "t9", original: "t8", at: 0),
                                         links: ReceiptLinks(linked: 1, verifiedWithoutTransaction: 1))])
        let other = try #require(notFound.clawbacks.first)
        #expect(other.cells == ["g9", "u1", "", "gems", "consumable", "1", "t9", "t8", "1970-01-01T00:00:00Z",
                                "transaction_not_found", "", "", "", ""])
    }

    @Test func cancellationReasonIsReported() throws {
        var t = old("t1", cancelled: refundedAt)
        t.cancellationReason = "1"
        let row = try #require(decide([known(t)], [facts(grant("g1", tx: "t1"))]).clawbacks.first)
        #expect(row.cancellationReason == "1")
        #expect(row.cells[11] == "1")
    }
}
