// Contract §4 clawback: one row per active grant whose payment is gone or never existed,
// with the first reason that fits, in this order. (docs/rules.md "clawback")
//
// A grant with no linked receipt whose transaction Apple never showed is not reported:
// nothing says its payment is gone (it is, at most, unverified).

enum Clawback {
    /// The reasons in precedence order, each with its rule (made once, not once per grant).
    static let rules: [(reason: ClawbackReason, applies: @Sendable (GrantFacts, FamilyFacts) -> Bool)] = [
        (.refunded, refunded),
        (.familyRevoked, familyRevoked),
        (.wrongBundle, wrongBundle),
        (.invalidReceipt, invalidReceipt),
        (.transactionNotFound, transactionNotFound),
        (.sandboxTransaction, sandboxTransaction),
    ]

    static func rows(in facts: FamilyFacts) -> [ClawbackRow] {
        facts.grants.compactMap { row(for: $0, in: facts) }
    }

    static func row(for grantFacts: GrantFacts, in facts: FamilyFacts) -> ClawbackRow? {
        let grant = grantFacts.grant
        // Revoked grants were already taken back; unknown products are input errors.
        guard grant.isActive, let type = grantFacts.productType else { return nil }
        guard let reason = rules.first(where: { $0.applies(grantFacts, facts) })?.reason else { return nil }
        let known = facts.known(grant.transactionID)
        let apple = known?.transaction
        var price = known?.price ?? PriceFacts()
        if price.listUnit == nil { price.listUnit = grantFacts.listUnitPrice }
        let revokedByFamily = reason == .familyRevoked
        return ClawbackRow(
            grantID: grant.grantID, userID: grant.userID, orderID: grant.orderID, productID: grant.productID,
            productType: type, quantity: grant.quantity, transactionID: grant.transactionID,
            originalTransactionID: apple?.originalTransactionID ?? grant.originalTransactionID,
            grantedAt: grant.grantedAt, reason: reason,
            cancellationDate: revokedByFamily ? known?.familyRevokedDate : apple?.cancellationDate,
            cancellationReason: revokedByFamily ? nil : apple?.cancellationReason,
            amount: price.amount(units: grant.quantity, transactionQuantity: apple.map(units(of:)) ?? max(1, grant.quantity)))
    }

    /// family_revoked: Apple withdrew a family-shared purchase (revocationType FAMILY_REVOKE): the
    /// access goes, no money was returned (never in refunds.csv).
    static func familyRevoked(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        facts.knownIndex(grant.grant.transactionID).flatMap { facts.transactions[$0].familyRevokedDate } != nil
    }

    /// refunded: the grant's transaction carries a `cancellation_date` (production preferred).
    static func refunded(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        facts.knownIndex(grant.grant.transactionID).flatMap { facts.transactions[$0].transaction.cancellationDate } != nil
    }

    /// Every linked receipt (same transaction_id or order_id) was definitively rejected, there is
    /// at least one, and no valid answer ever showed the transaction.
    static func everyLinkedReceiptRejected(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        let links = grant.links
        return links.linked > 0
            && links.rejectedInvalid + links.rejectedWrongBundle >= links.linked
            && !facts.appleShowed(grant.grant.transactionID)
    }

    /// wrong_bundle: as invalid_receipt, and at least one linked receipt belongs to another app.
    static func wrongBundle(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        everyLinkedReceiptRejected(grant, facts) && grant.links.rejectedWrongBundle > 0
    }

    /// invalid_receipt: every linked receipt was definitively rejected (none for its bundle:
    /// wrong_bundle is checked first).
    static func invalidReceipt(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        everyLinkedReceiptRejected(grant, facts)
    }

    /// transaction_not_found: Apple never showed the transaction in a valid answer, yet a linked
    /// receipt was verified and does not contain it.
    static func transactionNotFound(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        !facts.appleShowed(grant.grant.transactionID) && grant.links.verifiedWithoutTransaction > 0
    }

    /// sandbox_transaction: the transaction is known in the sandbox only (a tester's free purchase).
    static func sandboxTransaction(_ grant: GrantFacts, _ facts: FamilyFacts) -> Bool {
        facts.isSandboxOnly(grant.grant.transactionID)
    }
}
