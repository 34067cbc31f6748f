// Refunds, reversals and Family Sharing revocations (docs/rules.md "Refunds, reversals, Family
// Sharing", "refunds.csv"): what Apple said, as the job learned it, and what the rules make of it.
// The night's SQL gathers these facts; these functions decide (FamilyRow reads them through
// `KnownTransaction.learned`, refunds.csv and closed.csv are checked against them).

/// What Apple said of a transaction's refund, as learned and merged (`apple_transactions`):
/// nothing is decided yet.
public struct Revocation: Sendable, Equatable {
    /// verifyReceipt's `cancellation_date` (a signed refund's `revocationDate` is stored here too).
    public var cancellationDate: EpochMillis?
    public var cancellationReason: String?
    /// A signed `revocationDate` and its `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`,
    /// `FAMILY_REVOKE` or none).
    public var revocationDate: EpochMillis?
    public var revocationType: String?
    /// A REFUND_REVERSED notification's `signedDate` (the latest).
    public var reversedDate: EpochMillis?

    public init(cancellationDate: EpochMillis? = nil, cancellationReason: String? = nil, revocationDate: EpochMillis? = nil,
                revocationType: String? = nil, reversedDate: EpochMillis? = nil) {
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.revocationDate = revocationDate
        self.revocationType = revocationType
        self.reversedDate = reversedDate
    }

    /// Apple took the purchase back (refund or family revocation), reversed or not.
    public var isRevoked: Bool { cancellationDate != nil || revocationDate != nil }

    /// When Apple took it back: the cancellation, else the revocation.
    public var revokedAt: EpochMillis? { cancellationDate ?? revocationDate }

    /// Reversed: a REFUND_REVERSED came on or after the revocation. A reversed purchase is not
    /// refunded: never clawed back, compensated like any other.
    public var isReversed: Bool {
        guard let reversedDate, let revokedAt else { return false }
        return reversedDate >= revokedAt
    }

    /// `revocationType` FAMILY_REVOKE: no money returned, never a refund.
    public var isFamilyRevoke: Bool { revocationType == "FAMILY_REVOKE" }

    /// The refund's date for refunds.csv: a cancellation, or a revocation that is not a family
    /// revocation; nil when Apple refunded nothing.
    public var refundDate: EpochMillis? { cancellationDate ?? (isFamilyRevoke ? nil : revocationDate) }

    /// The cancellation the rules see: none once reversed (a revocation, once learned, stays;
    /// only a reversal hides it).
    public var standingCancellation: EpochMillis? { isReversed ? nil : cancellationDate }

    /// The family revocation the rules see: its date, unless reversed.
    public var standingFamilyRevocation: EpochMillis? { isFamilyRevoke && !isReversed ? revocationDate : nil }
}

extension KnownTransaction {
    /// The transaction as the rules see it, given what Apple said of its refund: its cancellation
    /// (and reason) while the refund stands, its family revocation apart. `revocation` is kept as
    /// learned (the quiet-family predicate reads it).
    public func learned(_ r: Revocation) -> KnownTransaction {
        var known = self
        known.revocation = r
        known.transaction.cancellationDate = r.standingCancellation
        known.transaction.cancellationReason = r.isReversed ? nil : r.cancellationReason
        known.familyRevokedDate = r.standingFamilyRevocation
        return known
    }
}

/// refunds.csv (docs/rules.md "refunds.csv").
public enum Refunds {
    /// A production transaction Apple refunded, whose refund or reversal lies in the refund window.
    public static func isListed(_ r: Revocation, environment: AppStoreEnvironment, settings: DecisionSettings) -> Bool {
        guard environment == .production, let refunded = r.refundDate else { return false }
        return settings.inRefundWindow(refunded) || (r.reversedDate.map(settings.inRefundWindow) ?? false)
    }

    /// A refund's `state`: Apple reversed it; else no grant ever; else every grant revoked; else
    /// an active grant is left (listed in clawback.csv as `refunded`).
    public enum State: String, Sendable, CaseIterable {
        case reversed
        case neverGranted = "never_granted"
        case clawedBack = "clawed_back"
        case stillGranted = "still_granted"
    }

    /// `grants`: every grant of the transaction id, active or revoked; `activeGrants`: those not revoked.
    public static func state(_ r: Revocation, grants: Int, activeGrants: Int) -> State {
        if r.isReversed { return .reversed }
        if grants == 0 { return .neverGranted }
        return activeGrants == 0 ? .clawedBack : .stillGranted
    }
}
