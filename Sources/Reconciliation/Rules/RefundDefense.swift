// Refund defense (contract "Answering Apple's refund requests"): what the job tells
// Apple when a player asks it for a refund (a CONSUMPTION_REQUEST), decided from the night's own
// verdict on the purchase (`Lookup.verdict` over `Decide.family`: the same rules as the night and
// `lookup`) and the shop's optional facts. No I/O. Apple's fields and rules: those
// Apple documents for Send Consumption Information v2 and the CONSUMPTION_REQUEST notification.

/// Apple's `deliveryStatus`.
public enum DeliveryStatus: String, Sendable, CaseIterable {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"
}

/// Apple's `refundPreference`. The job sends `DECLINE` and `GRANT_FULL` only: Apple's pages
/// disagree on whether `GRANT_PRORATED` needs a percentage, and the job never sends it.
public enum RefundPreference: String, Sendable, CaseIterable {
    case decline = "DECLINE"
    case grantFull = "GRANT_FULL"
    case grantProrated = "GRANT_PRORATED"
}

/// The body of Send Consumption Information v2 (`ConsumptionRequest`), as decided.
public struct ConsumptionAnswer: Sendable, Equatable {
    /// Always true: without consent nothing is sent (`ConsumptionDecision.noConsent`).
    public var customerConsented = true
    public var deliveryStatus: DeliveryStatus
    public var sampleContentProvided: Bool
    /// Milliunits of a percent, 0…100000; nil: left out (auto-renewable, or unknown).
    public var consumptionPercentage: Int?
    public var refundPreference: RefundPreference?

    public init(deliveryStatus: DeliveryStatus, sampleContentProvided: Bool, consumptionPercentage: Int?,
                refundPreference: RefundPreference?) {
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

/// What the job does with one request.
public enum ConsumptionDecision: Sendable, Equatable {
    /// Send this answer (with `--send`; else it is recorded as what would be sent).
    case answer(ConsumptionAnswer)
    /// Older than Apple's 12 hours: not answered.
    case expired
    /// The player's consent is not in the shop's data (or came after the request): Apple rejects
    /// `customerConsented: false` and says not to answer.
    case noConsent
    /// The rules cannot judge the purchase: the verdict kind says why (`unknown_product`,
    /// `restore`, `refunded`, `claw_back`, `unknown_to_us`).
    case notJudged(String)

    /// The state recorded for it: `answer` (to send), `expired`, `no_consent`, `not_judged`.
    public var state: String {
        switch self {
        case .answer: return "answer"
        case .expired: return "expired"
        case .noConsent: return "no_consent"
        case .notJudged: return "not_judged"
        }
    }
}

/// What the shop's optional relations say about the purchase (each nil when the shop has no row
/// or no such relation).
public struct ShopConsumptionFacts: Sendable, Equatable {
    /// `iap_consents`: each user's earliest consent (UNIX ms).
    public var consentedAt: [String: EpochMillis]
    /// `iap_consumption.consumption_percentage`, milliunits 0…100000 (checked by the caller: a value
    /// out of range is an input error and arrives here as nil).
    public var consumptionPercentage: Int?
    /// `iap_consumption.delivery_status`: an `UNDELIVERED_…` value the shop states.
    public var deliveryStatus: DeliveryStatus?
    /// `iap_products.sample_content_provided` of the product.
    public var sampleContentProvided: Bool?

    public init(consentedAt: [String: EpochMillis] = [:], consumptionPercentage: Int? = nil,
                deliveryStatus: DeliveryStatus? = nil, sampleContentProvided: Bool? = nil) {
        self.consentedAt = consentedAt
        self.consumptionPercentage = consumptionPercentage
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
    }
}

/// `respond`'s options that change an answer.
public struct RefundDefenseSettings: Sendable, Equatable {
    public enum PreferenceMode: String, Sendable, CaseIterable {
        /// No `refundPreference` (the default).
        case off
        /// `DECLINE` for a delivered purchase consumed at or above `declineAbove`, `GRANT_FULL`
        /// for an undelivered one, nothing otherwise.
        case fromDelivery = "from-delivery"
    }
    /// `--sample-content-provided`: for products without `iap_products.sample_content_provided`.
    public var sampleContentProvided = false
    public var refundPreference = PreferenceMode.off
    /// `--decline-above`, milliunits of a percent (50% = 50000).
    public var declineAbove = 50_000

    public init(sampleContentProvided: Bool = false, refundPreference: PreferenceMode = .off, declineAbove: Int = 50_000) {
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
        self.declineAbove = declineAbove
    }
}

public enum RefundDefense {
    /// Apple: "Respond within 12 hours of receiving the CONSUMPTION_REQUEST notification",
    /// counted from its `signedDate` (the earliest it can have been received).
    public static let windowMs: EpochMillis = 12 * millisPerHour

    /// A request signed at `requestedAt` may still be answered at `now`.
    public static func isAnswerable(requestedAt: EpochMillis, now: EpochMillis) -> Bool {
        now <= requestedAt + windowMs
    }

    /// The user a request concerns, the one whose consent `decide` asks for: the holder of the
    /// active grant of a delivered purchase, the purchase's user for an undelivered one (nil:
    /// none of ours).
    public static func user(of transactionID: String, environment: AppStoreEnvironment, in family: Family,
                            verdict: LookupVerdict) -> String? {
        guard let known = family.transactions.first(where: {
            $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
        }) else { return verdict.userID }
        let active = family.grants.map(\.grant).filter { $0.transactionID == transactionID && $0.isActive }
        switch verdict.kind {
        case .sandbox:
            return active.first?.userID ?? known.userID
        case .clawBack where standsInSandbox(known):
            return active.first?.userID ?? known.userID
        case .granted:
            return verdict.userID ?? active.first?.userID
        case .compensate, .outsideWindow:
            return verdict.userID ?? known.userID
        default:
            return verdict.userID ?? active.first?.userID ?? known.userID
        }
    }

    /// A sandbox purchase Apple did not take back. The sandbox is answered as production is
    /// (testers try the flow there), on the same facts; the night's verdict on it (`sandbox`, or
    /// `claw_back` for a granted one: no money was paid) is about money, not delivery.
    static func standsInSandbox(_ known: KnownTransaction) -> Bool {
        known.transaction.environment == .sandbox && known.transaction.cancellationDate == nil && known.familyRevokedDate == nil
    }

    /// The answer to a refund request for the transaction `transactionID` (`environment`) of
    /// `family`, whose night verdict is `verdict`. In order: too late (`expired`); a purchase the
    /// rules cannot judge (`not_judged`); no consent before the request (`no_consent`); else the
    /// answer:
    /// - `deliveryStatus`: `DELIVERED` when our active grants cover the transaction's quantity;
    ///   `UNDELIVERED_OTHER` when the purchase is ours (we know its user) and was never (fully)
    ///   granted, or the shop's own `UNDELIVERED_…` value (`iap_consumption.delivery_status`),
    ///   which is taken as it is, even for a granted purchase (the shop knows a broken item);
    /// - `consumptionPercentage`: left out for an auto-renewable subscription (Apple computes it,
    ///   4000209); 0 when undelivered; else the shop's figure, left out when unknown;
    /// - `sampleContentProvided`: the product's, else the setting;
    /// - `refundPreference`: `RefundDefenseSettings.PreferenceMode`.
    public static func decide(transactionID: String, environment: AppStoreEnvironment, in family: Family,
                              verdict: LookupVerdict, shop: ShopConsumptionFacts, requestedAt: EpochMillis,
                              now: EpochMillis, settings: RefundDefenseSettings) -> ConsumptionDecision {
        guard isAnswerable(requestedAt: requestedAt, now: now) else { return .expired }
        guard let known = family.transactions.first(where: {
            $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
        }) else { return .notJudged(LookupVerdict.Kind.unknownToUs.rawValue) }
        let t = known.transaction
        let active = family.grants.map(\.grant).filter { $0.transactionID == transactionID && $0.isActive }
        let covered = active.reduce(0) { $0 + $1.quantity } >= units(of: t)
        let ours: Bool
        switch verdict.kind {
        case .sandbox where standsInSandbox(known), .clawBack where standsInSandbox(known):
            ours = covered
        case .granted:
            ours = true
        case .compensate, .outsideWindow:
            ours = false
        case .unknownToUs:
            // Nothing of ours ties it to a user, so no consent of theirs can be in our data.
            return .noConsent
        case .sandbox:
            // Refunded or revoked in the sandbox: Apple already decided.
            return .notJudged(LookupVerdict.Kind.refunded.rawValue)
        case .restore, .clawBack, .refunded, .unknownProduct, .notPaid:
            return .notJudged(verdict.kind.rawValue)
        }
        let user = Self.user(of: transactionID, environment: environment, in: family, verdict: verdict)
        guard let type = known.productType else { return .notJudged(LookupVerdict.Kind.unknownProduct.rawValue) }
        guard let user else { return .noConsent }
        guard let consent = shop.consentedAt[user], consent <= requestedAt else { return .noConsent }

        let shopSays = shop.deliveryStatus.flatMap { $0 == .delivered ? nil : $0 }
        let status: DeliveryStatus = shopSays ?? (ours ? .delivered : .undeliveredOther)
        let percentage: Int?
        if type == .autoRenewable {
            percentage = nil
        } else if status != .delivered {
            percentage = 0
        } else {
            percentage = shop.consumptionPercentage.flatMap { (0...100_000).contains($0) ? $0 : nil }
        }
        var preference: RefundPreference?
        if settings.refundPreference == .fromDelivery {
            if status != .delivered {
                preference = .grantFull
            } else if let percentage, percentage >= settings.declineAbove {
                preference = .decline
            }
        }
        return .answer(ConsumptionAnswer(deliveryStatus: status,
                                         sampleContentProvided: shop.sampleContentProvided ?? settings.sampleContentProvided,
                                         consumptionPercentage: percentage, refundPreference: preference))
    }
}

/// The refund defense funnel of one night (summary.json `refund_requests`, the page and the
/// workbook), counted from consumption_requests.csv's rows: so its totals are the file's.
public struct RefundFunnel: Sendable, Equatable, Encodable {
    public var requests = 0
    /// Answered: Apple accepted the answer (202), always inside the 12 hours (`respond` sends
    /// nothing later).
    public var answered_in_time = 0
    /// Per `answer` of the file (`sent`, `would_send`, `no_consent`, `expired`, …).
    public var answers: [String: Int] = [:]
    public var refunded = 0
    /// A lower bound: Apple documents REFUND_DECLINED only for refunds asked for in the app.
    public var declined = 0
    public var pending = 0
    public var no_outcome = 0
    /// Refunded among the requests answered (sent), and among the others, of those whose
    /// outcome is known or overdue (pending left out); nil when there are none. REFUND only.
    public var refund_rate_answered: Double?
    public var refund_rate_unanswered: Double?

    public init() {}

    /// The figures people see (the page, the workbook), in order; rates as decimals, left out
    /// when there is nothing to count them on.
    public var figures: [(name: String, value: String)] {
        var out: [(String, String)] = [("requests", "\(requests)"), ("answered_in_time", "\(answered_in_time)"),
                                       ("refunded", "\(refunded)"), ("declined", "\(declined)"), ("pending", "\(pending)"),
                                       ("no_outcome", "\(no_outcome)")]
        if let r = refund_rate_answered { out.append(("refund_rate_answered", "\(r)")) }
        if let r = refund_rate_unanswered { out.append(("refund_rate_unanswered", "\(r)")) }
        return out
    }

    /// From the file's rows counted per answer, then per outcome.
    public init(_ pairs: [String: [String: Int]]) {
        var settled = (answered: 0, other: 0), refundedIn = (answered: 0, other: 0)
        for (answer, outcomes) in pairs {
            for (outcome, n) in outcomes {
                requests += n
                answers[answer, default: 0] += n
                let sent = answer == "sent"
                if sent { answered_in_time += n }
                switch outcome {
                case "refunded": refunded += n
                case "declined": declined += n
                case "pending": pending += n
                default: no_outcome += n
                }
                guard outcome != "pending" else { continue }
                if sent { settled.answered += n } else { settled.other += n }
                if outcome == "refunded" { if sent { refundedIn.answered += n } else { refundedIn.other += n } }
            }
        }
        func rate(_ a: Int, _ b: Int) -> Double? { b == 0 ? nil : (Double(a) / Double(b) * 10_000).rounded() / 10_000 }
        refund_rate_answered = rate(refundedIn.answered, settled.answered)
        refund_rate_unanswered = rate(refundedIn.other, settled.other)
    }
}
