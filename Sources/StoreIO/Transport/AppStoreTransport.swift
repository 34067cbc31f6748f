import AppStore
import Foundation
import HTTP
import JobStore
import Reconciliation
import TransportCore

/// The one way the job talks to Apple: the thin driver of a `TransportMachine` (which decides what
/// goes when: budgets, `Retry-After`, retries, 401 doubts, the outage breaker, exit 78 and 75) over
/// one libcurl multi handle. It reads the clocks, draws the jitter, signs a bearer token per key
/// and app (`RequestSigner`) and turns each `Send` into a call and each call's end into an event.
///
/// Concurrency: `run` keeps its multi handle, machine, tokens and every exchange in flight on the
/// thread that calls it (`HTTPMulti` is not `Sendable`); exchanges talk to other threads only
/// through their queues.
package struct AppStoreTransport {
    /// verifyReceipt's URLs (whole, with `/verifyReceipt`).
    var verifyReceiptURL: (production: String, sandbox: String) = ("", "")
    /// The Server API (and its In-App Purchase key).
    package var serverAPI: ServerAPISettings?
    /// App Store Connect (and its team key): the sales reports.
    package var connect: AppStoreConnectSettings?
    /// Google Play (its service account): the Play Developer API.
    package var play: PlaySettings?
    let policy: RetryPolicy
    /// Requests in flight at most.
    package let concurrency: Int
    let timeoutMs: Int
    /// What the exit-75 line calls the other end when it does not answer.
    let service: String
    /// Requests per second per endpoint (`--api-rate`); missing: 90% of Apple's.
    package var rates: [ServerAPIEndpoint: Double] = [:]
    /// Requests per second per budget name (`--play-rate`).
    package var namedRates: [String: Double] = [:]
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
        play = settings.play
        rates = settings.serverAPI?.rates ?? [:]
        namedRates = settings.playRates
        apps = settings.nightApps
    }

    init(policy: RetryPolicy, concurrency: Int, timeoutMs: Int, service: String) {
        self.policy = policy
        self.concurrency = max(1, concurrency)
        self.timeoutMs = timeoutMs
        self.service = service
    }

    /// Runs the feed's exchanges to their end: `TransportMachine` decides, this drives it (libcurl
    /// calls, the clocks, the jitter, the tokens). `breaker` spans the run (or several: `lookup`'s);
    /// `recorded` is called after each wake-up's answers were settled (one hand-off of their
    /// records, not one per answer).
    package func run<Feed: ExchangeFeed>(
        _ feed: inout Feed, breaker: inout OutageBreaker, counts: inout TransportCounts,
        recorded: () throws -> Void = {}
    ) throws {
        let http = HTTPMulti()
        defer { http.close() }
        var machine = TransportMachine<Feed.Exchange>(
            limits: limits, service: service, apps: apps, breaker: breaker, counts: counts)
        defer { (breaker, counts) = (machine.breaker, machine.counts) }
        var signer = RequestSigner(transport: self)
        var rng = SystemRandomNumberGenerator()

        func send(_ request: TransportMachine<Feed.Exchange>.Send) throws {
            do {
                try http.add(signer.httpRequest(request))
            } catch let unavailable as GoogleTokens.Unavailable {
                // No token from Google: Play is skipped for the run, as for a confirmed refusal.
                machine.credentialUnavailable(
                    request, reason: unavailable.description, outage: !unavailable.refused, now: Self.monotonicNanos())
                return
            } catch {
                machine.unsent(request, now: Self.monotonicNanos())
                throw error
            }
            machine.sent(request, now: Self.monotonicNanos())
        }
        func fill(_ first: TransportMachine<Feed.Exchange>.Fill, now: UInt64) throws {
            var step = first
            while true {
                switch step {
                case .send(let request):
                    try send(request)
                    step = machine.fill(now: now)
                case .pull:
                    guard let exchange = feed.next() else { return machine.feedEmpty(finished: feed.finished) }
                    step = machine.fed(exchange, now: now)
                case .idle:
                    return
                }
            }
        }

        while true {
            let now = Self.monotonicNanos()
            try fill(machine.fill(now: now), now: now)
            switch machine.wait(now: now) {
            case .finished:
                return try machine.finish()
            case .pull(let timeoutMs):
                if let exchange = feed.next(timeoutMs: timeoutMs) {
                    let now = Self.monotonicNanos()
                    try fill(machine.fed(exchange, now: now), now: now)
                } else {
                    machine.feedEmpty(finished: feed.finished)
                }
            case .poll(let timeoutMs):
                var sendError: Error?
                for completion in http.poll(timeoutMs: timeoutMs) {
                    guard
                        let next = try machine.answered(
                            ExchangeCompletion(completion), now: Self.monotonicNanos(), unixMs: Self.unixMillis(),
                            jitter: Double.random(in: 0...1, using: &rng))
                    else { continue }
                    // Settled first: the answers of this wake-up are kept even if this throws.
                    do { try send(next) } catch {
                        sendError = error
                        break
                    }
                }
                try recorded()
                if let sendError { throw sendError }
                // The answers above are settled (a receipt whose request failed stays eligible:
                // nothing was believed); the requests still in flight are dropped with the multi handle.
                if let outage = machine.outage() { throw outage }
            }
        }
    }

    /// What the state machine is held to in this run.
    var limits: TransportLimits {
        var limits = TransportLimits(concurrency: concurrency, policy: policy)
        limits.rates = rates
        limits.namedRates = namedRates
        limits.share = share
        limits.hourlyPauseNs = hourlyPauseNs
        limits.stopSendingAtNs = stopSendingAtNs
        limits.longestRateLimitWaitMs = longestRateLimitWaitMs
        limits.defaultApp = serverAPI?.jwt.bundleID
        return limits
    }

    /// Backoff deadlines: a clock that never jumps.
    package static func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Wall time, for what is stored (when an answer came, when a receipt may be sent again).
    package static func unixMillis() -> EpochMillis { EpochMillis(Date().timeIntervalSince1970 * 1000) }
}
