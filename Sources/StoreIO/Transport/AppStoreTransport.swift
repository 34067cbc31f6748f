import AppStore
import Foundation
import HTTP
import HeapModule
import JobStore
import Reconciliation

/// The one way the job talks to Apple: keeps `concurrency` requests in flight on one libcurl multi
/// handle, classifies every answer (`AppStoreReply`), holds each endpoint to its rate budget and a
/// 429 to its `Retry-After`, signs a bearer token per key and app and reuses it while valid, backs
/// off and retries by the retry policy, and stops on an answer that is ours to fix (exit 78) or a
/// host that does not answer (`OutageBreaker`, exit 75).
///
/// Concurrency: `run` keeps its multi handle, budget, tokens and every exchange in flight on the
/// thread that calls it (`HTTPMulti` is not `Sendable`); exchanges talk to other threads only
/// through their queues.
package struct AppStoreTransport {
    /// verifyReceipt's URLs (whole, with `/verifyReceipt`).
    var verifyReceiptURL: (production: String, sandbox: String) = ("", "")
    /// The Server API (and its In-App Purchase key).
    package var serverAPI: ServerAPISettings?
    /// App Store Connect (and its team key): the sales reports.
    package var connect: AppStoreConnectSettings?
    let policy: RetryPolicy
    /// Requests in flight at most.
    package let concurrency: Int
    let timeoutMs: Int
    /// What the exit-75 line calls the other end when it does not answer.
    let service: String
    /// Requests per second per endpoint (`--api-rate`); missing: 90% of Apple's.
    package var rates: [ServerAPIEndpoint: Double] = [:]
    /// The share of Apple's limits used where `rates` does not say (`RateBudget.share`).
    package var share = RateBudget.safety
    /// How long an App Store Connect endpoint whose hourly allowance (`X-Rate-Limit`) ran low waits
    /// (`RateBudget.hourlyPauseNs`; a test shortens it).
    var hourlyPauseNs = RateBudget.hourlyPauseNs
    /// No request goes after this monotonic time (`monotonicNanos`): an exchange due later is
    /// dropped unasked, as a refused app's are (nil: no end). A step that must not hold the night
    /// up (the sales reports) sets it; the answers in flight are still read.
    package var stopSendingAtNs: UInt64?
    /// `lookup` only: a 429 asking to wait longer than this ends the run (exit 75) instead.
    package var longestRateLimitWaitMs: Int64?
    /// The night's apps: requests per app, and the apps whose key Apple refused. A confirmed 401
    /// then stops only that app's requests (the run stops with exit 78 once every app is
    /// refused); nil (`lookup`, `respond`): a confirmed 401 stops the run.
    var apps: NightApps?

    /// The transport of a run with `settings`: its URLs, keys, retry policy, `--concurrency`,
    /// `--timeout-ms` and `--api-rate`. `service` names the other end in the exit-75 line.
    package init(settings: TransportSettings, service: String, concurrency: Int? = nil) {
        self.init(
            policy: RetryPolicy(
                maxAttempts: settings.maxAttempts, retryBaseMs: settings.retryBaseMs,
                retryDelayMinutes: settings.retryDelayMinutes),
            concurrency: concurrency ?? settings.concurrency, timeoutMs: settings.timeoutMs, service: service)
        verifyReceiptURL = (settings.productionURL, settings.sandboxURL)
        serverAPI = settings.serverAPI
        connect = settings.appStoreConnect
        rates = settings.serverAPI?.rates ?? [:]
        apps = settings.nightApps
    }

    init(policy: RetryPolicy, concurrency: Int, timeoutMs: Int, service: String) {
        self.policy = policy
        self.concurrency = max(1, concurrency)
        self.timeoutMs = timeoutMs
        self.service = service
    }

    /// A request made to wait (backoff, budget): due on the monotonic clock.
    private struct Waiting<E>: Comparable {
        var due: UInt64
        var sequence: Int
        var exchange: E
        static func < (a: Waiting, b: Waiting) -> Bool { (a.due, a.sequence) < (b.due, b.sequence) }
        static func == (a: Waiting, b: Waiting) -> Bool { a.due == b.due && a.sequence == b.sequence }
    }

    /// Runs the feed's exchanges to their end. `breaker` spans the run (or several: `lookup`'s);
    /// `recorded` is called after each wake-up's answers were settled (one hand-off of their
    /// records, not one per answer).
    package func run<Feed: ExchangeFeed>(
        _ feed: inout Feed, breaker: inout OutageBreaker, counts: inout TransportCounts,
        recorded: () throws -> Void = {}
    ) throws {
        typealias E = Feed.Exchange
        let http = HTTPMulti()
        defer { http.close() }
        var budget = RateBudget(rates: rates, share: share)
        budget.hourlyPause = hourlyPauseNs
        var iapTokens = serverAPI.map { BearerTokens(key: $0.jwt, appKeys: $0.appKeys) }
        var teamTokens = connect.map { BearerTokens(key: $0.teamKey) }
        var inFlight: [Int: (exchange: E, request: AppStoreRequest, sentAt: UInt64)] = [:]
        var doubts = UnauthorizedDoubts()
        /// App Store Connect refused the team key (a 401 confirmed with a fresh token a second
        /// later, or a 403): nothing more goes to it in this run, and the run goes on (its
        /// exchanges were told; those not sent yet are dropped unasked). Only the step that asked
        /// ends; the exit code is not the team key's to change.
        var connectRefused = false
        var waiting = Heap<Waiting<E>>()
        var nextTag = 0
        var stopping: JobError?
        var feedDone = false
        var rng = SystemRandomNumberGenerator()
        /// Requests this run sent (the breaker may carry an earlier run's).
        var sentHere = 0
        // An exchange the budget did not admit yet (one at most: the run stops pulling until it goes).
        var held: (exchange: E, due: UInt64)?

        func budgetKey(_ request: AppStoreRequest) -> RateBudget.Key? {
            request.budget.map { RateBudget.Key(budget: $0, environment: request.environment, app: appOf(request)) }
        }

        /// The app a Server API request is for (its token's `bid`); nil for other services.
        func appOf(_ request: AppStoreRequest) -> String? {
            guard request.service == .serverAPI else { return nil }
            return request.bundleID ?? serverAPI?.jwt.bundleID
        }

        /// Drops an exchange of a refused app unasked, as a stopping run drops those in flight:
        /// nothing is recorded of it, so it is asked again by the next night and blamed for nothing.
        func dropRefused(app: String) { apps?.dropped(app: app) }

        func url(_ request: AppStoreRequest) -> String {
            switch request.service {
            case .verifyReceipt:
                return request.environment == .production ? verifyReceiptURL.production : verifyReceiptURL.sandbox
            case .serverAPI:
                return (serverAPI?.baseURL(request.environment) ?? "") + request.path
            case .connect:
                return (connect?.trimmedBaseURL ?? "") + request.path
            }
        }

        func httpRequest(_ request: AppStoreRequest, tag: Int) throws -> HTTPRequest {
            var headers = request.method == .get ? [] : ["Content-Type: application/json"]
            var wanted: [String] = []
            var now: Int64 { Int64(Date().timeIntervalSince1970) }
            switch request.service {
            case .verifyReceipt:
                break
            case .serverAPI:
                guard let token = iapTokens?.token(app: request.bundleID, now: now) else {
                    throw JobError(.configuration, "\(request.name) asks the App Store Server API, which is not configured")
                }
                headers.append("Authorization: Bearer " + token)
                wanted = ["Retry-After"]
            case .connect:
                guard let token = teamTokens?.token(app: nil, now: now) else {
                    throw JobError(.configuration, "\(request.name) asks the App Store Connect API: no team key is configured")
                }
                headers.append("Authorization: Bearer " + token)
                // Apple's reports come as a gzip file (`application/a-gzip`): asked for so.
                headers.append("Accept: application/a-gzip")
                wanted = ["Retry-After", "X-Rate-Limit"]
            }
            let method: HTTPRequest.Method
            switch request.method {
            case .get: method = .get
            case .post: method = .post
            case .put: method = .put
            }
            return HTTPRequest(
                tag: tag, method: method, url: url(request), body: request.body, headers: headers,
                timeoutMs: timeoutMs, wantedHeaders: wanted)
        }

        /// Sends `exchange`'s request if the budget admits it now; else holds it. False when held.
        func sendIfAdmitted(_ exchange: E, now: UInt64) throws -> Bool {
            if let end = stopSendingAtNs, now >= end { return true }
            let request = exchange.request
            if request.service == .connect {
                if connectRefused { return true }
                if let due = doubts.heldUntil(Self.teamKeyDoubt, now: now) {
                    later(exchange, due: due)
                    return true
                }
            }
            if let app = appOf(request) {
                if apps?.isRefused(app) == true {
                    dropRefused(app: app)
                    return true
                }
                if let due = doubts.heldUntil(app, now: now) {
                    later(exchange, due: due)
                    return true
                }
            }
            if let key = budgetKey(request), let due = budget.admit(key, now: now) {
                held = (exchange, due)
                return false
            }
            try send(exchange, request)
            return true
        }

        /// Sends `request` of `exchange` now (the budget, if any, admitted it).
        func send(_ exchange: E, _ request: AppStoreRequest) throws {
            nextTag += 1
            do {
                try http.add(httpRequest(request, tag: nextTag))
            } catch {
                // Admitted, never sent: counted for a window anyway.
                if let key = budgetKey(request) { budget.answered(key, now: Self.monotonicNanos()) }
                throw error
            }
            exchange.sends += 1
            inFlight[nextTag] = (exchange, request, Self.monotonicNanos())
            counts.requests[request.name, default: 0] += 1
            if let app = appOf(request) { apps?.sent(app: app, endpoint: request.name) }
            sentHere += 1
            breaker.sent(first: exchange.sends == 1)
        }

        /// Due now or later: through the budget when it is due.
        func later(_ exchange: E, due: UInt64) {
            nextTag += 1
            waiting.insert(Waiting(due: due, sequence: nextTag, exchange: exchange))
        }

        // Until the host has answered once, one wave of requests at most goes out: each failure
        // of the first wave would otherwise free a slot for one more request to a host that may
        // be gone (up to twice the wave when the failures come one by one, as a slow resolver
        // makes them), before the breaker has seen the whole wave fail.
        func mayWiden() -> Bool { breaker.answers > 0 || sentHere < concurrency }

        while true {
            let now = Self.monotonicNanos()
            if stopping == nil {
                while inFlight.count < concurrency && mayWiden() {
                    if let h = held {
                        if h.due > now { break }
                        held = nil
                        if try !sendIfAdmitted(h.exchange, now: now) { break }
                    } else if let first = waiting.min, first.due <= now {
                        if try !sendIfAdmitted(waiting.removeMin().exchange, now: now) { break }
                    } else if !feedDone, let exchange = feed.next() {
                        if try !sendIfAdmitted(exchange, now: now) { break }
                    } else {
                        if !feedDone && feed.finished { feedDone = true }
                        break
                    }
                }
            }
            if inFlight.isEmpty && held == nil {
                if stopping != nil || (feedDone && waiting.isEmpty) { break }
                if !feedDone && waiting.isEmpty && mayWiden() {
                    // Nothing to do until the feed delivers.
                    if let exchange = feed.next(timeoutMs: 200) {
                        _ = try sendIfAdmitted(exchange, now: Self.monotonicNanos())
                    } else if feed.finished {
                        feedDone = true
                    }
                    continue
                }
            }
            if stopping != nil && inFlight.isEmpty { break }
            // A backoff or a budget that ends only matters when a request may go out then: with every
            // slot taken (or stopping) the run waits for an answer, never polls in a busy circle.
            var untilDue = 100
            if stopping == nil && inFlight.count < concurrency {
                if let first = waiting.min { untilDue = min(untilDue, Int((first.due > now ? first.due - now : 0) / 1_000_000)) }
                if let h = held { untilDue = min(untilDue, Int((h.due > now ? h.due - now : 0) / 1_000_000)) }
            }
            var sendError: Error?
            answers: for completion in http.poll(timeoutMs: untilDue) {
                guard let (exchange, asked, sentAt) = inFlight.removeValue(forKey: completion.tag) else { continue }
                let key = budgetKey(asked)
                // It counts against the budget for a window from its answer (RateBudget).
                if let key { budget.answered(key, now: Self.monotonicNanos()) }
                let reply: AppStoreReply
                switch completion.outcome {
                case .response(let status, let body):
                    breaker.answered()
                    if let key, let header = completion.headers["X-Rate-Limit"], let allowance = HourlyAllowance.parse(header) {
                        budget.report(allowance, for: key)
                    }
                    reply = AppStoreReply.classify(
                        asked.service, httpStatus: status, body: body,
                        retryAfter: completion.headers["Retry-After"])
                case .failure(_, let message, _):
                    breaker.failed(first: exchange.sends == 1, reason: message)
                    reply = .retry(message)
                }
                if asked.service == .connect {
                    if case .unauthorized = reply {
                        if case .askAgain(let due, let firstDoubt) = doubts.unauthorized(
                            Self.teamKeyDoubt, sentAt: sentAt,
                            now: Self.monotonicNanos())
                        {
                            if firstDoubt { teamTokens?.forget(app: nil) }
                            counts.retried += 1
                            later(exchange, due: due)
                            continue answers
                        }
                        // Confirmed: the exchange is told, the run goes on without App Store Connect.
                        connectRefused = true
                        let answer = try exchange.read(reply)
                        _ = exchange.settled(answer, decision: .definitive, asked: asked, completion: completion)
                        continue answers
                    }
                    doubts.answered(Self.teamKeyDoubt, sentAt: sentAt)
                    if case .response(403, _) = completion.outcome { connectRefused = true }
                }
                if let app = appOf(asked) {
                    if case .unauthorized = reply {
                        if case .askAgain(let due, let firstDoubt) = doubts.unauthorized(
                            app, sentAt: sentAt,
                            now: Self.monotonicNanos())
                        {
                            if firstDoubt { iapTokens?.forget(app: app) }
                            counts.retried += 1
                            later(exchange, due: due)
                            continue answers
                        }
                        // Confirmed. With other apps still answering, only this app stops.
                        if let apps, !apps.refuse(app) {
                            dropRefused(app: app)
                            continue answers
                        }
                        let answer = try exchange.read(reply)
                        _ = exchange.settled(answer, decision: .stop, asked: asked, completion: completion)
                        if stopping == nil {
                            stopping = JobError(.configuration, Self.unauthorized(apps: apps?.apps ?? [app]))
                        }
                        continue answers
                    } else {
                        doubts.answered(app, sentAt: sentAt)
                    }
                }
                if case .rateLimited(let until) = reply {
                    counts.rateLimited += 1
                    let nowUnix = Self.unixMillis()
                    if let longest = longestRateLimitWaitMs, let until, until - nowUnix > longest {
                        throw JobError(
                            .temporary,
                            "the App Store asks to wait \((until - nowUnix) / 1000) s (rate limit of "
                                + "\(asked.name)); run again later")
                    }
                    // Nothing more to this endpoint before the time Apple named (none believable: the backoff alone).
                    if let key, let until = Self.believable(retryAfter: until, nowMs: nowUnix) {
                        budget.block(key, untilUnixMs: until, nowUnixMs: nowUnix, now: Self.monotonicNanos())
                    }
                }
                let answer = try exchange.read(reply)
                let decision = policy.decide(
                    answer.answerClass, status: answer.status, state: &exchange.retry,
                    now: Self.unixMillis(), jitter: Double.random(in: 0...1, using: &rng))
                let again = exchange.settled(answer, decision: decision, asked: asked, completion: completion)
                switch decision {
                case .stop:
                    if stopping == nil { stopping = Self.configurationError(answer) }
                case .sendAgain(let afterMs):
                    counts.retried += 1
                    later(exchange, due: Self.monotonicNanos() + UInt64(afterMs) * 1_000_000)
                case .definitive, .rejectedAfterRepeated21002, .switchEnvironment, .leaveForNextRun, .environmentsDisagree:
                    guard again, stopping == nil else { break }
                    let next = exchange.request
                    if let app = appOf(next), apps?.isRefused(app) == true || doubts.isDoubted(app) {
                        // Through the refusal and the second's wait.
                        later(exchange, due: Self.monotonicNanos())
                    } else if let key = budgetKey(next), let due = budget.admit(key, now: Self.monotonicNanos()) {
                        later(exchange, due: due)
                    } else {
                        // Settled first: the answers of this wake-up are kept even if this throws.
                        do { try send(exchange, next) } catch { sendError = error; break answers }
                    }
                }
            }
            try recorded()
            if let sendError { throw sendError }
            // The answers above are settled (a receipt whose request failed stays eligible: nothing
            // was believed); the requests still in flight are dropped with the multi handle.
            if stopping == nil {
                var verdict = breaker.verdict(moreFirstRequests: !feedDone || held != nil)
                // A whole wave went out and failed (retries among it), and no more may go: unreachable.
                if verdict == .goOn && !mayWiden() && inFlight.isEmpty { verdict = .unreachable }
                if verdict != .goOn { throw JobError(.temporary, breaker.message(verdict, service: service)) }
            }
        }
        if let stopping { throw stopping }
        if sentHere > 0 && breaker.answers == 0 {
            throw JobError(.temporary, breaker.message(.unreachable, service: service))
        }
    }

    /// The doubts' name for App Store Connect's team key (no app: one key for the team).
    static let teamKeyDoubt = " App Store Connect team key"

    /// Backoff deadlines: a clock that never jumps.
    package static func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Wall time, for what is stored (when an answer came, when a receipt may be sent again).
    package static func unixMillis() -> EpochMillis { EpochMillis(Date().timeIntervalSince1970 * 1000) }
}
