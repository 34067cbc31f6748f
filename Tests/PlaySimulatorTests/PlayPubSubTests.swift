// Pub/Sub's pull and acknowledge over HTTP: the truth's notifications from their publish time,
// oldest first, each data the DeveloperNotification JSON; leases, redelivery with a new ack id,
// acknowledgement; Google's 401, 403, 404 and 400; faults before and after the method ran.

import Foundation
import PlaySimulator
import PlayStore
import Reconciliation
import Testing

/// One received message of a pull answer, read with Foundation.
struct Pulled {
    var ackID: String
    var messageID: String
    var publishTime: String
    var deliveryAttempt: Int
    var attributes: [String: Any]
    /// The data, base64-decoded and parsed.
    var notification: [String: Any]

    /// The answer's messages; throws when it is not a pull answer.
    static func read(_ r: RawResponse) throws -> [Pulled] {
        guard r.status == 200, let json = jsonObject(r.body) else {
            throw RawHTTPError(description: "not a pull answer: \(r.status) \(r.text)")
        }
        guard let list = json["receivedMessages"] else { return [] }
        guard let items = list as? [[String: Any]], !items.isEmpty else {
            throw RawHTTPError(description: "receivedMessages is not a non-empty list: \(r.text)")
        }
        /// The value, or a throw naming what is missing (no issue recorded: garbage is expected to fail).
        func need<T>(_ value: T?, _ what: String) throws -> T {
            guard let value else { throw RawHTTPError(description: "\(what) is missing: \(r.text)") }
            return value
        }
        return try items.map { item in
            let message = try need(item["message"] as? [String: Any], "message")
            let data = try need(Data(base64Encoded: try need(message["data"] as? String, "data")), "base64 data")
            return Pulled(
                ackID: try need(item["ackId"] as? String, "ackId"),
                messageID: try need(message["messageId"] as? String, "messageId"),
                publishTime: try need(message["publishTime"] as? String, "publishTime"),
                deliveryAttempt: try need(item["deliveryAttempt"] as? Int, "deliveryAttempt"),
                attributes: try need(message["attributes"] as? [String: Any], "attributes"),
                notification: try need(jsonObject(Array(data)), "the notification JSON"))
        }
    }

    /// The one kind member of the notification (`oneTimeProductNotification`…) and its object.
    var kind: (String, [String: Any])? {
        let kinds = notification.filter { $0.key.hasSuffix("Notification") }
        guard kinds.count == 1, let (name, value) = kinds.first, let object = value as? [String: Any] else {
            return nil
        }
        return (name, object)
    }
}

@Suite("Google Play simulator: Pub/Sub notifications")
struct PlayPubSubTests {
    static let start = PlayWorld.start
    static let pubsubScopes = [GoogleOAuth.pubsubScope]

    /// One notification of each kind, published out of the truth's order, and one published later.
    static let notifications: [PlayTruth.Notification] = [
        .init(
            packageName: PlayWorld.game, eventTimeMs: start - 30_000, publishTimeMs: start - 20_000,
            kind: .voidedPurchase(
                purchaseToken: "tok-several", orderID: "GPA.1111-2222-3333-55555", productType: 2, refundType: 2)),
        .init(
            packageName: PlayWorld.game, eventTimeMs: start - 60_000, publishTimeMs: start - 55_000,
            kind: .oneTimeProduct(notificationType: 1, purchaseToken: "tok-bought-1", sku: "coins_100")),
        .init(
            packageName: PlayWorld.game, eventTimeMs: start - 5000,
            kind: .pendingRefundReview(
                pendingRefundToken: "prt-1", orderID: "GPA.1111-2222-3333-44444", refundReason: 7,
                obfuscatedAccountID: "acct-1")),
        .init(packageName: PlayWorld.otherApp, eventTimeMs: start - 1000, kind: .test),
        .init(
            packageName: PlayWorld.game, eventTimeMs: start + 50_000, publishTimeMs: start + 60_000,
            kind: .oneTimeProduct(notificationType: 2, purchaseToken: "tok-pending-test", sku: "gems.big")),
    ]

    static let truth = PlayTruth(purchases: PlayWorld.truth.purchases, notifications: notifications)

    static func world(_ configure: (inout PlaySimulatorConfig) -> Void = { _ in }) throws -> PlayWorld {
        try PlayWorld(truth: truth) { config in
            config.subscription = PlayWorld.subscription
            configure(&config)
        }
    }

    static func pull(_ w: PlayWorld, _ max: Int, _ auth: String) throws -> [Pulled] {
        try Pulled.read(try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":\#(max)}"#, authorization: auth))
    }

    static func ack(_ w: PlayWorld, _ ids: [String], _ auth: String) throws -> RawResponse {
        let list = ids.map { "\"\($0)\"" }.joined(separator: ",")
        return try w.post(PlayWorld.pubsubPath("acknowledge"), #"{"ackIds":[\#(list)]}"#, authorization: auth)
    }

    @Test("nothing before its publish time, the message from then on")
    func publishTime() throws {
        let later = Self.notifications[4]
        let w = try PlayWorld(truth: PlayTruth(notifications: [later])) { $0.subscription = PlayWorld.subscription }
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let empty = try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":5}"#, authorization: auth)
        #expect(empty.status == 200)
        #expect(empty.text == "{}")
        w.clock.advance(ms: 59_999)
        #expect(try Self.pull(w, 5, auth).isEmpty)
        w.clock.advance(ms: 1)
        let got = try Self.pull(w, 5, auth)
        #expect(got.count == 1)
        #expect(got.first?.publishTime == "2026-11-18T11:07:40.000Z")
        #expect(got.first?.messageID.allSatisfy(\.isNumber) == true)
        #expect(got.first?.deliveryAttempt == 1)
        #expect(got.first?.attributes.isEmpty == true)
        #expect(w.service.pubsub.deliveries == [try #require(got.first?.messageID): 1])
    }

    @Test("each kind's data is the DeveloperNotification JSON; oldest publish time first")
    func kinds() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let got = try Self.pull(w, 10, auth)
        #expect(got.count == 4)
        #expect(
            got.map(\.publishTime)
                == [Self.start - 55_000, Self.start - 20_000, Self.start - 5000, Self.start - 1000].map(
                    UTC.timestampMillis))
        #expect(Set(got.map(\.messageID)).count == 4)
        for m in got {
            #expect(m.notification["version"] as? String == "1.0")
            #expect(m.notification.count == 4, "\(m.notification.keys.sorted())")
        }
        let product = got[0].notification
        #expect(product["packageName"] as? String == PlayWorld.game)
        #expect(product["eventTimeMillis"] as? String == String(Self.start - 60_000))
        let (productKind, productBody) = try #require(got[0].kind)
        #expect(productKind == "oneTimeProductNotification")
        #expect(productBody["version"] as? String == "1.0")
        #expect(productBody["notificationType"] as? Int == 1)
        #expect(productBody["purchaseToken"] as? String == "tok-bought-1")
        #expect(productBody["sku"] as? String == "coins_100")
        let (voidedKind, voided) = try #require(got[1].kind)
        #expect(voidedKind == "voidedPurchaseNotification")
        #expect(voided["purchaseToken"] as? String == "tok-several")
        #expect(voided["orderId"] as? String == "GPA.1111-2222-3333-55555")
        #expect(voided["productType"] as? Int == 2)
        #expect(voided["refundType"] as? Int == 2)
        #expect(voided.count == 4)
        let (refundKind, refund) = try #require(got[2].kind)
        #expect(refundKind == "pendingRefundReviewNotification")
        #expect(refund["pendingRefundToken"] as? String == "prt-1")
        #expect(refund["orderId"] as? String == "GPA.1111-2222-3333-44444")
        #expect(refund["refundReason"] as? Int == 7)
        #expect(refund["obfuscatedAccountId"] as? String == "acct-1")
        let (testKind, test) = try #require(got[3].kind)
        #expect(testKind == "testNotification")
        #expect(test.count == 1 && test["version"] as? String == "1.0")
        #expect(got[3].notification["packageName"] as? String == PlayWorld.otherApp)
        #expect(got[3].notification["eventTimeMillis"] as? String == String(Self.start - 1000))
    }

    @Test("PlayStore's readers read the pull and every notification as the truth has it")
    func playStoreReads() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let r = try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":10}"#, authorization: auth)
        let messages = try PubSubMessage.readPull(r.body).get()
        #expect(messages.map(\.publishTime) == [-55_000, -20_000, -5000, -1000].map { Self.start + $0 })
        #expect(messages.allSatisfy { $0.deliveryAttempt == 1 })
        let read = try messages.map { try PlayNotification.read($0.data).get() }
        let truth = [1, 0, 2, 3].map { Self.notifications[$0] }
        #expect(read.map(\.packageName) == truth.map(\.packageName))
        #expect(read.map(\.eventTime) == truth.map(\.eventTimeMs))
        #expect(
            read.map(\.kind) == [
                .oneTimeProduct(type: 1, purchaseToken: "tok-bought-1", productID: "coins_100"),
                .voided(
                    purchaseToken: "tok-several", orderID: "GPA.1111-2222-3333-55555", productType: 2, refundType: 2),
                .pendingRefundReview(
                    pendingRefundToken: "prt-1", orderID: "GPA.1111-2222-3333-44444", refundReason: 7,
                    obfuscatedAccountID: "acct-1"),
                .test,
            ])
        let ack = PubSubMessage.acknowledgeBody(messages.map(\.ackID))
        #expect(try w.post(PlayWorld.pubsubPath("acknowledge"), bytes: ack, authorization: auth).status == 200)
        #expect(w.service.pubsub.acknowledged == Set(messages.map(\.messageID)))
        let pull = PubSubMessage.pullBody(maxMessages: 5)
        #expect(try w.post(PlayWorld.pubsubPath("pull"), bytes: pull, authorization: auth).text == "{}")
    }

    @Test("maxMessages is respected; a leased message is not pulled again before its deadline")
    func maxMessages() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let first = try Self.pull(w, 3, auth)
        #expect(first.count == 3)
        let second = try Self.pull(w, 3, auth)
        #expect(second.count == 1)
        #expect(Set(first.map(\.messageID)).isDisjoint(with: second.map(\.messageID)))
        #expect(try Self.pull(w, 3, auth).isEmpty)
        #expect(w.service.pubsub.deliveries.count == 4)
        #expect(w.service.pubsub.deliveries.values.allSatisfy { $0 == 1 })
    }

    @Test("after the ack deadline a message comes again: deliveryAttempt 2, a new ack id; acknowledged, never")
    func redelivery() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let first = try #require(try Self.pull(w, 1, auth).first)
        #expect(first.deliveryAttempt == 1)
        w.clock.advance(ms: 9_999)
        let others = try Self.pull(w, 10, auth)
        #expect(others.count == 3)
        #expect(!others.contains { $0.messageID == first.messageID })
        w.clock.advance(ms: 1)
        let again = try Self.pull(w, 10, auth)
        #expect(again.map(\.messageID) == [first.messageID])
        let second = try #require(again.first)
        #expect(second.deliveryAttempt == 2)
        #expect(second.ackID != first.ackID)
        #expect(second.publishTime == first.publishTime)
        #expect(second.notification["eventTimeMillis"] as? String == first.notification["eventTimeMillis"] as? String)
        // The first delivery's ack id acknowledges nothing now.
        let stale = try Self.ack(w, [first.ackID], auth)
        #expect(stale.status == 200)
        #expect(stale.text == "{}")
        #expect(w.service.pubsub.acknowledged.isEmpty)
        #expect(w.service.pubsub.ignoredAckIDs == 1)
        #expect(try Self.ack(w, [second.ackID], auth).status == 200)
        #expect(w.service.pubsub.acknowledged == [first.messageID])
        // Acknowledging twice is no error, and acknowledges nothing more.
        let twice = try Self.ack(w, [second.ackID], auth)
        #expect(twice.status == 200)
        #expect(w.service.pubsub.ignoredAckIDs == 2)
        w.clock.advance(ms: 60_000)
        let after = try Self.pull(w, 10, auth)
        #expect(!after.contains { $0.messageID == first.messageID })
        #expect(after.count == 4)
        #expect(w.service.pubsub.deliveries[first.messageID] == 2)
    }

    @Test("the configured deadline; an acknowledgement after the lease ran out acknowledges nothing")
    func deadline() throws {
        let w = try Self.world { $0.ackDeadlineSeconds = 30 }
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let all = try Self.pull(w, 10, auth)
        #expect(all.count == 4)
        w.clock.advance(ms: 29_999)
        #expect(try Self.pull(w, 10, auth).isEmpty)
        #expect(try Self.ack(w, [all[0].ackID], auth).status == 200)
        w.clock.advance(ms: 1)
        #expect(try Self.ack(w, [all[1].ackID], auth).status == 200)
        #expect(w.service.pubsub.acknowledged == [all[0].messageID])
        let again = try Self.pull(w, 10, auth)
        #expect(again.map(\.messageID) == all.dropFirst().map(\.messageID))
        #expect(again.allSatisfy { $0.deliveryAttempt == 2 })
        #expect(try Self.ack(w, again.map(\.ackID), auth).status == 200)
        #expect(w.service.pubsub.acknowledged == Set(all.map(\.messageID)))
        // The fifth notification is published by now.
        w.clock.advance(ms: 60_000)
        let later = try Self.pull(w, 10, auth)
        #expect(later.count == 1)
        #expect(later.allSatisfy { !all.map(\.messageID).contains($0.messageID) })
    }

    @Test("a token without the pubsub scope is 403; none, an unknown or an expired one 401")
    func authentication() throws {
        let w = try Self.world()
        let path = PlayWorld.pubsubPath("pull")
        let body = #"{"maxMessages":1}"#
        let play = "Bearer " + (try w.accessToken())
        let scoped = try w.post(path, body, authorization: play)
        #expect(scoped.status == 403)
        #expect(
            scoped.text
                == #"{"error":{"code":403,"message":"Request had insufficient authentication scopes.","#
                + #""status":"PERMISSION_DENIED"}}"#)
        for auth in ["", "Bearer sim-0000", "Basic Zm9vOmJhcg=="] {
            let r = try w.post(path, body, authorization: auth)
            #expect(r.status == 401, "\(auth)")
            #expect((jsonObject(r.body)?["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED")
        }
        let ackScoped = try w.post(PlayWorld.pubsubPath("acknowledge"), #"{"ackIds":["x"]}"#, authorization: play)
        #expect(ackScoped.status == 403)
        let both = "Bearer " + (try w.accessToken(scopes: [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope]))
        #expect(try Self.pull(w, 1, both).count == 1)
        w.clock.advance(ms: 3600 * 1000)
        #expect(try w.post(path, body, authorization: both).status == 401)
        #expect(w.service.calls.last?.note == "401:expired token")
        #expect(w.service.pubsub.deliveries.count == 1)
    }

    @Test("another subscription, another method, a GET, or Pub/Sub not served: 404")
    func notFound() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let other = try w.post(
            PlayWorld.pubsubPath("pull", subscription: "projects/iap-sim/subscriptions/other-sub"),
            #"{"maxMessages":1}"#, authorization: auth)
        #expect(other.status == 404)
        #expect(
            other.text == #"{"error":{"code":404,"message":"Resource not found (resource=other-sub).","#
                + #""status":"NOT_FOUND"}}"#)
        let otherProject = try w.post(
            PlayWorld.pubsubPath("pull", subscription: "projects/elsewhere/subscriptions/play-rtdn"),
            #"{"maxMessages":1}"#, authorization: auth)
        #expect(otherProject.status == 404)
        let method = try w.post(PlayWorld.pubsubPath("modifyAckDeadline"), "{}", authorization: auth)
        #expect(method.status == 404)
        #expect(jsonObject(method.body)?["error"] != nil)
        let get = try w.get(PlayWorld.pubsubPath("pull"), authorization: auth)
        #expect(get.status == 404)
        #expect(w.service.pubsub.deliveries.isEmpty)
        #expect(try Self.pull(w, 1, auth).count == 1)

        let unserved = try PlayWorld(truth: Self.truth)
        let token = "Bearer " + (try unserved.accessToken(scopes: Self.pubsubScopes))
        for name in ["pull", "acknowledge"] {
            let r = try unserved.post(PlayWorld.pubsubPath(name), #"{"maxMessages":1}"#, authorization: token)
            #expect(r.status == 404, "\(name)")
            #expect(
                r.text == #"{"error":{"code":404,"message":"Resource not found (resource=play-rtdn).","#
                    + #""status":"NOT_FOUND"}}"#)
        }
        #expect(unserved.service.calls.last?.note == "404:Pub/Sub not served")
        #expect(unserved.service.pubsub.deliveries.isEmpty)
    }

    @Test(
        "a bad pull body is 400 naming the field, and leases nothing",
        arguments: [
            ("{}", "maxMessages is required"),
            (#"{"maxMessages":0}"#, "maxMessages must be 1 to 1000"),
            (#"{"maxMessages":1001}"#, "maxMessages must be 1 to 1000"),
            (#"{"maxMessages":-1}"#, "maxMessages is not a whole number"),
            (#"{"maxMessages":1.5}"#, "maxMessages is not a whole number"),
            (#"{"maxMessages":"ten"}"#, "maxMessages is not a whole number"),
            (#"{"maxMessages":true}"#, "maxMessages is a boolean"),
            (#"{"maxMessages":1,"maxMessage":1}"#, #"Unknown name "maxMessage""#),
            (#"{"maxMessages":1,"maxMessages":2}"#, "Invalid JSON payload"),
            (#"[{"maxMessages":1}]"#, "Invalid JSON payload"),
            ("maxMessages=1", "Invalid JSON payload"),
            ("", "Invalid JSON payload"),
        ])
    func badPull(_ args: (String, String)) throws {
        let (body, message) = args
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let r = try w.post(PlayWorld.pubsubPath("pull"), body, authorization: auth)
        #expect(r.status == 400, "\(body)")
        let error = try #require(jsonObject(r.body)?["error"] as? [String: Any])
        #expect(error["status"] as? String == "INVALID_ARGUMENT")
        #expect((error["message"] as? String)?.contains(message) == true, "\(body): \(r.text)")
        #expect(w.service.pubsub.deliveries.isEmpty)
    }

    @Test("maxMessages as a string of digits, as proto3's JSON allows; returnImmediately is taken")
    func protoForms() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let r = try w.post(
            PlayWorld.pubsubPath("pull"), #"{"maxMessages":"2","returnImmediately":true}"#, authorization: auth)
        #expect(try Pulled.read(r).count == 2)
    }

    @Test(
        "a bad acknowledge body is 400 and acknowledges nothing",
        arguments: [
            ("{}", "ackIds is required"),
            (#"{"ackIds":[]}"#, "ackIds must not be empty"),
            (#"{"ackIds":"ACK"}"#, "ackIds is a string, not an array"),
            (#"{"ackIds":["ACK",7]}"#, "ackIds must hold strings"),
            (#"{"ackIds":["ACK"],"ackId":"ACK"}"#, #"Unknown name "ackId""#),
            ("ackIds=ACK", "Invalid JSON payload"),
        ])
    func badAcknowledge(_ args: (String, String)) throws {
        let (template, message) = args
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        let pulled = try #require(try Self.pull(w, 1, auth).first)
        let body = template.replacingOccurrences(of: "ACK", with: pulled.ackID)
        let r = try w.post(PlayWorld.pubsubPath("acknowledge"), body, authorization: auth)
        #expect(r.status == 400, "\(body)")
        let error = try #require(jsonObject(r.body)?["error"] as? [String: Any])
        #expect(error["status"] as? String == "INVALID_ARGUMENT")
        #expect((error["message"] as? String)?.contains(message) == true, "\(body): \(r.text)")
        #expect(w.service.pubsub.acknowledged.isEmpty)
        #expect(try Self.ack(w, [pulled.ackID], auth).status == 200)
        #expect(w.service.pubsub.acknowledged == [pulled.messageID])
    }

    @Test("Pub/Sub calls take no room in the Play buckets")
    func quota() throws {
        let w = try Self.world { $0.quotaPerMinute = 2 }
        let auth = "Bearer " + (try w.accessToken(scopes: [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope]))
        for _ in 1...4 {
            #expect(try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":1}"#, authorization: auth).status == 200)
        }
        let ack = try w.post(PlayWorld.pubsubPath("acknowledge"), #"{"ackIds":["x"]}"#, authorization: auth)
        #expect(ack.status == 200)
        #expect(try w.get(PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"]), authorization: auth).status == 200)
        #expect(try w.get(PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"]), authorization: auth).status == 200)
        #expect(try w.get(PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"]), authorization: auth).status == 429)
        #expect(w.service.stats.calls[.pubsubPull] == 4)
        #expect(w.service.stats.calls[.pubsubAcknowledge] == 1)
    }

    @Test("each garbage pull body is refused by a strict reader; the messages were leased all the same")
    func garbage() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        w.service.setFaults(
            PlayFaultPlan(rules: [.next(PlayFault.garbage.count, PlayFault.garbage, endpoint: .pubsubPull)]))
        for kind in PlayFault.garbage {
            w.clock.advance(ms: 10_000)
            let r = try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":1}"#, authorization: auth)
            #expect(r.status == 200, "\(kind)")
            #expect(PubSubMessage.readPull(r.body).failure != nil, "\(kind) was believed: \(r.text)")
            switch kind {
            case .truncated: #expect(r.text.hasPrefix(#"{"receivedMessages":[{"ackId":"#))
            case .invalidUTF8: #expect(String(validating: r.body, as: UTF8.self) == nil)
            case .array: #expect(r.body.first == UInt8(ascii: "[") && r.body.last == UInt8(ascii: "]"))
            case .repeatedKey: #expect(r.text.hasPrefix(#"{"kind":"a","kind":"a","receivedMessages":[{"ackId":"#))
            case .html: #expect(r.headers["content-type"]?.hasPrefix("text/html") == true)
            default: Issue.record("\(kind) is not garbage")
            }
        }
        // The oldest message, its lease run out before each call: five deliveries nobody read.
        #expect(w.service.pubsub.deliveries.values.sorted() == [5])
        w.clock.advance(ms: 10_000)
        let seen = try Self.pull(w, 1, auth)
        #expect(seen.first?.deliveryAttempt == 6)
        #expect(seen.first?.kind?.0 == "oneTimeProductNotification")
    }

    @Test("a Google error leases nothing; a timeout leases; a 503 on acknowledge acknowledges nothing")
    func faults() throws {
        let w = try Self.world()
        let auth = "Bearer " + (try w.accessToken(scopes: Self.pubsubScopes))
        w.service.setFaults(PlayFaultPlan(rules: [.next(2, [.unavailable, .timeout], endpoint: .pubsubPull)]))
        let refused = try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":10}"#, authorization: auth)
        #expect(refused.status == 503)
        #expect(w.service.pubsub.deliveries.isEmpty)
        let timeout = try w.post(PlayWorld.pubsubPath("pull"), #"{"maxMessages":1}"#, authorization: auth)
        #expect(timeout.status == 504)
        #expect(w.service.pubsub.deliveries.count == 1)
        let rest = try Self.pull(w, 10, auth)
        #expect(rest.count == 3)
        #expect(rest.allSatisfy { $0.deliveryAttempt == 1 })
        w.service.setFaults(PlayFaultPlan(rules: [.next(1, [.unavailable], endpoint: .pubsubAcknowledge)]))
        #expect(try Self.ack(w, rest.map(\.ackID), auth).status == 503)
        #expect(w.service.pubsub.acknowledged.isEmpty)
        #expect(try Self.ack(w, rest.map(\.ackID), auth).status == 200)
        #expect(w.service.pubsub.acknowledged == Set(rest.map(\.messageID)))
        w.clock.advance(ms: 10_000)
        let lost = try Self.pull(w, 10, auth)
        #expect(lost.count == 1)
        #expect(lost.first?.deliveryAttempt == 2)
    }
}
