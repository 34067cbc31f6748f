import Foundation
import JobStore
import Logging
import PlayStore
import Postgres
import Reconciliation
import StoreIO

/// What a pull of Play's notifications did (summary.json `google_play.notifications`, respond's line).
public struct PlayNotificationCounts: Sendable, Equatable {
    /// Messages received (a redelivery counts again), and those new to the job.
    public var pulled = 0
    public var stored = 0
    /// Messages new to the job that are no notification Google documents (kept with their reason).
    public var unreadable = 0
    /// Purchase tokens new messages named (asked of Google as the night's tokens are).
    public var tokens = 0
    /// Pending refund reviews new to the job (respond answers them).
    public var refundReviews = 0
    /// Pull calls made.
    public var pulls = 0
    /// Why the pull stopped before the subscription was empty (Google refusing or silent); nil: emptied.
    public var skipped: String?

    public init() {}
}

/// Contract, "Google Play's notifications": the job's own pull subscription
/// (`PLAY_PUBSUB_SUBSCRIPTION`) on Play's notification topic, pulled until empty, each pull's
/// messages stored in one transaction (`play_messages`, once per `messageId`; a pending refund
/// review also in `play_refund_reviews`, once per pending refund token) and only then
/// acknowledged. A run killed between the two leaves the messages stored and unacknowledged:
/// Pub/Sub delivers them again and storing them again changes nothing. A message is never a fact:
/// its token is asked of Google with the night's tokens, its refund review judged by the rules.
public struct PlayNotificationPull {
    let settings: JobSettings
    let play: PlaySettings
    /// The night's run; nil for respond.
    let runID: Int64?
    let logger: Logger
    /// Messages a pull asks for (Pub/Sub's most), and the pulls of one run at most.
    static let pullSize = 1000
    static let maxPulls = 500

    public init(settings: JobSettings, play: PlaySettings, runID: Int64?, logger: Logger) {
        (self.settings, self.play, self.runID, self.logger) = (settings, play, runID, logger)
    }

    /// Pulls until a pull brings nothing. Google refusing or not answering stops the pull
    /// (`skipped`); a database error is thrown.
    public func run(db: PGConnection) throws -> PlayNotificationCounts {
        var counts = PlayNotificationCounts()
        guard play.subscription != nil else { return counts }
        var caller = PlayCaller(play: play, settings: settings.transport)
        while counts.pulls < Self.maxPulls {
            let messages: [PubSubMessage]
            do {
                messages = try caller.pull(maxMessages: Self.pullSize)
            } catch let error as JobError {
                counts.skipped = error.message
                break
            }
            counts.pulls += 1
            guard !messages.isEmpty else { break }
            counts.pulled += messages.count
            try db.transaction { try store(db, messages, counts: &counts) }
            do {
                try caller.acknowledge(messages.map(\.ackID))
            } catch let error as JobError {
                // Stored: what is not acknowledged comes again, and changes nothing.
                counts.skipped = error.message
                break
            }
        }
        if let reason = counts.skipped {
            logger.warning("Google Play: the notifications of \(play.subscription ?? "") were not all pulled: \(reason)")
        }
        return counts
    }

    /// One message as the job keeps it.
    struct Kept: Equatable {
        var kind: String
        var package: String?
        var eventAt: EpochMillis?
        var token: String?
        var orderID: String?
        var problem: String?
        var review: (token: String, reason: Int?, account: String?)?

        static func == (a: Kept, b: Kept) -> Bool {
            (a.kind, a.package, a.eventAt, a.token, a.orderID, a.problem) == (b.kind, b.package, b.eventAt, b.token, b.orderID, b.problem)
                && a.review?.token == b.review?.token && a.review?.reason == b.review?.reason && a.review?.account == b.review?.account
        }
    }

    /// What the job keeps of a message's data: its kind, and what to ask Google about. A voided
    /// subscription is a subscription (not the job's); data that is no notification is
    /// `unreadable`, its reason kept.
    static func kept(_ data: [UInt8]) -> Kept {
        switch PlayNotification.read(data) {
        case .failure(let garbage):
            return Kept(kind: "unreadable", problem: garbage.problem)
        case .success(let n):
            var k = Kept(kind: "test", package: n.packageName, eventAt: n.eventTime)
            switch n.kind {
            case .oneTimeProduct(let type, let token, _):
                (k.kind, k.token) = (type == 1 ? "purchased" : "canceled", token)
            case .voided(let token, let order, let productType, _):
                if productType == 2 { (k.kind, k.token, k.orderID) = ("voided", token, order) } else { k.kind = "subscription" }
            case .pendingRefundReview(let token, let order, let reason, let account):
                (k.kind, k.orderID, k.review) = ("refund_review", order, (token, reason, account))
            case .subscription:
                k.kind = "subscription"
            case .test:
                break
            }
            return k
        }
    }

    private func store(_ db: PGConnection, _ messages: [PubSubMessage], counts: inout PlayNotificationCounts) throws {
        let S = settings.jobSchema.sql
        for m in messages {
            let k = Self.kept(m.data)
            let event: SQL = k.eventAt.map { "to_timestamp(\($0)::bigint / 1000.0)" } ?? "NULL"
            let inserted = try db.query(
                """
                INSERT INTO \(S).play_messages (message_id, published_at, kind, package, event_at, token, order_id, problem, data,
                    stored_at, run_id)
                VALUES (\(m.messageID), to_timestamp(\(m.publishTime)::bigint / 1000.0), \(k.kind), \(k.package), \(event),
                    \(k.token), \(k.orderID), \(k.problem), decode(\(Data(m.data).base64EncodedString()), 'base64'), now(), \(runID))
                ON CONFLICT (message_id) DO NOTHING RETURNING 1
                """)
            guard inserted.rowCount == 1 else { continue }
            counts.stored += 1
            if k.kind == "unreadable" { counts.unreadable += 1 }
            if k.token != nil { counts.tokens += 1 }
            guard let review = k.review, let package = k.package, let order = k.orderID, let at = k.eventAt else { continue }
            let new = try db.query(
                """
                INSERT INTO \(S).play_refund_reviews (pending_refund_token, message_id, package, order_id, requested_at,
                    refund_reason, account_id, state)
                VALUES (\(review.token), \(m.messageID), \(package), \(order), to_timestamp(\(at)::bigint / 1000.0),
                    \(review.reason), \(review.account), 'new')
                ON CONFLICT (pending_refund_token) DO NOTHING RETURNING 1
                """)
            counts.refundReviews += new.rowCount
        }
    }
}
