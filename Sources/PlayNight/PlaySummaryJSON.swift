// summary.json's `google_play`: what the night's Google Play stages did, as the contract names it.

import NightLearn
import Reconciliation

/// summary.json `google_play`.
package struct GooglePlayJSON: Encodable {
    var candidates, requests, purchased, pending, cancelled, unknown, unsettled, no_package, rate_limited: Int
    var doubted_packages, refused_packages: [String]
    var skipped: String?
    var orders: PlayOrdersJSON
    var voided: PlayVoidedJSON?
    var notifications: PlayNotificationsJSON?
    var acknowledge_next: String?
}
struct PlayNotificationsJSON: Encodable {
    var pulled, stored, unreadable, tokens, refund_reviews, pulls: Int
    var skipped: String?
}
struct PlayOrdersJSON: Encodable {
    var asked, stored, unknown, unanswered, requests: Int
}
struct PlayVoidedJSON: Encodable {
    var records, stored, requests, rate_limited: Int
    var finished, unfinished, stale: [String]
    var lost: [String: String]
    var skipped: String?
    var position_age_seconds: [String: Double]
}

extension GooglePlayJSON {
    /// summary.json's `google_play` of the night's Play counts (contract "Google Play purchases").
    package init(_ c: PlayCounts, voided v: PlayVoidedCounts?, acknowledgeNext: EpochMillis?) {
        self.init(
            candidates: c.candidates, requests: c.requests, purchased: c.purchased, pending: c.pending, cancelled: c.cancelled,
            unknown: c.unknown, unsettled: c.unsettled, no_package: c.noPackage, rate_limited: c.rateLimited,
            doubted_packages: c.doubtedPackages, refused_packages: c.refusedPackages, skipped: c.skipped,
            orders: PlayOrdersJSON(
                asked: c.orders.asked, stored: c.orders.stored, unknown: c.orders.unknown, unanswered: c.orders.unanswered,
                requests: c.orders.requests),
            voided: v.map {
                PlayVoidedJSON(
                    records: $0.records, stored: $0.stored, requests: $0.requests, rate_limited: $0.rateLimited,
                    finished: $0.finished, unfinished: $0.unfinished, stale: $0.stale, lost: $0.lost, skipped: $0.skipped,
                    position_age_seconds: $0.positionAgeSeconds)
            },
            notifications: c.notifications.map {
                PlayNotificationsJSON(
                    pulled: $0.pulled, stored: $0.stored, unreadable: $0.unreadable, tokens: $0.tokens,
                    refund_reviews: $0.refundReviews, pulls: $0.pulls, skipped: $0.skipped)
            },
            acknowledge_next: acknowledgeNext.map(UTC.timestamp))
    }
}
