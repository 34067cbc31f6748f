// Contract §4 "Not a missed order: a restore", one rule per product type.
//
// A restore hands over again goods the user already holds: it is never owed (compensate)
// and, when it was granted as a new purchase, that grant is a `restore_as_purchase` duplicate.
// Each rule answers one question: does this existing active grant already deliver what the
// purchase being judged stands for?

enum Restore {
    /// The purchase being judged: an Apple transaction (compensate) or a grant (duplicate_grants).
    struct Purchase {
        var transactionID: String
        var originalTransactionID: String
        /// Apple's `web_order_line_item_id`; only auto-renewables have one.
        var webOrderLineItemID: String?
        /// The user the goods would go to.
        var userID: String
    }

    static func isRestore(_ purchase: Purchase, of type: ProductType, coveredBy grant: Grant,
                          in facts: FamilyFacts) -> Bool {
        switch type {
        case .consumable: return false  // bought again and again: never a restore
        case .nonConsumable: return nonConsumable(purchase, coveredBy: grant)
        case .nonRenewing: return nonRenewing(purchase, coveredBy: grant)
        case .autoRenewable: return autoRenewable(purchase, coveredBy: grant, in: facts)
        }
    }

    /// non_consumable: another transaction of the same original (the family) already has an
    /// active grant for that user. Buying a non-consumable again yields a new transaction_id with
    /// the same original_transaction_id.
    static func nonConsumable(_ purchase: Purchase, coveredBy grant: Grant) -> Bool {
        grant.userID == purchase.userID && grant.transactionID != purchase.transactionID
    }

    /// non_renewing: `transaction_id ≠ original_transaction_id` and the original is granted to that user.
    static func nonRenewing(_ purchase: Purchase, coveredBy grant: Grant) -> Bool {
        purchase.transactionID != purchase.originalTransactionID
            && grant.transactionID == purchase.originalTransactionID
            && grant.userID == purchase.userID
    }

    /// auto_renewable: another transaction with the same `web_order_line_item_id` (the same
    /// billing period) already has an active grant, whoever holds it.
    static func autoRenewable(_ purchase: Purchase, coveredBy grant: Grant, in facts: FamilyFacts) -> Bool {
        guard let period = purchase.webOrderLineItemID else { return false }
        return grant.transactionID != purchase.transactionID
            && facts.apple(grant.transactionID)?.webOrderLineItemID == period
    }
}
