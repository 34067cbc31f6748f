import AppStore
import Foundation
import JobStore
import Logging
import NightDecide
import NightLearn
import PlayStore
import Postgres
import Reconciliation
import StoreIO

/// `iap-reconcile respond`'s options.
public struct RespondOptions: Sendable {
    /// `--send` or `IAP_CONSUMPTION_RESPONSES=send`: answers go to Apple; otherwise they are
    /// recorded and printed as what would be sent.
    public var send = false
    /// `--share-percent`: the share of Apple's per-app limits `respond` uses (the night uses 90%).
    public var sharePercent = 10.0
    /// `--sample-content-provided`, `--refund-preference`, `--decline-above`.
    public var rules = RefundDefenseSettings()

    public init() {}
}

/// What one `respond` run did: the requests it found, and each request it decided.
public struct RespondResult: Sendable, Encodable {
    public struct Item: Sendable, Encodable {
        public var notification_uuid, environment, transaction_id, product_id: String
        public var user_id: String?
        public var requested_at: String
        public var reason: String?
        /// `sent`, `would_send`, `rejected`, `expired`, `no_consent`, `not_judged`, `unconfirmed`,
        /// `waiting` (Apple did not answer: sent again next run).
        public var state: String
        public var detail: String?
        /// The body sent (or that would be sent), as JSON text.
        public var body: String?
        public var http_status: Int?
        public var error_code: Int?
    }
    public var now: String
    public var send: Bool
    /// Requests read from the sources, stored for the first time, payloads rejected.
    public var read = 0, found = 0, rejected = 0
    public var decided: [Item] = []
    /// Every stored request per answer (`state`), after this run.
    public var requests_by_answer: [String: Int] = [:]
    /// How long the oldest request still inside its 12 hours has waited for an answer (seconds
    /// by respond's clock; 0 when none waits). Waiting: not sent yet (`new`, `sending`,
    /// `not_judged`, and `would_send` when sending is on).
    public var oldest_unanswered_age_seconds = 0.0
    /// Google Play's refund reviews; nil without Play configured.
    public var google_play: PlayRespondResult?

    public var lines: [String] {
        var out = apple ? appleLines : []
        if let google_play { out += google_play.lines }
        return out
    }

    /// Whether Apple's refund requests were read (the Server API is configured).
    public var apple = true

    private var appleLines: [String] {
        var out = [
            "\(found) new refund request(s) found (\(read) read, \(rejected) rejected); \(decided.count) decided"
                + (send ? "" : " (sending is off: --send or IAP_CONSUMPTION_RESPONSES=send)")
        ]
        for i in decided {
            let who = "\(i.environment) \(i.transaction_id) \(i.product_id)" + (i.user_id.map { " user \($0)" } ?? "")
            switch i.state {
            case "sent": out.append("\(who): sent \(i.body ?? "")")
            case "would_send": out.append("\(who): would send \(i.body ?? "")")
            case "rejected": out.append("\(who): Apple refused \(i.body ?? "") (\(i.detail ?? ""))")
            default: out.append("\(who): \(i.state)" + (i.detail.map { " (\($0))" } ?? ""))
            }
        }
        return out
    }
}

/// Answers Apple's refund requests (contract "Answering Apple's refund requests"): finds
/// new CONSUMPTION_REQUEST notifications (`RequestSources`), decides each open request by the rule
/// book (`LookupFamilies` → `Lookup.verdict` → `RefundDefense.decide`, the night's own rules),
/// and, with `--send`, sends the answers through the App Store transport. Runs under its own lock
/// (beside the night), never migrates, writes only its own tables.
public struct RespondRun {
    var settings: JobSettings
    let options: RespondOptions
    let logger: Logger
    /// `--now` (the settings' `asOf`).
    var now: EpochMillis { settings.asOf }

    public init(settings: JobSettings, options: RespondOptions, logger: Logger) {
        self.settings = settings
        self.options = options
        self.logger = logger
    }

    static func wallClock() -> EpochMillis { EpochMillis(Date().timeIntervalSince1970 * 1000) }

    public mutating func run() throws -> RespondResult {
        if let list = settings.rootCertificateFiles { try settings.useRootCertificates(pemFiles: list) }
        try settings.configureServerAPI()
        // A bad Play setting must not cost Apple's 12 hours: said at the end, after Apple's part.
        var playSettingsError: JobError?
        do { try settings.configurePlay() } catch let error as JobError { playSettingsError = error }
        let api = settings.serverAPI
        let play = settings.transport.play
        if api == nil, let playSettingsError { throw playSettingsError }
        guard api != nil || play?.subscription != nil else {
            throw JobError(
                .configuration,
                "respond reads and answers Apple's refund requests through the App Store Server API: "
                    + "set IAP_ISSUER_ID, IAP_KEY_ID and IAP_PRIVATE_KEY_FILE (an In-App Purchase key) and IAP_BUNDLE_IDS; "
                    + "for Google Play's refund reviews, PLAY_SERVICE_ACCOUNT_FILE, PLAY_PACKAGE_NAMES and PLAY_PUBSUB_SUBSCRIPTION")
        }
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        return try Result { () throws -> RespondResult in
            try acquireLock(db)
            try SchemaCheck.requireCurrent(
                db, schema: settings.jobSchema,
                why: "respond never migrates; run `iap-reconcile migrate` first")
            var result = RespondResult(now: UTC.timestamp(now), send: options.send)
            var counts = RequestSources.Counts()
            var pager = Pager.Counts()
            // The source relations are read on SOURCE_DATABASE_URL when it is set: in two short
            // snapshots, none held while Apple is asked (a standby's replay waits for a snapshot).
            let settings = try SourceDatabase.reading(settings, job: db, retry: false, logger: logger) { source in
                var settings = self.settings
                try StoreViews.checkSources(&settings, db: db, source: source, command: "respond")
                try RequestSources(settings: settings, logger: logger, now: now).readShopNotifications(
                    db: db, source: source,
                    counts: &counts)
                return settings
            }
            self.settings = settings
            result.apple = api != nil
            // Each store's part on its own: Apple unreachable or refusing its key must not let
            // Google's 24 hours pass unanswered, nor the reverse. The first failure is the exit.
            var failure: Error?
            if let api {
                do {
                    let sources = RequestSources(settings: settings, logger: logger, now: now)
                    try sources.sweepHistory(db: db, api: api, share: options.sharePercent / 100, counts: &counts, pager: &pager)
                    (result.read, result.found, result.rejected) = (counts.read, counts.stored, counts.rejected)
                    var answers = ConsumptionAnswers(settings: settings, options: options, logger: logger, db: db)
                    result.decided = try SourceDatabase.reading(settings, job: db, retry: false, logger: logger) { source in
                        try answers.decideOpen(now: now, source: source)
                    }
                    if options.send {
                        try answers.send(&result.decided, api: api)
                    }
                    try count(&result, db: db)
                } catch {
                    failure = error
                    if play != nil {
                        logger.error("Apple's refund requests: \(JobError.from(error, doing: "answering").message); Google Play's go on")
                    }
                }
            }
            if let play {
                do { result.google_play = try answerPlay(play, db: db) } catch { failure = failure ?? error }
            }
            if let failure { throw failure }
            if let playSettingsError { throw playSettingsError }
            return result
        }.mapError { JobError.from($0, doing: "answering refund requests") }.get()
    }

    /// Google Play's part: the subscription pulled (each message stored before it is
    /// acknowledged), then every open pending refund review decided and, with `--send`, answered.
    private func answerPlay(_ play: PlaySettings, db: PGConnection) throws -> PlayRespondResult {
        var out = PlayRespondResult()
        guard play.subscription != nil else {
            out.off =
                "refund defense is off: no PLAY_PUBSUB_SUBSCRIPTION, so Google's pending refund reviews are never read "
                + "(a nightly pull alone would miss their 24 hours)"
            return out
        }
        let counts = try PlayNotificationPull(settings: settings, play: play, runID: nil, logger: logger).run(db: db)
        (out.pulled, out.stored, out.refund_reviews, out.skipped) = (counts.pulled, counts.stored, counts.refundReviews, counts.skipped)
        let answers = PlayReviewAnswers(settings: settings, options: options, logger: logger, db: db)
        out.decided = try SourceDatabase.reading(settings, job: db, retry: false, logger: logger) { source in
            try answers.decideOpen(now: now, source: source)
        }
        if options.send, let stopped = try answers.send(&out.decided, play: play) { out.skipped = stopped }
        return out
    }

    /// The stored requests per answer, and the wait of the oldest one not answered yet.
    private func count(_ result: inout RespondResult, db: PGConnection) throws {
        let S = settings.jobSchema.sql
        let states = try db.query("SELECT state, count(*) FROM \(S).consumption_requests GROUP BY state")
        for i in 0..<states.rowCount {
            result.requests_by_answer[states.value(i, 0) ?? "", default: 0] += Int(states.value(i, 1) ?? "0") ?? 0
        }
        let waiting: [String] = options.send ? ["new", "sending", "not_judged", "would_send"] : ["new", "sending", "not_judged"]
        let oldest = try db.query(
            """
            SELECT min(requested_ms) FROM \(S).consumption_requests
            WHERE state = ANY(\(waiting)::text[]) AND requested_ms + \(RefundDefense.windowMs) >= \(now) AND requested_ms <= \(now)
            """)
        if let ms = oldest.value(0, 0).flatMap({ Int64($0) }) { result.oldest_unanswered_age_seconds = Double(now - ms) / 1000 }
    }

    /// One `respond` at a time per job schema (its own lock: the night's is another, so both run
    /// at once). A run that finds it held waits `--lock-wait-seconds`, then leaves (exit 75).
    private func acquireLock(_ db: PGConnection) throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(settings.lockWaitSeconds) * 1_000_000_000
        while true {
            let got = try db.query("SELECT pg_try_advisory_lock(hashtext(\("iap-reconcile respond " + settings.jobSchema.name)))")
            if got.value(0, 0) == "t" { return }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { break }
            usleep(200_000)
        }
        throw JobError(
            .temporary,
            "another iap-reconcile respond holds the lock on schema \(settings.jobSchema.name) "
                + "(waited \(settings.lockWaitSeconds) s); not starting (the next run will answer what it leaves)")
    }
}
