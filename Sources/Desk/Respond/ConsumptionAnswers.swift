import AppStore
import Foundation
import HTTP
import Logging
import NightDecide
import NightLearn
import NightReview
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// The stored requests `respond` decides and answers. A request is open while it is `new`,
/// `would_send`, `sending` or `not_judged` and inside its 12 hours: each run decides it again on
/// that day's facts, so a purchase granted since, a product fixed in `iap_products`, or sending
/// switched on, changes the answer. Past its window it closes: `expired` (never answered), or
/// `unconfirmed` (a `sending` one: sent, Apple's answer never stored).
struct ConsumptionAnswers {
    let settings: JobSettings
    let options: RespondOptions
    let logger: Logger
    let db: PGConnection
    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }
    /// Each decided request's app (its signed transaction's bundle, when one of IAP_BUNDLE_IDS):
    /// the answer goes with that app's token.
    private var apps: [String: String] = [:]

    init(settings: JobSettings, options: RespondOptions, logger: Logger, db: PGConnection) {
        (self.settings, self.options, self.logger, self.db) = (settings, options, logger, db)
    }

    /// The time a decision and an answer are stored with: the run's clock (`--now`, or the wall
    /// clock when the run started), so a replay stores the same times. A run takes seconds; the
    /// 12 hours are checked at that time.
    func clock() -> EpochMillis { settings.asOf }

    /// One open request as stored.
    struct Open {
        var uuid, environment, transactionID, productID: String
        var reason: String?
        var requestedMs: EpochMillis
        var signed: String
        var state: String
    }

    /// Closes the requests whose window passed, then decides every open one. Returns each
    /// request decided or closed in this run.
    /// `source`: where the source relations are read (`db` without SOURCE_DATABASE_URL).
    mutating func decideOpen(now: EpochMillis, source: PGConnection) throws -> [RespondResult.Item] {
        var items: [RespondResult.Item] = []
        let window = RefundDefense.windowMs
        // A request sent once whose answer was never stored (a kill during the call) is not sent
        // again past its window. Every other request past its window is decided below, as
        // `expired`, with the user the rules give it.
        let closed = try db.query(
            """
            UPDATE \(S).consumption_requests
            SET state = 'unconfirmed',
                detail = 'sent, Apple''s answer never stored (a run stopped during the call); not sent again',
                decided_at = to_timestamp(\(now)::bigint / 1000.0)
            WHERE state = 'sending' AND requested_ms + \(window) < \(now)
            RETURNING notification_uuid, environment, transaction_id, product_id, user_id, requested_ms, reason, state, detail
            """)
        for i in 0..<closed.rowCount {
            items.append(
                RespondResult.Item(
                    notification_uuid: closed.value(i, 0) ?? "", environment: closed.value(i, 1) ?? "",
                    transaction_id: closed.value(i, 2) ?? "", product_id: closed.value(i, 3) ?? "", user_id: closed.value(i, 4),
                    requested_at: UTC.timestamp(Int64(closed.value(i, 5) ?? "0") ?? 0), reason: closed.value(i, 6),
                    state: closed.value(i, 7) ?? "", detail: closed.value(i, 8)))
        }

        let rows = try db.query(
            """
            SELECT notification_uuid, environment, transaction_id, product_id, reason, requested_ms, signed_transaction, state
            FROM \(S).consumption_requests
            WHERE state IN ('new', 'would_send', 'sending', 'not_judged') AND requested_ms <= \(now)
            ORDER BY requested_ms, notification_uuid
            """)
        var open: [Open] = []
        for i in 0..<rows.rowCount {
            open.append(
                Open(
                    uuid: rows.value(i, 0) ?? "", environment: rows.value(i, 1) ?? "", transactionID: rows.value(i, 2) ?? "",
                    productID: rows.value(i, 3) ?? "", reason: rows.value(i, 4),
                    requestedMs: Int64(rows.value(i, 5) ?? "0") ?? 0, signed: rows.value(i, 6) ?? "",
                    state: rows.value(i, 7) ?? ""))
        }
        guard !open.isEmpty else { return items }

        // Verified again: nothing stored is believed without its signature.
        let bundles: Set<String>? = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        var verified: [String: SignedTransaction] = [:]
        var failures: [String: String] = [:]
        for o in open {
            switch settings.signedData.verifyTransaction(o.signed, bundleIDs: bundles) {
            case .success(let t):
                verified[o.uuid] = t
                if let bundle = t.transaction.bundleID, settings.bundleIDs.contains(bundle) { apps[o.uuid] = bundle }
            case .failure(let rejection): failures[o.uuid] = "its signed transaction does not verify (\(rejection))"
            }
        }
        var unique: [String: SignedTransaction] = [:]
        for t in verified.values { unique[t.transaction.transactionID + "|" + t.transaction.environment.rawValue] = t }
        var decisionSettings = settings
        decisionSettings.asOf = now
        let decided = try LookupFamilies(db: db, source: source, settings: decisionSettings).decide(Array(unique.values))
        let rules = decisionSettings.decisionSettings
        // In a two-store shop the optional relations are in the shop's schema, not the App Store's views.
        let shop = try ShopFacts.read(
            db: source, schema: settings.storeRows ?? settings.sourceSchema, productsSchema: settings.sourceSchema, logger: logger)

        for o in open {
            var decision: ConsumptionDecision
            var user: String?
            if let failure = failures[o.uuid] {
                decision = .notJudged(failure)
            } else if let t = verified[o.uuid],
                let (family, familyDecision) = decided.family(of: t.transaction.transactionID, t.transaction.environment),
                let verdict = Lookup.verdict(
                    transactionID: t.transaction.transactionID, environment: t.transaction.environment,
                    in: family, decision: familyDecision,
                    inferredOrder: decided.inferredOrder(
                        t.transaction.transactionID,
                        t.transaction.environment),
                    settings: rules)
            {
                let facts = try shop.facts(for: t.transaction, in: family, db: source)
                decision = RefundDefense.decide(
                    transactionID: t.transaction.transactionID, environment: t.transaction.environment,
                    in: family, verdict: verdict, shop: facts, requestedAt: o.requestedMs, now: now,
                    settings: options.rules)
                user = RefundDefense.user(
                    of: t.transaction.transactionID, environment: t.transaction.environment, in: family,
                    verdict: verdict)
            } else {
                decision = .notJudged("the rules found no family for it")
            }
            if !RefundDefense.isAnswerable(requestedAt: o.requestedMs, now: now) { decision = .expired }
            items.append(try record(o, decision, user: user))
        }
        return items
    }

    /// Stores a decision and returns its line. An answer is `would_send` until `send` sends it
    /// (a `sending` one stays `sending`: it may have reached Apple).
    private func record(_ o: Open, _ decision: ConsumptionDecision, user: String?) throws -> RespondResult.Item {
        var item = RespondResult.Item(
            notification_uuid: o.uuid, environment: o.environment, transaction_id: o.transactionID,
            product_id: o.productID, user_id: user, requested_at: UTC.timestamp(o.requestedMs),
            reason: o.reason, state: decision.state, detail: nil)
        var answer: ConsumptionAnswer?
        switch decision {
        case .answer(let a):
            answer = a
            item.state = o.state == "sending" ? "sending" : "would_send"
            item.body = String(decoding: ServerAPI.consumptionRequestBody(a), as: UTF8.self)
        case .notJudged(let why):
            item.detail = why
        case .expired:
            item.detail =
                o.state == "would_send"
                ? "decided, never sent: sending was off"
                : "not answered within 12 hours of the request"
        case .noConsent:
            break
        }
        try db.query(
            """
            UPDATE \(S).consumption_requests
            SET state = \(item.state), detail = \(item.detail), user_id = \(user),
                delivery_status = \(answer?.deliveryStatus.rawValue), consumption_percentage = \(answer?.consumptionPercentage),
                sample_content_provided = \(answer?.sampleContentProvided), refund_preference = \(answer?.refundPreference?.rawValue),
                decided_at = to_timestamp(\(clock())::bigint / 1000.0)
            WHERE notification_uuid = \(o.uuid)
            """)
        return item
    }

    /// Sends every answer decided in this run (`would_send`, and `sending` ones again). Each is
    /// stored as `sending` before its call and as what Apple answered after it: a run killed
    /// between sends that one again (the documented repeat). 429 and 5xx are retried by the
    /// transport; a 4xx is stored with Apple's `errorCode` and never sent again; 401 stops the
    /// run (exit 78); an answer Apple never gave leaves it `sending`, for the next run.
    mutating func send(_ items: inout [RespondResult.Item], api: ServerAPISettings) throws {
        let indices = items.indices.filter { items[$0].state == "would_send" || items[$0].state == "sending" }
        guard !indices.isEmpty else { return }
        let uuids = indices.map { items[$0].notification_uuid }
        var puts: [ConsumptionPut] = []
        for (k, i) in indices.enumerated() {
            let env: AppStoreEnvironment = items[i].environment == "sandbox" ? .sandbox : .production
            puts.append(
                ConsumptionPut(
                    index: i, uuid: uuids[k],
                    request: AppStoreEndpoints.consumption.request(
                        in: env, id: items[i].transaction_id, body: Array((items[i].body ?? "{}").utf8), bundleID: apps[uuids[k]])))
        }
        var transport = AppStoreTransport(settings: settings, service: "the App Store Server API")
        transport.serverAPI = api
        transport.rates = [:]
        transport.share = options.sharePercent / 100
        // Each request is stored as `sending` when the transport takes it, just before its call.
        let S = self.S, db = self.db
        var feed = MarkingFeed(puts) { put in
            try db.query(
                """
                UPDATE \(S).consumption_requests SET state = 'sending', sends = sends + 1 WHERE notification_uuid = \(put.uuid)
                """)
        }
        var breaker = OutageBreaker(wave: transport.concurrency)
        var counts = TransportCounts()
        defer { for p in puts { if let o = p.outcome { items[p.index].apply(o) } else { items[p.index].state = "waiting" } } }
        try transport.run(&feed, breaker: &breaker, counts: &counts) {
            // Stored after each wake-up's answers, before more are sent.
            for p in puts where !p.stored {
                guard let outcome = p.outcome else { continue }
                try store(outcome, uuid: p.uuid)
                p.stored = true
            }
        }
        if let failure = feed.failure { throw failure }
    }

    private func store(_ outcome: ConsumptionPut.Outcome, uuid: String) throws {
        switch outcome {
        case .accepted(let status):
            try db.query(
                """
                UPDATE \(S).consumption_requests
                SET state = 'sent', sent_at = to_timestamp(\(clock())::bigint / 1000.0), http_status = \(status), error_code = NULL
                WHERE notification_uuid = \(uuid)
                """)
        case .refused(let status, let code, let problem):
            try db.query(
                """
                UPDATE \(S).consumption_requests
                SET state = 'rejected', http_status = \(status), error_code = \(code.map(Int64.init)), detail = \(problem)
                WHERE notification_uuid = \(uuid)
                """)
        case .gaveUp:
            break
        }
    }
}

/// One Send Consumption Information call, and what Apple made of it.
final class ConsumptionPut: AppStoreExchange {
    enum Outcome: Equatable {
        case accepted(Int)
        case refused(status: Int?, errorCode: Int?, problem: String)
        case gaveUp(String)
    }
    let index: Int
    let uuid: String
    let request: AppStoreRequest
    var retry = RetryPolicy.State()
    var sends = 0
    var outcome: Outcome?
    var stored = false

    init(index: Int, uuid: String, request: AppStoreRequest) { (self.index, self.uuid, self.request) = (index, uuid, request) }

    func read(_ reply: AppStoreReply) -> Answer {
        switch reply {
        case .answer(let status, _): outcome = .accepted(status)
        case .notFound: outcome = .refused(status: 404, errorCode: 4_040_010, problem: "HTTP 404, errorCode 4040010")
        case .refused(let problem, let code):
            outcome = .refused(status: Self.status(problem), errorCode: code, problem: problem)
        case .unauthorized, .rateLimited, .retry: break
        }
        return AppStoreTransport.answer(reply)
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        if case .leaveForNextRun = decision, outcome == nil { outcome = .gaveUp(answer.problem ?? "no answer") }
        return false
    }

    /// The HTTP status of a refusal's problem text (`HTTP 400, errorCode …`).
    static func status(_ problem: String) -> Int? {
        guard problem.hasPrefix("HTTP ") else { return nil }
        return Int(problem.dropFirst(5).prefix(while: \.isNumber))
    }
}

/// The answers to send, each marked (stored as `sending`) when the transport takes it: a run
/// that stops before a request's turn leaves it as it was. A mark that fails ends the feed; the
/// caller throws it once the requests in flight are settled.
struct MarkingFeed: ExchangeFeed {
    private var list: [ConsumptionPut]
    private var position = 0
    private let mark: (ConsumptionPut) throws -> Void
    private(set) var failure: Error?

    init(_ list: [ConsumptionPut], mark: @escaping (ConsumptionPut) throws -> Void) { (self.list, self.mark) = (list, mark) }

    mutating func next() -> ConsumptionPut? {
        guard failure == nil, position < list.count else { return nil }
        do { try mark(list[position]) } catch {
            failure = error
            return nil
        }
        position += 1
        return list[position - 1]
    }
    mutating func next(timeoutMs: Int) -> ConsumptionPut? { next() }
    var finished: Bool { failure != nil || position >= list.count }
}

extension RespondResult.Item {
    mutating func apply(_ outcome: ConsumptionPut.Outcome) {
        switch outcome {
        case .accepted(let status):
            state = "sent"
            http_status = status
        case .refused(let status, let code, let problem):
            state = "rejected"
            http_status = status
            error_code = code
            detail = problem
        case .gaveUp(let problem):
            state = "waiting"
            detail = "Apple did not answer (\(problem)); sent again next run while in the window"
        }
    }
}
