import AppStore
import PlayStore
import Reconciliation

/// Google Play's endpoints as rows of the one transport: each a request with its
/// budget, and the reply classes the state machine acts on. Google's quotas ("Quotas", Play
/// Developer API): 3,000 queries a minute per bucket (One-time Purchases, Orders), independent;
/// the voided purchases list 30 queries in any 30 seconds and 6,000 a day per package. The budget
/// is per second (`RateBudget`'s window), and Google counts any 60 seconds at its end, where
/// requests paced at the job may arrive a little bunched. So a bucket is taken as 49 a second, 44
/// at 90%: 2,640 a minute, room under the 2,700 (90% of Google's 3,000) no 60 s may pass; `make
/// bench-play` holds it (docs/figures.md). The voided list goes at most once a second per package.
package enum PlayRows {
    /// Google's 3,000 a minute per bucket as the per-second rate the budget's 90% is taken of.
    static let bucketRate = 49.0
    /// The One-time Purchases bucket: getproductpurchasev2.
    package static let oneTimePurchases = AppStoreBudget(name: "play_one_time_purchases", appleRate: bucketRate)
    /// The Orders bucket: orders.batchget (and reviewrefund).
    package static let orders = AppStoreBudget(name: "play_orders", appleRate: bucketRate)
    /// purchases.voidedpurchases.list, per package: 30 in any 30 s is one a second.
    package static let voidedPurchases = AppStoreBudget(name: "play_voided_purchases", appleRate: 1)

    /// Pub/Sub's pull and acknowledge: Google's quotas there are far above a night's needs; the
    /// budget only keeps a loop from hammering it.
    package static let pubsub = AppStoreBudget(name: "play_pubsub", appleRate: 20)

    /// `--play-rate`'s buckets: the option's name of each, and its budget.
    package static let buckets: [(option: String, budget: AppStoreBudget)] = [
        ("one_time_purchases", oneTimePurchases), ("orders", orders), ("voided_purchases", voidedPurchases),
    ]

    /// Budgets Google counts per package, not per project.
    static func isPerPackage(_ budget: AppStoreBudget) -> Bool { budget == voidedPurchases }

    /// getproductpurchasev2 of `token` in `package`; nil when either fails its check (never sent).
    package static func productPurchase(package: String, token: String) -> AppStoreRequest? {
        PlayPaths.productPurchase(package: package, token: token).map { request($0, budget: oneTimePurchases, package: package) }
    }

    /// orders.batchget of 1…1,000 distinct order ids.
    package static func batchGetOrders(package: String, orderIDs: [String]) -> AppStoreRequest? {
        PlayPaths.batchGetOrders(package: package, orderIDs: orderIDs).map { request($0, budget: orders, package: package) }
    }

    /// One page of voided purchases from `startTime` to `endTime` (Unix ms; nil: Google's now).
    package static func voidedPurchases(
        package: String, startTime: Int64, endTime: Int64? = nil, pageToken: String?
    ) -> AppStoreRequest? {
        PlayPaths.voidedPurchases(package: package, startTime: startTime, endTime: endTime, pageToken: pageToken).map {
            request($0, budget: voidedPurchases, package: package)
        }
    }

    /// orders.reviewrefund of `orderID`: the answer `review` (sent once: Google keeps the first).
    package static func reviewRefund(package: String, orderID: String, review: RefundReview) -> AppStoreRequest? {
        PlayPaths.reviewRefund(package: package, orderID: orderID).map {
            AppStoreRequest(
                name: "play_review_refund", method: .post, service: .googlePlay, environment: .production,
                path: $0, body: review.body, budget: orders, bundleID: package)
        }
    }

    /// One pull of at most `maxMessages` from the job's subscription.
    package static func pull(subscription: String, maxMessages: Int) -> AppStoreRequest? {
        PlayPaths.pubsubPull(subscription: subscription).map {
            AppStoreRequest(
                name: "pubsub_pull", method: .post, service: .googlePubSub, environment: .production, path: $0,
                body: PubSubMessage.pullBody(maxMessages: maxMessages), budget: pubsub, bundleID: nil)
        }
    }

    /// The acknowledgement of `ackIDs` (messages stored first).
    package static func acknowledge(subscription: String, ackIDs: [String]) -> AppStoreRequest? {
        guard !ackIDs.isEmpty else { return nil }
        return PlayPaths.pubsubAcknowledge(subscription: subscription).map {
            AppStoreRequest(
                name: "pubsub_acknowledge", method: .post, service: .googlePubSub, environment: .production, path: $0,
                body: PubSubMessage.acknowledgeBody(ackIDs), budget: pubsub, bundleID: nil)
        }
    }

    /// A GET of the Play Developer API. `bundleID` carries the package (the request's app, for the
    /// per-package budget and the counts); Play has no environment: production.
    static func request(_ path: String, budget: AppStoreBudget, package: String) -> AppStoreRequest {
        AppStoreRequest(
            name: budget.name, method: .get, service: .googlePlay, environment: .production, path: path, body: [],
            budget: budget, bundleID: package)
    }

    /// The transport's reply of a Google answer (`PlayAPI.classify`): a 410 is a refusal with
    /// errorCode 410, which the exchange reads as "gone" (no rejection on its own).
    package static func reply(httpStatus: Int, body: [UInt8], retryAfter: String?, nowMs: Int64) -> AppStoreReply {
        switch PlayAPI.classify(httpStatus: httpStatus, body: body, retryAfter: retryAfter, nowMs: nowMs) {
        case .ok(let body): return .answer(httpStatus: httpStatus, body: body)
        case .unauthorized: return .unauthorized
        case .notFound: return .notFound
        case .gone: return .refused("the purchase token is no longer valid (HTTP 410)", errorCode: 410)
        case .rateLimited(let until): return .rateLimited(untilMs: until)
        case .retry(let problem): return .retry(problem)
        case .refused(let status, let problem): return .refused(problem, errorCode: status)
        }
    }
}
