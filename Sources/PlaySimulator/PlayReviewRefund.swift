// `orders.reviewrefund` ("Provide refund and chargeback suggestions"): the developer's answer to a
// pending refund a PendingRefundReviewNotification announced. The body's fields are checked as the
// method page gives them; the order must be the package's and the pending refund token one the
// truth's notifications announced for that order by now. "Google Play records your first API call
// ... and ignores subsequent calls, while still returning an OK": the first answer per token is
// kept, the later ones are counted. What Google does with an answer after the 24 hours it asks for
// is unconfirmed: the simulator takes it.

/// The developer's answer to a pending refund.
public enum PlayRefundPreference: String, Sendable, CaseIterable {
    case decline = "DECLINE", approve = "APPROVE", neutral = "NEUTRAL"
}

/// One first answer to a pending refund, as the simulator recorded it.
public struct PlayRefundReview: Sendable, Equatable {
    /// The package in the path.
    public var packageName: String
    /// The order in the path.
    public var orderID: String
    /// `pendingRefundToken`.
    public var pendingRefundToken: String
    /// `refundPreference`.
    public var preference: PlayRefundPreference
    /// `sampleContentProvided`.
    public var sampleContentProvided: Bool
    /// `consumptionPercentageMilliunits` (0…100,000), when sent.
    public var consumptionPercentageMilliunits: Int?
    /// How many `consumptionUsageEvents` were sent.
    public var consumptionUsageEvents: Int
    /// Unix ms of the call (the config's clock).
    public var timeMs: Int64
    /// Later calls for the same token: answered 200 and ignored.
    public var ignoredRepeats: Int

    /// A review as recorded (for the tests' expectations).
    public init(
        packageName: String, orderID: String, pendingRefundToken: String, preference: PlayRefundPreference,
        sampleContentProvided: Bool, consumptionPercentageMilliunits: Int?, consumptionUsageEvents: Int, timeMs: Int64,
        ignoredRepeats: Int = 0
    ) {
        self.packageName = packageName
        self.orderID = orderID
        self.pendingRefundToken = pendingRefundToken
        self.preference = preference
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentageMilliunits = consumptionPercentageMilliunits
        self.consumptionUsageEvents = consumptionUsageEvents
        self.timeMs = timeMs
        self.ignoredRepeats = ignoredRepeats
    }
}

extension PlayState {
    /// The body's members (the method page's).
    static let reviewRefundFields: Set<String> = [
        "pendingRefundToken", "sampleContentProvided", "refundPreference", "consumptionPercentageMilliunits",
        "consumptionUsageEvents",
    ]

    /// The answer to `orders.reviewrefund` and its note.
    mutating func reviewRefund(
        package: String, orderID: String, _ request: PlayRequest, index: PlayIndex, now: Int64
    ) -> Decided {
        let review: PlayRefundReview
        do throws(BadRequest) {
            let body = try RequestObject(request.body, known: Self.reviewRefundFields)
            let token = try body.required("pendingRefundToken", body.string)
            guard !token.isEmpty else { throw BadRequest("pendingRefundToken must not be empty.") }
            let sample = try body.required("sampleContentProvided", body.boolean)
            let preferenceName = try body.required("refundPreference", body.string)
            guard let preference = PlayRefundPreference(rawValue: preferenceName) else {
                throw BadRequest("refundPreference must be DECLINE, APPROVE or NEUTRAL.")
            }
            let consumption = try body.integer("consumptionPercentageMilliunits", in: 0...100_000)
            let events = try body.array("consumptionUsageEvents") ?? []
            guard events.count <= 1000 else { throw BadRequest("consumptionUsageEvents holds more than 1000 events.") }
            for event in events {
                guard case .object = event else { throw BadRequest("consumptionUsageEvents must hold objects.") }
            }
            review = PlayRefundReview(
                packageName: package, orderID: orderID, pendingRefundToken: token, preference: preference,
                sampleContentProvided: sample, consumptionPercentageMilliunits: consumption.map { Int($0) },
                consumptionUsageEvents: events.count, timeMs: now, ignoredRepeats: 0)
        } catch {
            return (GoogleError.invalidArgument(error.message), "400:" + error.message)
        }
        guard let order = index.orders[orderID], order.packageName == package else {
            return (GoogleError.notFound("The order was not found."), "404:unknown order")
        }
        guard let announced = index.pendingRefunds[review.pendingRefundToken], announced.orderID == orderID,
            announced.packageName == package, announced.eventTimeMs <= now
        else {
            let message = "pendingRefundToken is not a pending refund of this order."
            return (GoogleError.invalidArgument(message), "400:" + message)
        }
        if let first = refundReviewIndex[review.pendingRefundToken] {
            refundReviews[first].ignoredRepeats += 1
            return (.json(200, Array("{}".utf8)), "ok:ignored repeat")
        }
        refundReviewIndex[review.pendingRefundToken] = refundReviews.count
        refundReviews.append(review)
        return (.json(200, Array("{}".utf8)), "ok")
    }
}
