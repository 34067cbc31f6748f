// Pub/Sub's pull subscription to Google Play's real-time developer notifications, as the Pub/Sub
// REST reference describes it: `POST /v1/{subscription}:pull {maxMessages}` hands out the messages
// published by now, oldest publish time first, each leased for the ack deadline; `:acknowledge
// {ackIds}` removes them. A message whose lease runs out unacknowledged is delivered again with a
// new ack id and `deliveryAttempt` one higher; the old ack id then acknowledges nothing (Google may
// still honour an acknowledgement a little late; the simulator never does, the harder case for a
// subscriber). Each message's data is the DeveloperNotification JSON, base64.

import Foundation
import PlayStore
import Reconciliation
import StrictJSON

/// What the subscription has done so far, for the tests.
public struct PlayPubSubSummary: Sendable, Equatable {
    /// The message ids acknowledged.
    public var acknowledged: Set<String> = []
    /// Deliveries so far per message id (a message never pulled is absent).
    public var deliveries: [String: Int] = [:]
    /// Ack ids sent that acknowledged nothing: unknown, of an earlier delivery, of an expired
    /// lease, or of a message already acknowledged.
    public var ignoredAckIDs = 0
}

/// The subscription's messages and their leases.
struct PlayPubSub {
    struct Message {
        let messageID: String
        let publishMs: Int64
        /// The DeveloperNotification JSON, base64.
        let data: String
        var acknowledged = false
        var deliveries = 0
        /// The current delivery's ack id (nil before the first) and when its lease ends.
        var ackID: String?
        var leaseEndMs: Int64 = 0
    }

    /// Oldest publish time first (the truth's order among equals).
    private var messages: [Message]
    /// The current delivery's ack id of each message leased, to its index.
    private var leased: [String: Int] = [:]
    private var ignoredAckIDs = 0

    /// The truth's notifications as messages; a message's id is its notification's place in the truth.
    init(_ notifications: [PlayTruth.Notification]) {
        let made = notifications.enumerated().map { n, note in
            Message(
                messageID: String(2_070_443_601_311_540 + n), publishMs: note.publishTimeMs,
                data: Data(PlayBodies.developerNotification(note)).base64EncodedString())
        }
        messages = made.enumerated().sorted { a, b in
            (a.element.publishMs, a.offset) < (b.element.publishMs, b.offset)
        }.map(\.element)
    }

    /// Leases up to `limit` pullable messages until `now + leaseMs` and writes the pull's answer.
    mutating func pull(limit: Int, now: Int64, leaseMs: Int64) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        var taken = 0
        for i in messages.indices where taken < limit {
            let m = messages[i]
            guard m.publishMs <= now, !m.acknowledged, m.ackID == nil || m.leaseEndMs <= now else { continue }
            if taken == 0 {
                w.key("receivedMessages")
                w.beginArray()
            }
            taken += 1
            if let old = m.ackID { leased[old] = nil }
            let delivery = m.deliveries + 1
            let ackID =
                "ack." + m.messageID + "." + String(delivery) + "."
                + String(PlayFaultState.hash(PlayFaultState.fnv(m.messageID), UInt64(delivery)), radix: 36)
            messages[i].deliveries = delivery
            messages[i].ackID = ackID
            messages[i].leaseEndMs = now + leaseMs
            leased[ackID] = i
            w.beginObject()
            w.field("ackId", ackID)
            w.key("message")
            w.beginObject()
            w.field("data", m.data)
            w.field("messageId", m.messageID)
            w.field("publishTime", UTC.timestampMillis(m.publishMs))
            w.key("attributes")
            w.beginObject()
            w.endObject()
            w.endObject()
            // Google sets deliveryAttempt only on a subscription with a dead-letter policy; the
            // simulator always says it.
            w.field("deliveryAttempt", delivery)
            w.endObject()
        }
        if taken > 0 { w.endArray() }
        w.endObject()
        return w.bytes
    }

    /// Acknowledges the messages whose current, unexpired lease each ack id names.
    mutating func acknowledge(_ ackIDs: [String], now: Int64) {
        for ackID in ackIDs {
            guard let i = leased[ackID], messages[i].leaseEndMs > now, !messages[i].acknowledged else {
                ignoredAckIDs += 1
                continue
            }
            messages[i].acknowledged = true
            leased[ackID] = nil
        }
    }

    var summary: PlayPubSubSummary {
        var out = PlayPubSubSummary(ignoredAckIDs: ignoredAckIDs)
        for m in messages {
            if m.acknowledged { out.acknowledged.insert(m.messageID) }
            if m.deliveries > 0 { out.deliveries[m.messageID] = m.deliveries }
        }
        return out
    }
}

extension PlayState {
    /// The answer to a Pub/Sub call on `subscription` and its note (the bearer already checked).
    mutating func pubsub(_ endpoint: PlayEndpoint, subscription: String, _ request: PlayRequest, now: Int64)
        -> Decided
    {
        guard subscription == config.subscription else {
            let id = subscription.split(separator: "/").last.map(String.init) ?? subscription
            return (GoogleError.resourceNotFound(id), "404:unknown subscription")
        }
        func bad(_ problem: BadRequest) -> Decided {
            (GoogleError.invalidArgument(problem.message), "400:" + problem.message)
        }
        do throws(BadRequest) {
            if endpoint == .pubsubPull {
                let body = try RequestObject(request.body, known: ["maxMessages", "returnImmediately"])
                _ = try body.boolean("returnImmediately")
                let limit = try body.required("maxMessages") { (name) throws(BadRequest) in
                    try body.integer(name, in: 1...1000)
                }
                let answer = pubsubState.pull(
                    limit: Int(limit), now: now, leaseMs: Int64(config.ackDeadlineSeconds) * 1000)
                return (.json(200, answer), "ok")
            }
            let body = try RequestObject(request.body, known: ["ackIds"])
            let items = try body.required("ackIds", body.array)
            var ackIDs: [String] = []
            for item in items {
                guard case .string(let ackID) = item else { throw BadRequest("ackIds must hold strings.") }
                ackIDs.append(ackID)
            }
            guard !ackIDs.isEmpty else { throw BadRequest("ackIds must not be empty.") }
            pubsubState.acknowledge(ackIDs, now: now)
            return (.json(200, Array("{}".utf8)), "ok")
        } catch {
            return bad(error)
        }
    }
}

extension PlayBodies {
    /// The DeveloperNotification JSON Google publishes (the reference guide's names; the event
    /// time an int64, so a string of digits, as the guide's sample shows it).
    static func developerNotification(_ note: PlayTruth.Notification) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.field("version", "1.0")
        w.field("packageName", note.packageName)
        w.field("eventTimeMillis", String(note.eventTimeMs))
        switch note.kind {
        case .oneTimeProduct(let type, let token, let sku):
            w.key("oneTimeProductNotification")
            w.beginObject()
            w.field("version", "1.0")
            w.field("notificationType", type)
            w.field("purchaseToken", token)
            w.field("sku", sku)
            w.endObject()
        case .voidedPurchase(let token, let order, let productType, let refundType):
            w.key("voidedPurchaseNotification")
            w.beginObject()
            w.field("purchaseToken", token)
            w.field("orderId", order)
            w.field("productType", productType)
            w.field("refundType", refundType)
            w.endObject()
        case .pendingRefundReview(let token, let order, let reason, let account):
            w.key("pendingRefundReviewNotification")
            w.beginObject()
            w.field("pendingRefundToken", token)
            w.field("orderId", order)
            w.field("refundReason", reason)
            w.field("obfuscatedAccountId", account)
            w.endObject()
        case .test:
            w.key("testNotification")
            w.beginObject()
            w.field("version", "1.0")
            w.endObject()
        }
        w.endObject()
        return w.bytes
    }
}

extension PlaySimulatorConfig {
    /// Whether `name` is a full subscription name as Google forms one:
    /// `projects/{project}/subscriptions/{id}`, the project 1…100 lower-case letters, digits, `-`,
    /// `.` and `:` starting with a letter, the id 3…255 letters, digits, `-`, `_`, `.`, `~`, `+` and
    /// `%` starting with a letter and not with `goog`.
    public static func isSubscriptionName(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", parts[2] == "subscriptions" else { return false }
        let (project, id) = (parts[1].utf8, parts[3].utf8)
        let isLetter: (UInt8) -> Bool = { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
        let projectOK = project.allSatisfy {
            ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || "-.:".utf8.contains($0)
        }
        guard (1...100).contains(project.count), project.first.map(isLetter) == true, projectOK else { return false }
        let idOK = id.allSatisfy { PlayTruth.isAlphanumeric($0) || "-_.~+%".utf8.contains($0) }
        return (3...255).contains(id.count) && id.first.map(isLetter) == true && idOK && !parts[3].hasPrefix("goog")
    }
}
