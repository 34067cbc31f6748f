import AppStore
import DequeModule
import Foundation
import HTTP
import HeapModule
import Reconciliation

/// One paged conversation with the App Store Server API: a notification history sweep, or one
/// customer's transaction history. The pager sends its requests; the conversation reads each
/// page, verifies and stores what it holds, and says whether there is a next one.
protocol Conversation: AnyObject {
    var rateKey: RateBudget.Key { get }
    /// The request for the next page.
    func request(tag: Int, token: String) -> HTTPRequest
    /// A 200's body. Throws `ServerAPIGarbage` for a body that is not what Apple sends (retried
    /// like a timeout); returns true when this was the last page.
    func page(_ body: [UInt8]) throws -> Bool
    /// Apple will not answer this conversation (a refused request, or retries used up): what was
    /// stored stays, the position does not advance.
    func abandon(_ problem: String)
}

/// Runs conversations concurrently on one libcurl multi handle, within the job's rate budget per
/// endpoint, each conversation one page at a time (a page's token or revision comes from the page
/// before). Retries with full-jitter backoff; a 429 holds the endpoint until its Retry-After; a
/// 401 stops everything (exit 78); a host that does not answer at all stops it too (exit 75, see
/// `OutageBreaker`). Runs on the calling thread, which owns the handle and the conversations'
/// database connection.
struct Pager {
    let concurrency: Int
    let policy: RetryPolicy
    var rates: [ServerAPIEndpoint: Double]
    let jwt: AppStoreJWT

    struct Counts: Sendable, Equatable {
        var requests: [String: Int] = [:]
        var rateLimited = 0
        var retried = 0
        var abandoned = 0
    }

    private struct Waiting: Comparable {
        var due: UInt64
        var sequence: Int
        var index: Int
        static func < (a: Waiting, b: Waiting) -> Bool { (a.due, a.sequence) < (b.due, b.sequence) }
        static func == (a: Waiting, b: Waiting) -> Bool { a.due == b.due && a.sequence == b.sequence }
    }

    func run(_ conversations: [Conversation], progress: Progress, counts: inout Counts) throws {
        guard !conversations.isEmpty else { return }
        let http = HTTPMulti()
        defer { http.close() }
        var budget = RateBudget(rates: rates)
        var ready = Deque(conversations.indices)
        var waiting = Heap<Waiting>()
        /// Requests in flight: the conversation, and whether this is the first request it sent.
        var inFlight: [Int: (index: Int, first: Bool)] = [:]
        var attempts = [Int](repeating: 0, count: conversations.count)
        var tag = 0
        var rng = SystemRandomNumberGenerator()
        var breaker = OutageBreaker(wave: concurrency)
        // Conversations that sent their first request: the others are still to come.
        var started = [Bool](repeating: false, count: conversations.count)
        var startedCount = 0

        func retry(_ i: Int, problem: String) {
            attempts[i] += 1
            guard attempts[i] < policy.maxAttempts else {
                counts.abandoned += 1
                conversations[i].abandon(problem + " (after \(attempts[i]) attempts)")
                progress.tick()
                return
            }
            counts.retried += 1
            let wait = policy.backoffMs(afterAttempt: attempts[i], jitter: Double.random(in: 0...1, using: &rng))
            tag += 1
            waiting.insert(Waiting(due: RequestLoop<VerifyReceiptClient>.monotonicNanos() + UInt64(wait) * 1_000_000,
                                   sequence: tag, index: i))
        }

        while !ready.isEmpty || !waiting.isEmpty || !inFlight.isEmpty {
            let now = RequestLoop<VerifyReceiptClient>.monotonicNanos()
            while let first = waiting.min, first.due <= now { ready.append(waiting.removeMin().index) }
            var deferred: [Int] = []
            while inFlight.count < concurrency, let i = ready.popFirst() {
                let c = conversations[i]
                if let due = budget.admit(c.rateKey, now: now) {
                    tag += 1
                    waiting.insert(Waiting(due: due, sequence: tag, index: i))
                    continue
                }
                tag += 1
                let token = jwt.token(now: Int64(Date().timeIntervalSince1970))
                do {
                    try http.add(c.request(tag: tag, token: token))
                } catch {
                    budget.answered(c.rateKey, now: now)  // admitted, never sent: counted for a window anyway
                    deferred.append(i)
                    break
                }
                inFlight[tag] = (i, !started[i])
                counts.requests[c.rateKey.endpoint.rawValue, default: 0] += 1
                breaker.sent(first: !started[i])
                if !started[i] { started[i] = true; startedCount += 1 }
            }
            for i in deferred { ready.append(i) }
            if inFlight.isEmpty {
                if let first = waiting.min {
                    let ns = first.due > now ? first.due - now : 0
                    usleep(UInt32(min(100_000, ns / 1000 + 1)))
                }
                continue
            }
            var untilDue = 100
            if let first = waiting.min { untilDue = min(untilDue, Int((first.due > now ? first.due - now : 0) / 1_000_000)) }
            for completion in http.poll(timeoutMs: max(1, untilDue)) {
                guard let (i, first) = inFlight.removeValue(forKey: completion.tag) else { continue }
                let c = conversations[i]
                // It counts against the budget for a window from its answer (RateBudget).
                budget.answered(c.rateKey, now: RequestLoop<VerifyReceiptClient>.monotonicNanos())
                switch completion.outcome {
                case .failure(_, let message, _):
                    breaker.failed(first: first, reason: message)
                    retry(i, problem: message)
                case .response(let status, let body):
                    breaker.answered()
                    switch ServerAPI.classify(httpStatus: status, body: body, retryAfter: completion.headers["Retry-After"]) {
                    case .ok(let body):
                        do {
                            if try c.page(body) {
                                progress.tick()
                            } else {
                                attempts[i] = 0
                                ready.append(i)
                            }
                        } catch let garbage as ServerAPIGarbage {
                            retry(i, problem: "\(c.rateKey.endpoint.rawValue): \(garbage.problem)")
                        }
                    case .unauthorized:
                        throw JobError(.configuration, ServerAPIClient.unauthorized)
                    case .rateLimited(let until):
                        counts.rateLimited += 1
                        if let until {
                            budget.block(c.rateKey, untilUnixMs: until, nowUnixMs: RequestLoop<VerifyReceiptClient>.unixMillis(),
                                         now: RequestLoop<VerifyReceiptClient>.monotonicNanos())
                        }
                        retry(i, problem: "HTTP 429, rate limited")
                    case .retry(let problem):
                        retry(i, problem: problem)
                    case .transactionNotFound:
                        counts.abandoned += 1
                        c.abandon("Apple knows no such transaction (4040010)")
                        progress.tick()
                    case .refused(_, let problem):
                        counts.abandoned += 1
                        c.abandon(problem)
                        progress.tick()
                    }
                }
            }
            // Conversations in flight are dropped with the multi handle; none advanced its position.
            let verdict = breaker.verdict(moreFirstRequests: startedCount < conversations.count)
            if verdict != .goOn { throw JobError(.temporary, breaker.message(verdict, service: ServerAPIClient.service)) }
        }
        if counts.requests.values.reduce(0, +) > 0 && breaker.answers == 0 {
            throw JobError(.temporary, breaker.message(.unreachable, service: ServerAPIClient.service))
        }
    }
}
