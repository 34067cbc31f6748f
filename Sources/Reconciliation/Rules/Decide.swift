// The entry points of the decision core: contract §4 for one family, then the order match
// across families. Pure functions: same input, same output, no I/O.

public enum Decide {
    /// All rules of §4 that look inside one family: compensation candidates (before the inferred
    /// order match), duplicate grants and clawbacks. Output order is deterministic: candidates by
    /// `purchase_date` then `transaction_id`; grants by `granted_at` then `grant_id`.
    public static func family(_ family: Family, settings: DecisionSettings) -> FamilyDecision {
        let facts = FamilyFacts(family)
        let clawbacks = Clawback.rows(in: facts)
        let clawedBack = Set(clawbacks.map(\.grantID))
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
}
