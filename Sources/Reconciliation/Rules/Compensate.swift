// Contract §4 compensate: a valid, not cancelled, production transaction purchased in the
// window whose active grants cover less than its quantity, and that is not a restore.
// (docs/rules.md "compensate")

enum Compensate {
    /// `standingGrants`: the family's active grants less those listed in clawback.csv; only they
    /// make a purchase a restore (goods being taken back do not count as held).
    static func candidates(in facts: FamilyFacts, standingGrants: [Grant],
                           settings: DecisionSettings) -> [CompensationCandidate] {
        var found: [CompensationCandidate] = []
        for known in facts.transactions {
            let transaction = known.transaction
            // Sandbox transactions are never compensated; production is the one used when both are known.
            guard transaction.environment == .production else { continue }
            // A refunded (cancelled) transaction owes nothing.
            guard transaction.cancellationDate == nil else { continue }
            guard isInWindow(transaction.purchaseDate, settings: settings) else { continue }
            // Unknown product, or no receipt/user: reported as an input error elsewhere, not decided here.
            guard let type = known.productType, let userID = known.userID, let receiptID = known.receiptID
            else { continue }

            let quantity = units(of: transaction)
            let grants = facts.grants(of: transaction.transactionID)
            guard let reason = reason(grants: grants, quantity: quantity) else { continue }  // fully granted

            let purchase = Restore.Purchase(
                transactionID: transaction.transactionID, originalTransactionID: transaction.originalTransactionID,
                webOrderLineItemID: transaction.webOrderLineItemID, userID: userID)
            let isRestore = standingGrants.contains {
                Restore.isRestore(purchase, of: type, coveredBy: $0, in: facts)
            }
            guard !isRestore else { continue }

            found.append(CompensationCandidate(
                transaction: transaction, productType: type, userID: userID, receiptID: receiptID,
                owed: quantity - activeUnits(grants), reason: reason, exactOrder: known.exactOrder))
        }
        return found.sorted {
            ($0.transaction.purchaseDate, $0.transaction.transactionID)
                < ($1.transaction.purchaseDate, $1.transaction.transactionID)
        }
    }

    /// The window `[as_of − window_days, as_of]`, both ends included.
    static func isInWindow(_ purchaseDate: EpochMillis, settings: DecisionSettings) -> Bool {
        let start = settings.asOf - EpochMillis(settings.windowDays) * millisPerDay
        return start <= purchaseDate && purchaseDate <= settings.asOf
    }

    /// The reason a transaction is owed units, given every grant (active or revoked, any user) of
    /// it; nil when its active grants cover its quantity.
    static func reason(grants: [Grant], quantity: Int) -> CompensationReason? {
        if paidNotGranted(grants) { return .paidNotGranted }
        if revokedNotRefunded(grants) { return .revokedNotRefunded }
        if partiallyGranted(grants, quantity: quantity) { return .partiallyGranted }
        return nil
    }

    /// Units delivered by the active grants.
    static func activeUnits(_ grants: [Grant]) -> Int {
        grants.filter(\.isActive).reduce(0) { $0 + $1.quantity }
    }

    /// paid_not_granted: no grant at all, active or revoked.
    static func paidNotGranted(_ grants: [Grant]) -> Bool { grants.isEmpty }

    /// revoked_not_refunded: grants exist and every one was revoked, yet Apple shows no refund
    /// (a cancelled transaction never gets this far).
    static func revokedNotRefunded(_ grants: [Grant]) -> Bool {
        !grants.isEmpty && grants.allSatisfy { !$0.isActive }
    }

    /// partially_granted: some active grants, covering less than the quantity.
    static func partiallyGranted(_ grants: [Grant], quantity: Int) -> Bool {
        let granted = activeUnits(grants)
        return granted > 0 && granted < quantity
    }
}
