// Refund defense for Google Play (contract "respond: answering Google Play's refund reviews"): what
// the job answers `orders.reviewrefund` when Google announces a pending refund, decided from the
// night's own verdict on the purchase (`PlayLookup.verdict` over `PlayRules.decide`: the same rules
// as the night and `lookup`) and the shop's optional facts, under Apple's policy options
// (`RefundDefenseSettings`). No I/O.

/// Google's `refundPreference`; required in every answer.
public enum PlayReviewPreference: String, Sendable, CaseIterable {
    case decline = "DECLINE"
    case approve = "APPROVE"
    case neutral = "NEUTRAL"
}

/// The body of one `orders.reviewrefund`, as decided (the pending refund token is the caller's).
public struct PlayReviewAnswer: Sendable, Equatable {
    /// Our active grants cover the purchase's units.
    public var delivered: Bool
    public var preference: PlayReviewPreference
    public var sampleContentProvided: Bool
    /// Milliunits of a percent, 0…100,000; nil: left out (unknown).
    public var consumptionMilliunits: Int?

    public init(delivered: Bool, preference: PlayReviewPreference, sampleContentProvided: Bool, consumptionMilliunits: Int?) {
        (self.delivered, self.preference, self.sampleContentProvided, self.consumptionMilliunits) =
            (delivered, preference, sampleContentProvided, consumptionMilliunits)
    }
}

/// What the job does with one pending refund review.
public enum PlayReviewDecision: Sendable, Equatable {
    /// Send this answer (with `--send`; else recorded as what would be sent).
    case answer(PlayReviewAnswer)
    /// Older than Google's 24 hours: not answered.
    case expired
    /// The rules cannot judge the purchase: the verdict kind says why.
    case notJudged(String)
}

public enum PlayRefundDefense {
    /// Google: answer "within 24 hours" of the PendingRefundReviewNotification, counted from its
    /// `eventTimeMillis` (the earliest it can have been received).
    public static let windowMs: EpochMillis = 24 * millisPerHour

    /// A review announced at `requestedAt` may still be answered at `now`.
    public static func isAnswerable(requestedAt: EpochMillis, now: EpochMillis) -> Bool {
        now <= requestedAt + windowMs
    }

    /// The answer to a pending refund of `facts`' purchase, whose verdict is `verdict`. In order:
    /// too late (`expired`); a purchase the rules cannot judge (`not_judged`: refunded, clawed
    /// back, a test purchase, not paid, unknown product, or nothing of ours ties it to a user);
    /// else the answer:
    /// - delivered when our active grants cover the purchase's units;
    /// - `consumptionPercentageMilliunits`: 0 when undelivered; else the shop's figure
    ///   (`iap_consumption`), left out when unknown;
    /// - `sampleContentProvided`: any of the purchase's products' (`iap_products`), else the setting;
    /// - `refundPreference`: `NEUTRAL`, or with `from-delivery` `APPROVE` for an undelivered purchase
    ///   and `DECLINE` for a delivered one consumed at or above `declineAbove`. No consent is asked:
    ///   Google's answer carries no customer data beyond the consumption.
    public static func decide(
        _ facts: PlayFacts, verdict: LookupVerdict, consumption: Int?, sampleContentProvided: Bool?, requestedAt: EpochMillis,
        now: EpochMillis, settings: RefundDefenseSettings
    ) -> PlayReviewDecision {
        guard isAnswerable(requestedAt: requestedAt, now: now) else { return .expired }
        switch verdict.kind {
        case .granted, .compensate, .outsideWindow: break
        default: return .notJudged(verdict.kind.rawValue)
        }
        let active = facts.grants.filter(\.isActive).reduce(0) { $0 + $1.quantity }
        let delivered = verdict.kind == .granted || active >= facts.purchase.units
        let percentage: Int? = delivered ? consumption.flatMap { (0...100_000).contains($0) ? $0 : nil } : 0
        var preference = PlayReviewPreference.neutral
        if settings.refundPreference == .fromDelivery {
            if !delivered {
                preference = .approve
            } else if let percentage, percentage >= settings.declineAbove {
                preference = .decline
            }
        }
        return .answer(
            PlayReviewAnswer(
                delivered: delivered, preference: preference,
                sampleContentProvided: sampleContentProvided ?? settings.sampleContentProvided, consumptionMilliunits: percentage))
    }
}
