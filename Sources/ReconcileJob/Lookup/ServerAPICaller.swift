import AppStore
import Foundation
import HTTP
import Reconciliation

/// One Server API request at a time, for `lookup`: a fresh token per request, the retry classes
/// of contract §3b (back off and retry; a 429 waits until its `Retry-After`), 401 → exit 78,
/// unreachable after the attempts → exit 75. One request at a time is a first wave of one: when
/// the first request fails in transport, with no HTTP answer, the host is unreachable (exit 75 at
/// once, `OutageBreaker`).
///
/// Concurrency: owns its `HTTPMulti` inside `get`, on the calling thread.
struct ServerAPICaller {
    let api: ServerAPISettings
    let timeoutMs: Int
    let attempts: Int
    let policy: RetryPolicy
    /// The longest a 429 may make `lookup` wait before it gives up (exit 75).
    static let maxWaitMs: Int64 = 60_000
    /// Over every request of the lookup (production, then the sandbox).
    private var breaker = OutageBreaker(wave: 1)

    init(api: ServerAPISettings, settings: JobSettings) {
        self.api = api
        timeoutMs = settings.timeoutMs
        attempts = max(1, settings.maxAttempts)
        policy = RetryPolicy(maxAttempts: max(1, settings.maxAttempts), retryBaseMs: settings.retryBaseMs,
                             retryDelayMinutes: settings.retryDelayMinutes)
    }

    /// The body of a 200, or nil for 4040010 (Apple knows no such transaction there).
    mutating func get(_ endpoint: ServerAPIEndpoint, _ path: String, in environment: AppStoreEnvironment) throws -> [UInt8]? {
        let http = HTTPMulti()
        defer { http.close() }
        var lastProblem = ""
        var attempt = 0
        while attempt < attempts {
            attempt += 1
            let now = Int64(Date().timeIntervalSince1970)
            let first = breaker.firstRequests == 0
            breaker.sent(first: first)
            try http.add(HTTPRequest(tag: attempt, method: .get, url: api.baseURL(environment) + path,
                                     headers: ["Authorization: Bearer " + api.jwt.token(now: now)],
                                     timeoutMs: timeoutMs, wantedHeaders: ["Retry-After"]))
            var completion: HTTPCompletion?
            while completion == nil { completion = http.poll(timeoutMs: 100).first }
            switch completion!.outcome {
            case .failure(_, let message, _):
                lastProblem = message
                breaker.failed(first: first, reason: message)
                let verdict = breaker.verdict(moreFirstRequests: false)
                if verdict != .goOn { throw JobError(.temporary, breaker.message(verdict, service: ServerAPIClient.service)) }
            case .response(let status, let body):
                breaker.answered()
                switch ServerAPI.classify(httpStatus: status, body: body, retryAfter: completion!.headers["Retry-After"]) {
                case .ok(let body):
                    return body
                case .transactionNotFound:
                    return nil
                case .unauthorized:
                    throw JobError(.configuration, ServerAPIClient.unauthorized)
                case .refused(_, let problem):
                    throw JobError(.usage, "the App Store refused the request (\(problem)): check the id")
                case .rateLimited(let until):
                    lastProblem = "HTTP 429 (rate limited)"
                    let wait = (until ?? 0) - Int64(Date().timeIntervalSince1970 * 1000)
                    if wait > Self.maxWaitMs {
                        throw JobError(.temporary, "the App Store asks to wait \(wait / 1000) s (rate limit of \(endpoint.rawValue)); run again later")
                    }
                    if wait > 0 { Thread.sleep(forTimeInterval: Double(wait) / 1000) }
                    continue
                case .retry(let problem):
                    lastProblem = problem
                }
            }
            if attempt < attempts {
                let ms = policy.backoffMs(afterAttempt: attempt, jitter: Double.random(in: 0...1))
                Thread.sleep(forTimeInterval: Double(ms) / 1000)
            }
        }
        throw JobError(.temporary, "the App Store Server API is unreachable (\(lastProblem)) after \(attempts) attempts; run again later")
    }
}
