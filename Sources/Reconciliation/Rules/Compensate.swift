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
            // A refunded (cancelled) or family-revoked transaction owes nothing.
            guard transaction.cancellationDate == nil, known.familyRevokedDate == nil else { continue }
            guard isInWindow(transaction.purchaseDate, settings: settings) else { continue }
            // Unknown product: an input error. No user: unattributed.csv (never compensated blindly).
            guard let type = known.productType, let userID = known.userID else { continue }

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

            let owed = quantity - activeUnits(grants)
            found.append(CompensationCandidate(
                transaction: transaction, productType: type, userID: userID, receiptID: known.receiptID,
                owed: owed, reason: reason, exactOrder: known.exactOrder,
                amount: known.price.amount(units: owed, transactionQuantity: quantity), source: known.source))
        }
        return found.sorted {
            ($0.transaction.purchaseDate, $0.transaction.transactionID)
                < ($1.transaction.purchaseDate, $1.transaction.transactionID)
        }
    }

    /// unattributed.csv: a production purchase in the window, learned from the App Store Server
    /// API alone, that no receipt, order, history or grant ties to a user, neither refunded nor
    /// revoked. It is listed, never compensated.
    static func unattributed(in facts: FamilyFacts, settings: DecisionSettings) -> [UnattributedRow] {
        facts.transactions.compactMap { known in
            let t = known.transaction
            guard t.environment == .production, known.userID == nil,
                  known.source == .notification || known.source == .transactionHistory,
                  t.cancellationDate == nil, known.familyRevokedDate == nil,
                  isInWindow(t.purchaseDate, settings: settings), facts.grants(of: t.transactionID).isEmpty
            else { return nil }
            return UnattributedRow(transactionID: t.transactionID, productID: t.productID, purchaseDate: t.purchaseDate,
                                   amount: known.price.amount(units: units(of: t), transactionQuantity: units(of: t)),
                                   storefront: known.storefront)
        }
    }

    /// The window `[as_of − window_days, as_of]`, both ends included.
    static func isInWindow(_ purchaseDate: EpochMillis, settings: DecisionSettings) -> Bool {
        settings.inWindow(purchaseDate)
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
