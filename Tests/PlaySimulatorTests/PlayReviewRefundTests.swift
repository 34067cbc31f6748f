// orders.reviewrefund over HTTP: the first answer to a pending refund kept, later ones answered 200
// and ignored; the order and the pending refund token checked against the truth; each field of
// the body checked; the scope, the package and the Orders bucket.

import Foundation
import PlaySimulator
import PlayStore
import Testing

@Suite("Google Play simulator: orders.reviewrefund")
struct PlayReviewRefundTests {
    static let order = "GPA.1111-2222-3333-44444"
    static let otherOrder = "GPA.1111-2222-3333-55555"

    /// A pending refund of each of the game's two orders, the second announced an hour from now.
    static let truth = PlayTruth(
        purchases: PlayWorld.truth.purchases,
        notifications: [
            .init(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start - 1000,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-1", orderID: order, refundReason: 7, obfuscatedAccountID: "acct-1")),
            .init(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start + 3_600_000,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-2", orderID: otherOrder, refundReason: 7, obfuscatedAccountID: nil)),
        ])

    static let good =
        #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"refundPreference":"DECLINE","#
        + #""consumptionPercentageMilliunits":42000,"consumptionUsageEvents":[{},{},{}]}"#

    static func body(token: String = "prt-1", preference: String = "APPROVE") -> String {
        #"{"pendingRefundToken":"\#(token)","sampleContentProvided":false,"refundPreference":"\#(preference)"}"#
    }

    @Test("the first answer is recorded; a second is answered 200 and ignored")
    func firstAnswer() throws {
        let w = try PlayWorld(truth: Self.truth)
        let auth = "Bearer " + (try w.accessToken())
        let first = try w.post(PlayWorld.reviewRefundPath(Self.order), Self.good, authorization: auth)
        #expect(first.status == 200)
        #expect(first.text == "{}")
        let expected = PlayRefundReview(
            packageName: PlayWorld.game, orderID: Self.order, pendingRefundToken: "prt-1", preference: .decline,
            sampleContentProvided: true, consumptionPercentageMilliunits: 42000, consumptionUsageEvents: 3,
            timeMs: PlayWorld.start, ignoredRepeats: 0)
        #expect(w.service.refundReviews == [expected])
        w.clock.advance(ms: 5000)
        let second = try w.post(PlayWorld.reviewRefundPath(Self.order), Self.body(), authorization: auth)
        #expect(second.status == 200)
        #expect(second.text == "{}")
        var repeated = expected
        repeated.ignoredRepeats = 1
        #expect(w.service.refundReviews == [repeated])
        #expect(w.service.calls.last?.note == "ok:ignored repeat")
        #expect(w.service.calls.last?.ids == [Self.order])
        #expect(w.service.calls.last?.endpoint == .reviewRefund)
    }

    @Test("PlayStore's request body is taken as it is")
    func playStoreBody() throws {
        let w = try PlayWorld(truth: Self.truth)
        let review = RefundReview(
            pendingRefundToken: "prt-1", sampleContentProvided: false, preference: .neutral, consumptionMilliunits: 250)
        let r = try w.post(
            PlayWorld.reviewRefundPath(Self.order), bytes: review.body,
            authorization: "Bearer " + (try w.accessToken()))
        #expect(r.status == 200)
        #expect(w.service.refundReviews.map(\.preference) == [.neutral])
        #expect(w.service.refundReviews.first?.consumptionPercentageMilliunits == 250)
        #expect(w.service.refundReviews.first?.sampleContentProvided == false)
    }

    @Test("an unknown order, or another app's, is 404")
    func unknownOrder() throws {
        let w = try PlayWorld(truth: Self.truth)
        let auth = "Bearer " + (try w.accessToken())
        let unknown = try w.post(
            PlayWorld.reviewRefundPath("GPA.0000-0000-0000-00000"), Self.body(), authorization: auth)
        #expect(unknown.status == 404)
        #expect((jsonObject(unknown.body)?["error"] as? [String: Any])?["status"] as? String == "NOT_FOUND")
        let otherApp = try w.post(
            PlayWorld.reviewRefundPath("GPA.9999-8888-7777-66666"), Self.body(), authorization: auth)
        #expect(otherApp.status == 404)
        #expect(w.service.refundReviews.isEmpty)
    }

    @Test("a token no notification announced for the order, or not yet, is 400")
    func notAnnounced() throws {
        let w = try PlayWorld(truth: Self.truth)
        let auth = "Bearer " + (try w.accessToken())
        for (order, token) in [(Self.order, "prt-never"), (Self.order, "prt-2"), (Self.otherOrder, "prt-1")] {
            let r = try w.post(PlayWorld.reviewRefundPath(order), Self.body(token: token), authorization: auth)
            #expect(r.status == 400, "\(order) \(token)")
            let message = (jsonObject(r.body)?["error"] as? [String: Any])?["message"] as? String
            #expect(message?.contains("pendingRefundToken") == true)
        }
        let early = try w.post(
            PlayWorld.reviewRefundPath(Self.otherOrder), Self.body(token: "prt-2"), authorization: auth)
        #expect(early.status == 400)
        #expect(w.service.refundReviews.isEmpty)
        w.clock.advance(ms: 3_600_000)
        let fresh = "Bearer " + (try w.accessToken())
        let late = try w.post(
            PlayWorld.reviewRefundPath(Self.otherOrder), Self.body(token: "prt-2"), authorization: fresh)
        #expect(late.status == 200)
        #expect(w.service.refundReviews.map(\.pendingRefundToken) == ["prt-2"])
        #expect(w.service.refundReviews.first?.preference == .approve)
        #expect(w.service.refundReviews.first?.consumptionPercentageMilliunits == nil)
    }

    /// A good body's three required members, then `extra`.
    static func withRequired(_ extra: String) -> String {
        #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"refundPreference":"DECLINE""# + extra + "}"
    }

    /// Bodies Google refuses, each with the field its message names.
    static let badBodies: [(String, String)] = [
        (#"{"sampleContentProvided":true,"refundPreference":"DECLINE"}"#, "pendingRefundToken"),
        (#"{"pendingRefundToken":7,"sampleContentProvided":true,"refundPreference":"DECLINE"}"#, "pendingRefundToken"),
        (#"{"pendingRefundToken":"","sampleContentProvided":true,"refundPreference":"DECLINE"}"#, "pendingRefundToken"),
        (#"{"pendingRefundToken":"prt-1","refundPreference":"DECLINE"}"#, "sampleContentProvided"),
        (
            #"{"pendingRefundToken":"prt-1","sampleContentProvided":"true","refundPreference":"DECLINE"}"#,
            "sampleContentProvided"
        ),
        (#"{"pendingRefundToken":"prt-1","sampleContentProvided":true}"#, "refundPreference"),
        (
            #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"refundPreference":"MAYBE"}"#,
            "refundPreference"
        ),
        (
            #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"#
                + #""refundPreference":"REFUND_PREFERENCE_UNSPECIFIED"}"#, "refundPreference"
        ),
        (withRequired(#","consumptionPercentageMilliunits":100001"#), "consumptionPercentageMilliunits"),
        (withRequired(#","consumptionPercentageMilliunits":-1"#), "consumptionPercentageMilliunits"),
        (withRequired(#","consumptionPercentageMilliunits":4.5"#), "consumptionPercentageMilliunits"),
        (withRequired(#","consumptionUsageEvents":{}"#), "consumptionUsageEvents"),
        (withRequired(#","consumptionUsageEvents":[1]"#), "consumptionUsageEvents"),
        (withRequired(#","consumptionUsageEvents":["# + manyEvents(1001) + "]"), "consumptionUsageEvents"),
        (withRequired(#","refundReason":7"#), #"Unknown name "refundReason""#),
        ("pendingRefundToken=prt-1", "Invalid JSON payload"),
        (#"[{"pendingRefundToken":"prt-1"}]"#, "Invalid JSON payload"),
    ]

    /// `n` empty usage events, comma-separated.
    static func manyEvents(_ n: Int) -> String { Array(repeating: "{}", count: n).joined(separator: ",") }

    @Test("a missing or invalid field is 400 naming it, and nothing is recorded", arguments: badBodies)
    func badBody(_ args: (String, String)) throws {
        let (body, field) = args
        let w = try PlayWorld(truth: Self.truth)
        let auth = "Bearer " + (try w.accessToken())
        let r = try w.post(PlayWorld.reviewRefundPath(Self.order), body, authorization: auth)
        #expect(r.status == 400, "\(body.prefix(120))")
        let error = try #require(jsonObject(r.body)?["error"] as? [String: Any])
        #expect(error["status"] as? String == "INVALID_ARGUMENT")
        #expect((error["message"] as? String)?.contains(field) == true, "\(r.text)")
        #expect(w.service.refundReviews.isEmpty)
    }

    @Test("the limits themselves are taken: 100000 milliunits, 1000 usage events, a number as a string")
    func limits() throws {
        let w = try PlayWorld(truth: Self.truth)
        let body =
            #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"refundPreference":"NEUTRAL","#
            + #""consumptionPercentageMilliunits":"100000","consumptionUsageEvents":["# + Self.manyEvents(1000) + "]}"
        let auth = "Bearer " + (try w.accessToken())
        let r = try w.post(PlayWorld.reviewRefundPath(Self.order), body, authorization: auth)
        #expect(r.status == 200)
        let review = try #require(w.service.refundReviews.first)
        #expect(review.preference == .neutral)
        #expect(review.consumptionPercentageMilliunits == 100_000)
        #expect(review.consumptionUsageEvents == 1000)
    }

    @Test("a token without the androidpublisher scope is 403, none 401, a GET 404, a package not allowed 403")
    func gate() throws {
        let w = try PlayWorld(truth: Self.truth) { $0.allowedPackages = [PlayWorld.otherApp] }
        let path = PlayWorld.reviewRefundPath(Self.order)
        let pubsubOnly = try w.post(
            path, Self.good, authorization: "Bearer " + (try w.accessToken(scopes: [GoogleOAuth.pubsubScope])))
        #expect(pubsubOnly.status == 403)
        #expect(
            pubsubOnly.text
                == #"{"error":{"code":403,"message":"Request had insufficient authentication scopes.","#
                + #""status":"PERMISSION_DENIED"}}"#)
        #expect(try w.post(path, Self.good, authorization: "").status == 401)
        let auth = "Bearer " + (try w.accessToken())
        #expect(try w.get(path, authorization: auth).status == 404)
        let denied = try w.post(path, Self.good, authorization: auth)
        #expect(denied.status == 403)
        let reason = ((jsonObject(denied.body)?["error"] as? [String: Any])?["errors"] as? [[String: Any]])?.first
        #expect(reason?["reason"] as? String == "permissionDenied")
        #expect(w.service.refundReviews.isEmpty)
    }

    @Test("in the Orders bucket; a Google error on demand keeps nothing, a timeout keeps the answer")
    func bucketAndFaults() throws {
        let w = try PlayWorld(truth: Self.truth) { $0.quotaPerMinute = 3 }
        let auth = "Bearer " + (try w.accessToken())
        let path = PlayWorld.reviewRefundPath(Self.order)
        w.service.setFaults(PlayFaultPlan(rules: [.next(2, [.unavailable, .timeout], endpoint: .reviewRefund)]))
        #expect(try w.post(path, Self.good, authorization: auth).status == 503)
        #expect(w.service.refundReviews.isEmpty)
        #expect(try w.post(path, Self.good, authorization: auth).status == 504)
        #expect(w.service.refundReviews.map(\.preference) == [.decline])
        #expect(try w.get(PlayWorld.ordersPath([Self.order]), authorization: auth).status == 200)
        let refused = try w.post(path, Self.body(), authorization: auth)
        #expect(refused.status == 429)
        #expect(w.service.calls.last?.note == "429:quota Orders")
        #expect(w.service.refundReviews.first?.ignoredRepeats == 0)
        w.clock.advance(ms: 60_000)
        #expect(try w.post(path, Self.body(), authorization: auth).status == 200)
        #expect(w.service.refundReviews.first?.ignoredRepeats == 1)
        #expect(w.service.stats.calls[.reviewRefund] == 4)
    }
}
