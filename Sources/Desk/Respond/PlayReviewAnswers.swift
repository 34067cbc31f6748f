import Foundation
import JobStore
import Logging
import NightLearn
import PlayNight
import PlayStore
import Postgres
import Reconciliation
import StoreIO

/// What `respond` did for Google Play (contract "respond: answering Google Play's refund reviews").
public struct PlayRespondResult: Sendable, Encodable {
    public struct Item: Sendable, Encodable {
        public var message_id, package, order_id: String
        public var user_id: String?
        public var requested_at: String
        /// The notification's `refundReason`.
        public var refund_reason: Int?
        /// `sent`, `would_send`, `sending` (sent, Google's answer not stored: sent again next run),
        /// `not_found` (Google knows no such order), `rejected`, `expired`, `unconfirmed`, `not_judged`.
        public var state: String
        public var detail: String?
        /// The body sent (or that would be sent), as JSON text, without its pending refund token.
        public var body: String?
        public var http_status: Int?
        /// What answers the review (needed to send it; kept in the job schema, not in the lines).
        var pendingRefundToken: String
        /// The answer decided (what `body` shows).
        var answer: PlayReviewAnswer? = nil

        enum CodingKeys: String, CodingKey {
            case message_id, package, order_id, user_id, requested_at, refund_reason, state, detail, body, http_status
        }
    }
    /// Why Play's refund defense is off (no `PLAY_PUBSUB_SUBSCRIPTION`); nil: on.
    public var off: String?
    /// Messages pulled, new to the job, and new pending refund reviews among them.
    public var pulled = 0, stored = 0, refund_reviews = 0
    /// Why the pull or the sending stopped short (Google refusing or silent); nil: done.
    public var skipped: String?
    public var decided: [Item] = []

    public var lines: [String] {
        if let off { return ["Google Play: \(off)"] }
        var out = [
            "Google Play: \(pulled) notification(s) pulled (\(stored) new), \(refund_reviews) new refund review(s); \(decided.count) decided"
                + (skipped.map { " (stopped: \($0))" } ?? "")
        ]
        for i in decided {
            let who = "\(i.package) \(i.order_id)" + (i.user_id.map { " user \($0)" } ?? "")
            switch i.state {
            case "sent": out.append("\(who): sent \(i.body ?? "")")
            case "would_send": out.append("\(who): would send \(i.body ?? "")")
            default: out.append("\(who): \(i.state)" + (i.detail.map { " (\($0))" } ?? ""))
            }
        }
        return out
    }
}

/// The pending refund reviews `respond` decides and answers. A review is open while it is `new`,
/// `would_send`, `sending` or `not_judged` and inside Google's 24 hours: each run decides it
/// again on that day's facts. Past them it closes: `expired`, or `unconfirmed` (a `sending` one).
struct PlayReviewAnswers {
    let settings: JobSettings
    let options: RespondOptions
    let logger: Logger
    let db: PGConnection
    var S: SQL { settings.jobSchema.sql }

    struct Open {
        var token, messageID, package, orderID: String
        var requestedMs: EpochMillis
        var reason: Int?
        var state: String
    }

    /// Closes the reviews whose 24 hours passed, then decides every open one by the night's Play
    /// rules over the Play rows in temporary tables (`db`, as `lookup` does) and the shop's
    /// optional relations (`source`).
    func decideOpen(now: EpochMillis, source: PGConnection) throws -> [PlayRespondResult.Item] {
        let window = PlayRefundDefense.windowMs
        var items: [PlayRespondResult.Item] = []
        let closed = try db.query(
            """
            UPDATE \(S).play_refund_reviews
            SET state = 'unconfirmed', detail = 'sent, Google''s answer never stored (a run stopped during the call); not sent again',
                decided_at = to_timestamp(\(now)::bigint / 1000.0)
            WHERE state = 'sending' AND (extract(epoch FROM requested_at) * 1000)::bigint + \(window) < \(now)
            RETURNING pending_refund_token, message_id, package, order_id, (extract(epoch FROM requested_at) * 1000)::bigint,
                refund_reason, state, detail
            """)
        for row in closed.rows {
            items.append(
                PlayRespondResult.Item(
                    message_id: row[1] ?? "", package: row[2] ?? "", order_id: row[3] ?? "", user_id: nil,
                    requested_at: UTC.timestamp(row[4].flatMap { Int64($0) } ?? 0), refund_reason: row[5].flatMap { Int($0) },
                    state: row[6] ?? "", detail: row[7], pendingRefundToken: row[0] ?? ""))
        }
        let rows = try db.query(
            """
            SELECT pending_refund_token, message_id, package, order_id, (extract(epoch FROM requested_at) * 1000)::bigint,
                refund_reason, state
            FROM \(S).play_refund_reviews
            WHERE state IN ('new', 'would_send', 'sending', 'not_judged') AND requested_at <= to_timestamp(\(now)::bigint / 1000.0)
              AND package = ANY(\(settings.transport.play?.packages ?? [])::text[])
            ORDER BY requested_at, pending_refund_token
            """)
        let open = rows.rows.compactMap { row -> Open? in
            guard let token = row[0], let message = row[1], let package = row[2], let order = row[3],
                let at = row[4].flatMap({ Int64($0) }), let state = row[6]
            else { return nil }
            return Open(
                token: token, messageID: message, package: package, orderID: order, requestedMs: at, reason: row[5].flatMap { Int($0) },
                state: state)
        }
        guard !open.isEmpty else { return items }

        var rules = settings
        rules.asOf = now
        let stage = PlayDecide(settings: rules, logger: logger)
        let views = try SourceStore.googlePlay.viewsSchema(of: settings.jobSchema).sql
        try db.execute(stage.copiesSQL(views, temporary: true))
        let gather = PlayGather(settings: rules, products: try stage.products(db, rows: "pg_temp"), rows: "pg_temp")
        let decision = rules.decisionSettings
        let shop = try PlayShopFacts.read(source, settings: settings, logger: logger)
        for o in open {
            let tokens = try db.query("SELECT token FROM \(S).play_purchases WHERE order_id = \(o.orderID) ORDER BY token").rows
                .compactMap { $0[0] }
            var user: String?
            var outcome: PlayReviewDecision
            if let facts = try gather.facts(db, tokens: Array(tokens.prefix(1))).first {
                let d = PlayRules.decide(facts, settings: decision)
                let verdict = PlayLookup.verdict(facts, decision: d, settings: decision)
                user = verdict.userID ?? facts.userID
                outcome = PlayRefundDefense.decide(
                    facts, verdict: verdict, consumption: try shop.consumption(of: facts.purchase),
                    sampleContentProvided: try shop.sampleContentProvided(facts.purchase.lines.map(\.productID)),
                    requestedAt: o.requestedMs, now: now, settings: options.rules)
            } else {
                outcome = .notJudged("the nights have no answer of Google for this order (no upload or notification named its token)")
            }
            if !PlayRefundDefense.isAnswerable(requestedAt: o.requestedMs, now: now) { outcome = .expired }
            if o.state == "sending", case .answer = outcome {
            } else if o.state == "sending" {
                // It may have reached Google (which keeps the first answer): never recorded as unanswered.
                // It stays `sending` (unconfirmed after its 24 hours), its body kept, not sent again.
                items.append(
                    PlayRespondResult.Item(
                        message_id: o.messageID, package: o.package, order_id: o.orderID, user_id: user,
                        requested_at: UTC.timestamp(o.requestedMs), refund_reason: o.reason, state: "sending",
                        detail: "sent before, Google's answer not stored; not sent again (the rules now say: \(Self.why(outcome)))",
                        pendingRefundToken: o.token))
                continue
            }
            items.append(try record(o, outcome, user: user))
        }
        return items
    }

    /// Stores a decision and returns its item. An answer is `would_send` until `send` sends it (a
    /// `sending` one stays `sending`).
    private func record(_ o: Open, _ decision: PlayReviewDecision, user: String?) throws -> PlayRespondResult.Item {
        var item = PlayRespondResult.Item(
            message_id: o.messageID, package: o.package, order_id: o.orderID, user_id: user, requested_at: UTC.timestamp(o.requestedMs),
            refund_reason: o.reason, state: "", detail: nil, pendingRefundToken: o.token)
        switch decision {
        case .answer(let a):
            item.state = o.state == "sending" ? "sending" : "would_send"
            item.answer = a
            item.body = Self.shown(a)
        case .notJudged(let why):
            item.state = "not_judged"
            item.detail = why
        case .expired:
            item.state = "expired"
            item.detail =
                o.state == "would_send" ? "decided, never sent: sending was off" : "not answered within 24 hours of the notification"
        }
        try db.query(
            """
            UPDATE \(S).play_refund_reviews
            SET state = \(item.state), detail = \(item.detail), body = \(item.body), decided_at = to_timestamp(\(settings.asOf)::bigint / 1000.0)
            WHERE pending_refund_token = \(o.token)
            """)
        return item
    }

    /// What a decision that sends nothing says.
    static func why(_ d: PlayReviewDecision) -> String {
        switch d {
        case .answer: return "answer"
        case .expired: return "expired"
        case .notJudged(let why): return why
        }
    }

    /// The body as lines and JSON show it: the fields sent but the pending refund token.
    static func shown(_ a: PlayReviewAnswer) -> String {
        "{\"sampleContentProvided\":\(a.sampleContentProvided),\"refundPreference\":\"\(a.preference.rawValue)\""
            + (a.consumptionMilliunits.map { ",\"consumptionPercentageMilliunits\":\($0)" } ?? "") + "}"
    }

    static func review(_ a: PlayReviewAnswer, token: String) -> RefundReview {
        RefundReview(
            pendingRefundToken: token, sampleContentProvided: a.sampleContentProvided,
            preference: RefundReview.Preference(rawValue: a.preference.rawValue) ?? .neutral, consumptionMilliunits: a.consumptionMilliunits
        )
    }

    /// Sends every answer decided in this run (`would_send`, and `sending` ones again: Google keeps
    /// the first answer per pending refund token and ignores the rest). Each is stored as `sending`
    /// before its call and as what Google answered after it. Google refusing the account or not
    /// answering stops the sending (returned): what is left is sent next run.
    func send(_ items: inout [PlayRespondResult.Item], play: PlaySettings) throws -> String? {
        var caller = PlayCaller(play: play, settings: settings.transport)
        for i in items.indices where items[i].state == "would_send" || items[i].state == "sending" {
            guard let answer = items[i].answer else { continue }
            try db.query(
                "UPDATE \(S).play_refund_reviews SET state = 'sending' WHERE pending_refund_token = \(items[i].pendingRefundToken)")
            items[i].state = "sending"
            let review = Self.review(answer, token: items[i].pendingRefundToken)
            do {
                switch try caller.reviewRefund(package: items[i].package, orderID: items[i].order_id, review: review) {
                case .accepted: (items[i].state, items[i].http_status) = ("sent", 200)
                case .refused(let status, let problem):
                    (items[i].state, items[i].http_status, items[i].detail) = (status == 404 ? "not_found" : "rejected", status, problem)
                }
            } catch let error as JobError {
                return error.message
            }
            try db.query(
                """
                UPDATE \(S).play_refund_reviews
                SET state = \(items[i].state), detail = \(items[i].detail), http_status = \(items[i].http_status),
                    answered_at = to_timestamp(\(settings.asOf)::bigint / 1000.0)
                WHERE pending_refund_token = \(items[i].pendingRefundToken)
                """)
        }
        return nil
    }
}

/// The shop's optional relations for Play's refund defense, in the source schema:
/// `iap_consumption(transaction_id, consumption_percentage)` by Google's order id (else the token),
/// and `iap_products.sample_content_provided` (of Play's products when the relation has a `store`
/// column). A value out of range, or two rows for one purchase, is left out with a warning.
struct PlayShopFacts {
    let source: PGConnection
    let src: SQL
    let consumption: Bool
    let sampleContent: Bool
    let productStore: Bool
    let logger: Logger

    /// The relations of the shop's own schema (Play's rows are there: `storeRows`).
    static func read(_ source: PGConnection, settings: JobSettings, logger: Logger) throws -> PlayShopFacts {
        let schema = settings.storeRows ?? settings.sourceSchema
        let r = try source.query(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = \(schema) AND table_name IN ('iap_consumption', 'iap_products')
            """)
        var columns: [String: Set<String>] = [:]
        for row in r.rows { columns[row[0] ?? "", default: []].insert(row[1] ?? "") }
        let consumption = columns["iap_consumption"].map { $0.isSuperset(of: ["transaction_id", "consumption_percentage"]) } ?? false
        return PlayShopFacts(
            source: source, src: "\(ident: schema)", consumption: consumption,
            sampleContent: columns["iap_products"]?.contains("sample_content_provided") ?? false,
            productStore: columns["iap_products"]?.contains("store") ?? false, logger: logger)
    }

    func consumption(of p: GooglePurchase) throws -> Int? {
        guard consumption else { return nil }
        let r = try source.query(
            "SELECT consumption_percentage::text FROM \(src).iap_consumption WHERE transaction_id::text = \(p.transactionID) LIMIT 2")
        guard r.rowCount == 1 else {
            if r.rowCount > 1 {
                logger.warning(
                    "iap_consumption has more than one row for a purchase: none is used", metadata: ["order_id": "\(p.transactionID)"])
            }
            return nil
        }
        guard let text = r.value(0, 0) else { return nil }
        guard let pct = Int(text), (0...100_000).contains(pct) else {
            logger.warning(
                "iap_consumption.consumption_percentage is not milliunits 0-100000: left out",
                metadata: ["order_id": "\(p.transactionID)", "value": "\(text.prefix(20))"])
            return nil
        }
        return pct
    }

    func sampleContentProvided(_ products: [String]) throws -> Bool? {
        guard sampleContent, !products.isEmpty else { return nil }
        let store: SQL = productStore ? "AND store::text = 'google_play'" : ""
        let r = try source.query(
            """
            SELECT bool_or(sample_content_provided) FROM \(src).iap_products
            WHERE product_id::text = ANY(\(products)::text[]) \(store)
            """)
        return r.value(0, 0).map { $0 == "t" }
    }
}
