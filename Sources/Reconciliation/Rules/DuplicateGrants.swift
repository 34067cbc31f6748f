// Contract §4 duplicate_grants: one row per active grant that should not exist. The earliest
// legitimate grant is kept; a grant gets the first kind that fits, in this order:
// same_transaction, restore_as_purchase, cross_account. (docs/rules.md "duplicate_grants")
//
// Only grants whose payment stands take part: active, of a known product, and not listed in
// clawback.csv (the clawback takes everything back anyway). A grant that is neither judged a
// duplicate nor clawed back is *kept*.

enum DuplicateGrants {
    struct Verdict {
        var kind: DuplicateKind
        var keptGrantID: String
    }

    /// `standing`: the grants that take part, in the order of consideration (`granted_at`, then `grant_id`).
    static func rows(standing: [GrantFacts], in facts: FamilyFacts) -> [DuplicateGrantRow] {
        // Each kind needs a second standing grant (a later one of the transaction, another grant
        // covering a restore, another user's): a family of one, nearly all of them, has none.
        guard standing.count > 1 else { return [] }
        var verdicts: [String: Verdict] = [:]
        sameTransaction(standing, in: facts, verdicts: &verdicts)
        restoreAsPurchase(standing, in: facts, verdicts: &verdicts)
        crossAccount(standing, verdicts: &verdicts)
        return standing.compactMap { grantFacts in
            let grant = grantFacts.grant
            guard let verdict = verdicts[grant.grantID], let type = grantFacts.productType else { return nil }
            return DuplicateGrantRow(
                grantID: grant.grantID, userID: grant.userID, orderID: grant.orderID, productID: grant.productID,
                productType: type, transactionID: grant.transactionID,
                originalTransactionID: facts.apple(grant.transactionID)?.originalTransactionID
                    ?? grant.originalTransactionID,
                kind: verdict.kind, keptGrantID: verdict.keptGrantID, grantedAt: grant.grantedAt)
        }
    }

    /// same_transaction: the grants of one transaction_id are kept in order while their quantities
    /// add up to at most the transaction's quantity (Apple's; when Apple never showed it, the
    /// quantity of the order linked to it by transaction_id, else the first grant's). Every later
    /// one is a duplicate of the first grant. The first grant is always kept.
    static func sameTransaction(_ grants: [GrantFacts], in facts: FamilyFacts, verdicts: inout [String: Verdict]) {
        var byTransaction: [String: [GrantFacts]] = [:]
        for grantFacts in grants { byTransaction[grantFacts.grant.transactionID, default: []].append(grantFacts) }
        for (transactionID, ofTransaction) in byTransaction {
            let first = ofTransaction[0].grant
            let quantity = facts.apple(transactionID).map(units(of:))
                ?? ofTransaction.lazy.compactMap(\.linkedOrderQuantity).first.map { max(1, $0) }
                ?? first.quantity
            var delivered = first.quantity
            var full = false
            for grant in ofTransaction.dropFirst().map(\.grant) {
                if !full && delivered + grant.quantity <= quantity {
                    delivered += grant.quantity
                } else {
                    full = true
                    verdicts[grant.grantID] = Verdict(kind: .sameTransaction, keptGrantID: first.grantID)
                }
            }
        }
    }

    /// restore_as_purchase: a grant of a transaction that is a restore (Restore's rules per product
    /// type), granted again to the same user: non-consumable and auto-renewable against an earlier
    /// kept grant, non-renewing against a kept grant of the original. The transaction's original and
    /// web order line item come from Apple when known, else from the grant row.
    static func restoreAsPurchase(_ grants: [GrantFacts], in facts: FamilyFacts, verdicts: inout [String: Verdict]) {
        for (index, candidate) in grants.enumerated() where verdicts[candidate.grant.grantID] == nil {
            guard let type = candidate.productType, type != .consumable else { continue }
            let grant = candidate.grant
            let apple = facts.apple(grant.transactionID)
            let purchase = Restore.Purchase(
                transactionID: grant.transactionID,
                originalTransactionID: apple?.originalTransactionID ?? grant.originalTransactionID ?? grant.transactionID,
                webOrderLineItemID: apple?.webOrderLineItemID, userID: grant.userID)
            // Non-renewing: the original's grant counts whenever it was made; otherwise only earlier grants.
            let searched = type == .nonRenewing ? grants[...] : grants[..<index]
            let kept = searched.first { other in
                other.grant.grantID != grant.grantID
                    && verdicts[other.grant.grantID] == nil
                    && other.grant.userID == grant.userID
                    && Restore.isRestore(purchase, of: type, coveredBy: other.grant, in: facts)
            }
            if let kept {
                verdicts[grant.grantID] = Verdict(kind: .restoreAsPurchase, keptGrantID: kept.grant.grantID)
            }
        }
    }

    /// cross_account: a non-consumable or auto-renewable family whose kept grants belong to several
    /// users (one Apple ID restored onto several accounts). The user of the earliest kept grant keeps
    /// it; every kept grant of every other user is a duplicate of that earliest grant.
    static func crossAccount(_ grants: [GrantFacts], verdicts: inout [String: Verdict]) {
        let kept = grants.filter {
            verdicts[$0.grant.grantID] == nil && ($0.productType == .nonConsumable || $0.productType == .autoRenewable)
        }
        guard let earliest = kept.first?.grant else { return }
        for other in kept where other.grant.userID != earliest.userID {
            verdicts[other.grant.grantID] = Verdict(kind: .crossAccount, keptGrantID: earliest.grantID)
        }
    }
}
