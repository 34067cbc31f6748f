// Real-time developer notifications: Google publishes them on the app's Pub/Sub topic; the job
// pulls its own subscription (`subscriptions.pull`), stores each message, then acknowledges it. A
// notification is not signed ("call the Google Play Developer API after receiving" one): it is
// only a token or an order to ask Google about, never a fact on its own.

import Foundation
import Reconciliation
import StrictJSON

/// One message of a pull.
public struct PubSubMessage: Sendable, Equatable {
    /// What acknowledges this delivery (a redelivery has another).
    public var ackID: String
    /// Stable across redeliveries: what the job stores it under.
    public var messageID: String
    public var publishTime: EpochMillis
    /// The message's data, base64-decoded (a DeveloperNotification's JSON for Play's topic).
    public var data: [UInt8]
    /// 1 for the first delivery; nil when the subscription has no dead-letter policy (Google's rule).
    public var deliveryAttempt: Int?

    public init(ackID: String, messageID: String, publishTime: EpochMillis, data: [UInt8], deliveryAttempt: Int?) {
        (self.ackID, self.messageID, self.publishTime, self.data, self.deliveryAttempt) =
            (ackID, messageID, publishTime, data, deliveryAttempt)
    }

    /// Reads a 200 body of `subscriptions.pull`: `{"receivedMessages":[…]}`, or `{}` when nothing
    /// was there. A message whose data is not base64 makes the whole body garbage (retried).
    public static func readPull(_ body: [UInt8]) -> Result<[PubSubMessage], PlayGarbage> {
        PlayObject.reading(body) { (o) throws(PlayGarbage) -> [PubSubMessage] in
            var out: [PubSubMessage] = []
            var seen: Set<String> = []
            for received in try o.objects("receivedMessages", limit: 1000) {
                let ackID = try received.required("ackId", limit: 1024)
                guard let message = try received.object("message") else { throw PlayGarbage("\(received.path).message is missing") }
                let messageID = try message.required("messageId", limit: 64, allowed: PlayCharacters.isAlphanumeric)
                guard seen.insert(messageID).inserted else { throw PlayGarbage("message \(messageID) is in the pull twice") }
                guard let published = try message.time("publishTime") else {
                    throw PlayGarbage("\(message.path).publishTime is missing")
                }
                let text = try message.string("data", limit: 1 << 20) ?? ""
                // Strict and canonical: one text for each byte string, nothing skipped.
                let decoded = text.isEmpty ? .success([]) : Array(text.utf8).withUnsafeBufferPointer { Base64.decodeStandard($0) }
                guard case .success(let data) = decoded else { throw PlayGarbage("\(message.path).data is not base64") }
                let attempt = try received.integer("deliveryAttempt", in: 1...1_000_000).map(Int.init)
                out.append(
                    PubSubMessage(
                        ackID: ackID, messageID: messageID, publishTime: published, data: data,
                        deliveryAttempt: attempt))
            }
            return out
        }
    }

    /// The body of a pull of at most `maxMessages`. `returnImmediately`: without it Pub/Sub may hold
    /// a pull of an empty subscription open until a message comes (a minute and more), past the
    /// job's timeout; Google discourages it for streaming subscribers, and a batch job draining its
    /// own subscription once a night (or `respond` every 15 minutes) is not one: a pull that comes
    /// back empty though messages wait leaves them for the next run.
    public static func pullBody(maxMessages: Int) -> [UInt8] {
        Array(#"{"maxMessages":\#(max(1, min(maxMessages, 1000))),"returnImmediately":true}"#.utf8)
    }

    /// The body acknowledging `ackIDs` (each as Google gave it, JSON-escaped).
    public static func acknowledgeBody(_ ackIDs: [String]) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + ackIDs.count * 64)
        w.beginObject()
        w.key("ackIds")
        w.beginArray()
        for id in ackIDs { w.string(id) }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

/// What one message of Play's topic says (DeveloperNotification).
public struct PlayNotification: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// `oneTimeProductNotification`: 1 ONE_TIME_PRODUCT_PURCHASED, 2 ONE_TIME_PRODUCT_CANCELED.
        case oneTimeProduct(type: Int, purchaseToken: String, productID: String)
        /// `voidedPurchaseNotification`: productType 1 subscription, 2 one-time; refundType 1 full, 2
        /// quantity-based partial.
        case voided(purchaseToken: String, orderID: String?, productType: Int, refundType: Int)
        /// `pendingRefundReviewNotification` (its fields are unconfirmed by Google: these are read,
        /// the token and the order required).
        case pendingRefundReview(pendingRefundToken: String, orderID: String, refundReason: Int?, obfuscatedAccountID: String?)
        /// `subscriptionNotification`: subscriptions are not the job's; kept to be skipped, not garbage.
        case subscription
        /// `testNotification` from Play Console.
        case test
    }

    public var packageName: String
    public var eventTime: EpochMillis
    public var kind: Kind

    public init(packageName: String, eventTime: EpochMillis, kind: Kind) {
        (self.packageName, self.eventTime, self.kind) = (packageName, eventTime, kind)
    }

    /// Reads a message's data. Exactly one notification object; `eventTimeMillis` as a string of
    /// digits or a number (Google's sample sends a string).
    public static func read(_ data: [UInt8]) -> Result<PlayNotification, PlayGarbage> {
        PlayObject.reading(data) { (o) throws(PlayGarbage) -> PlayNotification in
            let package = try o.required("packageName", limit: 255)
            guard PlayPaths.isPackageName(package) else { throw PlayGarbage("packageName is not an Android package name") }
            guard let event = try o.millis("eventTimeMillis") else { throw PlayGarbage("eventTimeMillis is missing") }
            let names = [
                "oneTimeProductNotification", "voidedPurchaseNotification", "pendingRefundReviewNotification",
                "subscriptionNotification", "testNotification",
            ]
            let present = names.filter { o.index($0) != nil }
            guard present.count == 1, let name = present.first, let n = try o.object(name) else {
                throw PlayGarbage(present.isEmpty ? "the notification names no kind" : "the notification has \(present.count) kinds")
            }
            let token: (String) throws(PlayGarbage) -> String = { (key) throws(PlayGarbage) in
                try n.required(key, limit: PlayPaths.tokenLimit, allowed: PlayCharacters.isTokenCharacter)
            }
            let kind: Kind
            switch name {
            case "oneTimeProductNotification":
                guard let type = try n.integer("notificationType", in: 1...2) else {
                    throw PlayGarbage("\(n.path).notificationType is missing")
                }
                kind = .oneTimeProduct(
                    type: Int(type), purchaseToken: try token("purchaseToken"),
                    productID: try n.required("sku", limit: 150, allowed: PlayCharacters.isProductCharacter))
            case "voidedPurchaseNotification":
                guard let product = try n.integer("productType", in: 1...2), let refund = try n.integer("refundType", in: 1...2) else {
                    throw PlayGarbage("\(n.path) has no productType or refundType")
                }
                kind = .voided(
                    purchaseToken: try token("purchaseToken"),
                    orderID: try n.string("orderId", limit: 64, allowed: PlayCharacters.isOrderCharacter),
                    productType: Int(product), refundType: Int(refund))
            case "pendingRefundReviewNotification":
                kind = .pendingRefundReview(
                    pendingRefundToken: try token("pendingRefundToken"),
                    orderID: try n.required("orderId", limit: 64, allowed: PlayCharacters.isOrderCharacter),
                    refundReason: try n.integer("refundReason", in: 0...99).map(Int.init),
                    obfuscatedAccountID: try n.string("obfuscatedAccountId", limit: 64))
            case "subscriptionNotification":
                kind = .subscription
            default:
                kind = .test
            }
            return PlayNotification(packageName: package, eventTime: event, kind: kind)
        }
    }
}

/// An answer to a pending refund review (`orders.reviewrefund`). Google records the first answer
/// per `pendingRefundToken` and ignores later ones: the job sends each once.
public struct RefundReview: Sendable, Equatable {
    public enum Preference: String, Sendable { case decline = "DECLINE", approve = "APPROVE", neutral = "NEUTRAL" }
    public var pendingRefundToken: String
    public var sampleContentProvided: Bool
    public var preference: Preference
    /// 0…100,000: the share of the purchase consumed, in thousandths of a percent.
    public var consumptionMilliunits: Int?

    public init(pendingRefundToken: String, sampleContentProvided: Bool, preference: Preference, consumptionMilliunits: Int?) {
        (self.pendingRefundToken, self.sampleContentProvided, self.preference) = (pendingRefundToken, sampleContentProvided, preference)
        self.consumptionMilliunits = consumptionMilliunits.map { max(0, min($0, 100_000)) }
    }

    /// The request body.
    public var body: [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.field("pendingRefundToken", pendingRefundToken)
        w.field("sampleContentProvided", sampleContentProvided)
        w.field("refundPreference", preference.rawValue)
        w.field("consumptionPercentageMilliunits", consumptionMilliunits)
        w.endObject()
        return w.bytes
    }
}
