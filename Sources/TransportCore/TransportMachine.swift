import AppStore
import HeapModule
import JobStore
import Reconciliation

/// What the transport decides, without a socket or a clock: which exchange's request goes now,
/// which waits (a backoff, the rate budget, a 401's doubt), what an answer means, and when the run
/// stops (an answer that is ours to fix: exit 78; a host that does not answer: exit 75). It takes
/// events (an exchange fed, a request sent, an answer or failure for a tag, the time) and returns
/// what to do (send, pull the feed, wait for answers, finish); `AppStoreTransport` is the thin driver
/// that turns those into libcurl calls. The clock and the jitter come in with each event.
///
/// The exchanges are told every answer here (`read`, `settled`): they are the run's work, not its
/// I/O. The driver hands their records off once a wake-up's answers are settled.
package struct TransportMachine<E: AppStoreExchange> {
    /// A request to send now, on the slot `tag`.
    package struct Send {
        /// What its completion is tagged with.
        package let tag: Int
        /// The request (its URL, method, body, credential and headers follow from it).
        package let request: AppStoreRequest
        /// The credential that signs its token, if any.
        package let credential: Credential?
        /// Sign its token afresh: a 401 made the one in use doubtful.
        package let renewToken: Bool
        let exchange: E
    }

    /// What the driver does to fill the free slots.
    package enum Fill {
        /// Send this request (then tell `sent` or `unsent`, then `fill` again).
        case send(Send)
        /// Offer the feed's next ready exchange (`fed`), or say it had none (`feedEmpty`).
        case pull
        /// Nothing more goes out now.
        case idle
    }

    /// What the driver does once the slots are filled.
    package enum Wait: Equatable {
        /// The run is over: `finish`.
        case finished
        /// Nothing is in flight or due: wait up to this long for the feed's next exchange.
        case pull(timeoutMs: Int)
        /// Wait up to this long for answers (`answered`, then `outage`).
        case poll(timeoutMs: Int)
    }

    let limits: TransportLimits
    /// What the exit-75 line calls the other end when it does not answer.
    let service: String
    /// The night's apps (nil: `lookup`, `respond`: a confirmed 401 stops the run).
    let apps: NightApps?
    /// Spans the run (or several: `lookup`'s); the driver hands it back.
    package internal(set) var breaker: OutageBreaker
    /// What this run did; the driver hands it back.
    package internal(set) var counts: TransportCounts

    var budget: RateBudget
    var doubts = UnauthorizedDoubts()
    /// Credentials whose next token is signed afresh (a 401's doubt began).
    var renew: Set<Credential> = []
    /// App Store Connect refused the team key (confirmed 401, or a 403): nothing more goes to it
    /// in this run, and the run goes on; only the step that asked ends.
    var teamKeyRefused = false
    /// Google refused the Play service account (confirmed 401 or 403, or its token endpoint): the
    /// run's Play requests are dropped unasked (asked again next night), Apple's go on.
    package var playRefused: Bool { counts.playRefusal != nil }
    var inFlight: [Int: (exchange: E, request: AppStoreRequest, sentAt: UInt64)] = [:]
    var waiting = Heap<Waiting>()
    /// An exchange the budget did not admit yet (one at most: the run stops pulling until it goes).
    var held: (exchange: E, due: UInt64)?
    var nextTag = 0
    var stopping: JobError?
    var feedDone = false
    /// Requests this run sent (the breaker may carry an earlier run's).
    var sentHere = 0

    /// A request made to wait (backoff, budget, doubt): due on the monotonic clock.
    struct Waiting: Comparable {
        var due: UInt64
        var sequence: Int
        var exchange: E
        static func < (a: Waiting, b: Waiting) -> Bool { (a.due, a.sequence) < (b.due, b.sequence) }
        static func == (a: Waiting, b: Waiting) -> Bool { a.due == b.due && a.sequence == b.sequence }
    }

    /// A run under `limits`; `breaker` and `counts` carry what came before it.
    package init(
        limits: TransportLimits, service: String, apps: NightApps?,
        breaker: OutageBreaker, counts: TransportCounts = TransportCounts()
    ) {
        self.limits = limits
        self.service = service
        self.apps = apps
        self.breaker = breaker
        self.counts = counts
        budget = RateBudget(rates: limits.rates, named: limits.namedRates, share: limits.share)
        budget.hourlyPause = limits.hourlyPauseNs
    }

    // MARK: Filling the slots

    /// Until the host has answered once, one wave of requests at most goes out: each failure of the
    /// first wave would otherwise free a slot for one more request to a host that may be gone (up to
    /// twice the wave when the failures come one by one, as a slow resolver makes them), before the
    /// breaker has seen the whole wave fail.
    var mayWiden: Bool { breaker.answers > 0 || sentHere < limits.concurrency }

    /// The next thing to do for the free slots at `now`: a held or waiting exchange that is due,
    /// else the feed's next.
    package mutating func fill(now: UInt64) -> Fill {
        while stopping == nil && inFlight.count < limits.concurrency && mayWiden {
            let next: E
            if let h = held {
                guard h.due <= now else { return .idle }
                held = nil
                next = h.exchange
            } else if let first = waiting.min, first.due <= now {
                next = waiting.removeMin().exchange
            } else {
                return feedDone ? .idle : .pull
            }
            if let fill = admit(next, now: now) { return fill }
        }
        return .idle
    }

    /// The feed's next exchange, after `.pull`.
    package mutating func fed(_ exchange: E, now: UInt64) -> Fill {
        if let fill = admit(exchange, now: now) { return fill }
        return fill(now: now)
    }

    /// The feed had no exchange ready; `finished`: none will come any more.
    package mutating func feedEmpty(finished: Bool) {
        if finished { feedDone = true }
    }

    /// `.send` when `exchange`'s request may go now, `.idle` when the budget holds it; nil when it
    /// was dropped or made to wait (the caller goes on filling).
    private mutating func admit(_ exchange: E, now: UInt64) -> Fill? {
        if let end = limits.stopSendingAtNs, now >= end { return nil }
        let request = exchange.request
        if let credential = credential(of: request) {
            if isRefused(credential) {
                dropUnasked(credential)
                return nil
            }
            if let due = doubts.heldUntil(credential, now: now) {
                later(exchange, due: due)
                return nil
            }
        }
        if let key = budgetKey(request), let due = budget.admit(key, now: now) {
            held = (exchange, due)
            return .idle
        }
        return .send(send(exchange, request))
    }

    /// `request` of `exchange` on a new tag (the budget, if any, admitted it).
    mutating func send(_ exchange: E, _ request: AppStoreRequest) -> Send {
        nextTag += 1
        let credential = credential(of: request)
        let renewToken = credential.map { renew.remove($0) != nil } ?? false
        return Send(tag: nextTag, request: request, credential: credential, renewToken: renewToken, exchange: exchange)
    }

    /// `send` went out at `now` (the monotonic time its answer's doubt is measured from).
    package mutating func sent(_ send: Send, now: UInt64) {
        send.exchange.sends += 1
        inFlight[send.tag] = (send.exchange, send.request, now)
        counts.requests[send.request.name, default: 0] += 1
        if case .app(let app)? = send.credential { apps?.sent(app: app, endpoint: send.request.name) }
        sentHere += 1
        breaker.sent(first: send.exchange.sends == 1)
    }

    /// `send`'s credential gave no token (Google's token endpoint refused the service account, or
    /// `outage`: did not answer): the credential is refused for the run, as after a confirmed 401,
    /// and its exchanges (this one too) are dropped unasked. `reason` is kept for the night's line.
    package mutating func credentialUnavailable(_ send: Send, reason: String, outage: Bool, now: UInt64) {
        unsent(send, now: now)
        guard let credential = send.credential else { return }
        if credential.isPlay, counts.playRefusal == nil { (counts.playRefusal, counts.playOutage) = (reason, outage) }
        dropUnasked(credential)
    }

    /// `send` could not be made (the run ends with the driver's error): admitted, never sent, it is
    /// counted for a window anyway.
    package mutating func unsent(_ send: Send, now: UInt64) {
        if let key = budgetKey(send.request) { budget.answered(key, now: now) }
    }

    /// Due at `due`: through the doubts and the budget when it is due.
    mutating func later(_ exchange: E, due: UInt64) {
        nextTag += 1
        waiting.insert(Waiting(due: due, sequence: nextTag, exchange: exchange))
    }

    // MARK: Waiting

    /// What to do once the slots are filled at `now`. A backoff or a budget that ends only matters
    /// when a request may go out then: with every slot taken (or stopping) the run waits for an
    /// answer, never polls in a busy circle.
    package func wait(now: UInt64) -> Wait {
        if inFlight.isEmpty && held == nil {
            if stopping != nil || (feedDone && waiting.isEmpty) { return .finished }
            // Nothing to do until the feed delivers.
            if !feedDone && waiting.isEmpty && mayWiden { return .pull(timeoutMs: 200) }
        }
        if stopping != nil && inFlight.isEmpty { return .finished }
        var untilDue = 100
        func ms(_ due: UInt64) -> Int { Int((due > now ? due - now : 0) / 1_000_000) }
        if stopping == nil && inFlight.count < limits.concurrency {
            if let first = waiting.min { untilDue = min(untilDue, ms(first.due)) }
            if let h = held { untilDue = min(untilDue, ms(h.due)) }
        }
        return .poll(timeoutMs: untilDue)
    }

    /// After a wake-up's answers were settled: the error that ends the run when the host looks gone
    /// (exit 75), else nil.
    package func outage() -> JobError? {
        guard stopping == nil else { return nil }
        var verdict = breaker.verdict(moreFirstRequests: !feedDone || held != nil)
        // A whole wave went out and failed (retries among it), and no more may go: unreachable.
        if verdict == .goOn && !mayWiden && inFlight.isEmpty { verdict = .unreachable }
        return verdict == .goOn ? nil : JobError(.temporary, breaker.message(verdict, service: service), unreachableStore: service)
    }

    /// After `.finished`: the error the run ends with (an answer ours to fix, a host that never
    /// answered), if any.
    package func finish() throws {
        if let stopping { throw stopping }
        if sentHere > 0 && breaker.answers == 0 {
            throw JobError(.temporary, breaker.message(.unreachable, service: service), unreachableStore: service)
        }
    }

    // MARK: Credentials and budgets

    /// The app a Server API request is for (its token's `bid`); nil for other services.
    func app(of request: AppStoreRequest) -> String? {
        guard request.service == .serverAPI else { return nil }
        return request.bundleID ?? limits.defaultApp
    }

    /// What signs `request`'s token, if anything.
    func credential(of request: AppStoreRequest) -> Credential? {
        switch request.service {
        case .verifyReceipt: return nil
        case .serverAPI: return app(of: request).map(Credential.app)
        case .connect: return .teamKey
        case .googlePlay: return request.bundleID.map(Credential.playPackage) ?? .playAccount
        case .googlePubSub: return .playAccount
        }
    }

    func budgetKey(_ request: AppStoreRequest) -> RateBudget.Key? {
        request.budget.map { budget in
            // Google counts its buckets per project (one service account), the voided list per package.
            let app = request.service.isGoogle ? (PlayRows.isPerPackage(budget) ? request.bundleID : nil) : app(of: request)
            return RateBudget.Key(budget: budget, environment: request.environment, app: app)
        }
    }

    func isRefused(_ credential: Credential) -> Bool {
        switch credential {
        case .teamKey: return teamKeyRefused
        case .app(let app): return apps?.isRefused(app) == true
        case .playAccount: return playRefused
        case .playPackage(let package): return playRefused || counts.playRefusedPackages.contains(package)
        }
    }

    /// An exchange of a refused app is dropped unasked, as a stopping run drops those in flight:
    /// nothing is recorded of it, so it is asked again by the next night and blamed for nothing.
    mutating func dropUnasked(_ credential: Credential) {
        if case .app(let app) = credential { apps?.dropped(app: app) }
        if credential.isPlay { counts.playDropped += 1 }
    }
}

/// What a transport run is held to: its slots, its retry policy, its budgets, its end.
package struct TransportLimits: Sendable {
    /// Requests in flight at most.
    package var concurrency: Int
    /// The backoff and attempts of every answer.
    package var policy: RetryPolicy
    /// Requests per second per endpoint (`--api-rate`); missing: a `share` of Apple's.
    package var rates: [ServerAPIEndpoint: Double] = [:]
    /// Requests per second per budget name (`--play-rate`: Google Play's buckets).
    package var namedRates: [String: Double] = [:]
    /// The share of Apple's limits used where `rates` does not say (`RateBudget.share`).
    package var share = RateBudget.safety
    /// How long an App Store Connect endpoint whose hourly allowance ran low waits.
    package var hourlyPauseNs = RateBudget.hourlyPauseNs
    /// No request goes at or after this monotonic time: an exchange due later is dropped
    /// unasked (the answers in flight are still read). nil: no end.
    package var stopSendingAtNs: UInt64?
    /// A 429 asking to wait longer than this ends the run (exit 75) instead (nil: any wait).
    package var longestRateLimitWaitMs: Int64?
    /// The app of a Server API request that names none (the one key's `bid`).
    package var defaultApp: String?

    /// `concurrency` slots (at least one) under `policy`; everything else as the night's.
    package init(concurrency: Int, policy: RetryPolicy) {
        self.concurrency = max(1, concurrency)
        self.policy = policy
    }
}
