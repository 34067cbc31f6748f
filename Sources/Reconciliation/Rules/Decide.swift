// The entry points of the decision core: contract §4 for one family, then the order match
// across families. Pure functions: same input, same output, no I/O.

public enum Decide {
    /// All rules of §4 that look inside one family: compensation candidates (before the inferred
    /// order match), duplicate grants and clawbacks. Output order is deterministic: candidates by
    /// `purchase_date` then `transaction_id`; grants by `granted_at` then `grant_id`.
    public static func family(_ family: Family, settings: DecisionSettings) -> FamilyDecision {
        let facts = FamilyFacts(family)
        let clawbacks = Clawback.rows(in: facts)
        let clawedBack: Set<String> = clawbacks.isEmpty ? [] : Set(clawbacks.map(\.grantID))
        // Grants whose payment stands: active and not being clawed back.
        let standing = facts.grants.filter { $0.grant.isActive && !clawedBack.contains($0.grant.grantID) }
        return FamilyDecision(
            compensations: Compensate.candidates(in: facts, standingGrants: standing.map(\.grant), settings: settings),
            duplicates: DuplicateGrants.rows(standing: standing, in: facts),
            clawbacks: clawbacks,
            unattributed: Compensate.unattributed(in: facts, settings: settings))
    }

    /// The order match for compensation candidates: exact ones pass through; the others get
    /// `inferred` or `none`. `candidates` may come in any order; `openOrders` are the open orders
    /// of the users and products concerned, in any order (orders that are not open are ignored).
    /// Rows come back by `purchase_date`, then `transaction_id`.
    public static func matchOrders(_ candidates: [CompensationCandidate], openOrders: [Order]) -> [CompensationRow] {
        OrderMatching.rows(candidates, openOrders: openOrders)
    }

    /// The inferred order match of one user and product, for a data path that streams them one
    /// group at a time (memory: one group, not every finding). `purchases` are the group's
    /// candidates without an exact order, already in `purchase_date`, `transaction_id`,
    /// environment order; `openOrders` the group's open orders that no candidate matched exactly.
    /// Returns the order inferred for each purchase, in the same order (nil: `none`). The same
    /// rule as `matchOrders`, which a unit test checks on the same data.
    public static func inferOrders(userID: String, productID: String, purchases: [EpochMillis],
                                   openOrders: [Order]) -> [Order?] {
        var pool = OrderMatching.inferable(openOrders, exactlyMatched: [])
        let key = OrderMatching.UserProduct(userID: userID, productID: productID)
        return purchases.map { OrderMatching.inferred(key, purchase: $0, from: &pool) }
    }
}
