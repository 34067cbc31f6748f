// The quiet-family predicate, as an oracle for the tests. The night never calls it: it proves a
// family quiet in SQL before reading it (`crowdedKeysSQL`, the `settled` and `onlyGrant` flags,
// `FamilyStream.isQuiet`), over every family at once; RuleBookTests holds that pre-filter to this
// rule and checks that the rules find nothing where it holds.

import Reconciliation

extension Decide {
    /// A *quiet* family: no rule can find anything in it, so the night may skip it unread (its
    /// SQL proves it before the family is sent: `crowdedKeysSQL`, the `settled` and `onlyGrant`
    /// flags; a property test checks that the SQL's predicate is this one and that the rules find
    /// nothing where it holds). One transaction, in production, that Apple never took back
    /// (refunded or revoked, reversed or not), and one grant: active, of that transaction,
    /// covering its quantity. Nothing to compensate (covered), no duplicate (one grant), nothing
    /// to claw back (its transaction stands, in production), nothing unattributed (a grant).
    public static func isQuiet(_ family: Family) -> Bool {
        guard family.transactions.count == 1, family.grants.count == 1 else { return false }
        let known = family.transactions[0], t = known.transaction, g = family.grants[0].grant
        return t.environment == .production && !known.revocation.isRevoked
            && t.cancellationDate == nil && known.familyRevokedDate == nil
            && g.transactionID == t.transactionID && g.isActive && g.quantity >= units(of: t)
    }
}
