import AppStore
import HTTP
import JobStore
import Reconciliation
import TransportCore

/// `lookup`'s requests, one at a time, through the App Store transport: the retry classes of
/// contract §3b (back off and retry; a 429 waits until its `Retry-After`, at most a minute),
/// 401 → exit 78, unreachable after the attempts → exit 75. One request at a time is a first wave
/// of one: when the first request fails in transport, with no HTTP answer, the host is
/// unreachable (exit 75 at once, `OutageBreaker`).
///
/// Concurrency: each `get` runs the transport on the calling thread.
package struct ServerAPICaller {
    let transport: AppStoreTransport
    /// The longest a 429 may make `lookup` wait before it gives up (exit 75).
    static let maxWaitMs: Int64 = 60_000
    /// Over every request of the lookup (production, then the sandbox).
    private var breaker = OutageBreaker(wave: 1)

    /// One request at a time with the Server API key `api` and the transport `settings`.
    package init(api: ServerAPISettings, settings: TransportSettings) {
        var transport = AppStoreTransport(settings: settings, service: "the App Store Server API", concurrency: 1)
        transport.serverAPI = api
        transport.rates = api.rates
        transport.longestRateLimitWaitMs = Self.maxWaitMs
        self.transport = transport
    }

    /// What `endpoint`'s reader makes of a 200, or nil for 4040010 (Apple knows no such
    /// transaction there). `what` names the endpoint in the line of a body that is not Apple's.
    package mutating func get<Value>(
        _ endpoint: AppStoreEndpoint<Value>, _ what: String, id: String,
        in environment: AppStoreEnvironment, app: String? = nil
    ) throws -> Value? {
        let asking = Asking(endpoint.request(in: environment, id: id, bundleID: app))
        var feed = ListFeed([asking])
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        switch asking.outcome {
        case .body(let body):
            do { return try endpoint.reader(body) } catch {
                throw JobError(.temporary, "\(what) answered something that is not Apple's answer (\(error)); try again later")
            }
        case .notFound:
            return nil
        case .refused(let problem):
            throw JobError(.usage, "the App Store refused the request (\(problem)): check the id")
        case .gaveUp(let problem):
            throw JobError(
                .temporary,
                "the App Store Server API is unreachable (\(problem)) after \(transport.policy.maxAttempts) "
                    + "attempts; run again later")
        }
    }
}

/// The one request of a `get`, and what became of it.
private final class Asking: AppStoreExchange {
    enum Outcome { case body([UInt8]), notFound, refused(String), gaveUp(String) }
    let request: AppStoreRequest
    var retry = RetryPolicy.State()
    var sends = 0
    var outcome = Outcome.gaveUp("no answer")

    init(_ request: AppStoreRequest) { self.request = request }

    func read(_ reply: AppStoreReply) -> Answer {
        switch reply {
        case .answer(_, let body):
            // Read by the caller after the run: a body that is not Apple's is reported, not retried.
            outcome = .body(body)
        case .notFound:
            outcome = .notFound
        case .refused(let problem, _):
            outcome = .refused(problem)
        case .unauthorized, .rateLimited, .retry:
            break
        }
        return AppStoreTransport.answer(reply)
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        if case .leaveForNextRun = decision { outcome = .gaveUp(answer.problem ?? "no answer") }
        return false
    }
}
