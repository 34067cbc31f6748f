// Why a finding of an earlier night is gone tonight (contract §6, closed.csv `closed_because`),
// judged from the data as it is now. The night's SQL judges it in the same statement that closes
// the findings (FindingsHistory.swift); a test compares its judgement with this one.

public enum Closing {
    public enum Reason: String, Sendable, CaseIterable {
        /// The purchase (compensate, unattributed) or the refund (refunds) left its window.
        case outOfWindow = "out_of_window"
        /// The goods were delivered (compensate, unattributed).
        case granted
        /// The grant was taken back (duplicate_grants, clawback).
        case revoked
        /// Apple reversed the refund (clawback).
        case refundReversed = "refund_reversed"
        /// Anything else: a source row edited, deleted or fixed.
        case inputChanged = "input_changed"
    }

    /// What the data shows now of a closed finding's purchase or grant.
    public struct Facts: Sendable, Equatable {
        /// Apple's rows of the finding's transaction (either environment): purchase date and refund.
        public var apple: [(purchaseDate: EpochMillis, revocation: Revocation)]
        /// An active grant of the finding's transaction exists (compensate, unattributed).
        public var grantedNow: Bool
        /// The finding's grant is revoked (duplicate_grants, clawback).
        public var grantRevoked: Bool
        /// The finding's grant's transaction has a reversed refund, in either environment (clawback).
        public var grantRefundReversed: Bool

        public init(apple: [(purchaseDate: EpochMillis, revocation: Revocation)] = [], grantedNow: Bool = false,
                    grantRevoked: Bool = false, grantRefundReversed: Bool = false) {
            self.apple = apple
            self.grantedNow = grantedNow
            self.grantRevoked = grantRevoked
            self.grantRefundReversed = grantRefundReversed
        }

        public static func == (a: Facts, b: Facts) -> Bool {
            a.apple.map(\.purchaseDate) == b.apple.map(\.purchaseDate) && a.apple.map(\.revocation) == b.apple.map(\.revocation)
                && a.grantedNow == b.grantedNow && a.grantRevoked == b.grantRevoked && a.grantRefundReversed == b.grantRefundReversed
        }
    }

    /// The first reason that fits, per report (docs/rules.md, contract §6).
    public static func reason(report: ReportFile, _ f: Facts, settings: DecisionSettings) -> Reason {
        switch report {
        case .compensate, .unattributed:
            if f.apple.contains(where: { $0.purchaseDate < settings.windowStart }) { return .outOfWindow }
            return f.grantedNow ? .granted : .inputChanged
        case .duplicateGrants:
            return f.grantRevoked ? .revoked : .inputChanged
        case .clawback:
            if f.grantRevoked { return .revoked }
            return f.grantRefundReversed ? .refundReversed : .inputChanged
        case .refunds:
            // Both the refund and any reversal before the window.
            let start = settings.refundWindowStart
            let gone = f.apple.contains { a in
                (a.revocation.revokedAt.map { $0 < start } ?? false) && (a.revocation.reversedDate ?? 0) < start
            }
            return gone ? .outOfWindow : .inputChanged
        case .closed, .unresolved, .inputErrors, .consumptionRequests, .coverage, .acknowledge:
            return .inputChanged
        }
    }
}
