import AppStore
import DequeModule
import Foundation
import HTTP
import HeapModule
import Reconciliation

/// The request loop: keeps `concurrency` requests in flight on one libcurl multi handle, applies
/// the retry policy to every answer, and hands a record of each to the writer. Generic over the
/// protocol (`AppStoreClient`): it never looks inside a request or an answer body. An App Store
/// that does not answer at all ends it early (`OutageBreaker`): exit 75 once the first wave of
/// requests failed in transport, or two waves in a row after it had answered.
///
/// Concurrency: runs on the thread that calls `run`, which owns the multi handle (`HTTPMulti` is
/// not `Sendable`) and every job in flight; it talks to the reader and the writer only through
/// their queues.
struct RequestLoop<Client: AppStoreClient> {
    let client: Client, policy: RetryPolicy
    /// Requests in flight at most, and the run the answers belong to.
    let concurrency: Int, runID: Int64
    let progress: Progress
    /// Server API only: requests per second per endpoint (`--api-rate`); empty: no budget.
    var rates: [ServerAPIEndpoint: Double] = [:]

    /// A job waiting for its backoff to pass; due on the monotonic clock.
    private struct Waiting: Comparable {
        var due: UInt64
        var sequence: Int
        var job: VerifyJob
        static func < (a: Waiting, b: Waiting) -> Bool { (a.due, a.sequence) < (b.due, b.sequence) }
        static func == (a: Waiting, b: Waiting) -> Bool { a.due == b.due && a.sequence == b.sequence }
    }

    func run(input: BlockingQueue<VerifyJob>, records: BlockingQueue<AnswerRecord>, counts: inout VerifyCounts) throws {
        let http = HTTPMulti()
        defer { http.close() }
        var inFlight: [Int: VerifyJob] = [:]
        var waiting = Heap<Waiting>()
        var nextTag = 0
        var stopping: JobError?
        var inputDone = false
        var rng = SystemRandomNumberGenerator()
        var breaker = OutageBreaker(wave: concurrency)
        /// Requests this loop sent (`counts` may carry an earlier loop's).
        var sentHere = 0
        var budget = RateBudget(rates: rates)
        // A job the budget did not admit yet (one at most: the loop stops pulling until it goes).
        var held: (job: VerifyJob, due: UInt64)?

        /// Sends `job` if the budget admits it now; else holds it. False when it was held.
        func sendIfAdmitted(_ job: VerifyJob, now: UInt64) throws -> Bool {
            if let key = client.rateKey(for: job), let due = budget.admit(key, now: now) {
                held = (job, due)
                return false
            }
            try send(job)
            return true
        }

        func send(_ job: VerifyJob) throws {
            var job = job
            job.sends += 1
            nextTag += 1
            try http.add(client.request(for: job, tag: nextTag))
            inFlight[nextTag] = job
            counts.requests += 1
            sentHere += 1
            breaker.sent(first: job.sends == 1)
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
                        if try !sendIfAdmitted(h.job, now: now) { break }
                    } else if let first = waiting.min, first.due <= now {
                        if try !sendIfAdmitted(waiting.removeMin().job, now: now) { break }
                    } else if !inputDone, let job = input.tryPop() {
                        if try !sendIfAdmitted(job, now: now) { break }
                    } else {
                        if !inputDone && input.isClosedAndEmpty { inputDone = true }
                        break
                    }
                }
            }
            if inFlight.isEmpty && held == nil {
                if stopping != nil || (inputDone && waiting.isEmpty) { break }
                if !inputDone && waiting.isEmpty && mayWiden() {
                    // Nothing to do until the reader delivers.
                    if let job = input.pop(timeoutMs: 200) {
                        _ = try sendIfAdmitted(job, now: Self.monotonicNanos())
                    } else if input.isClosedAndEmpty { inputDone = true }
                    continue
                }
            }
            if stopping != nil && inFlight.isEmpty { break }
            // A backoff or a budget that ends only matters when a request may go out then: with every
            // slot taken (or stopping) the loop waits for an answer, never polls in a busy circle.
            var untilDue = 100
            if stopping == nil && inFlight.count < concurrency {
                if let first = waiting.min { untilDue = min(untilDue, Int((first.due > now ? first.due - now : 0) / 1_000_000)) }
                if let h = held { untilDue = min(untilDue, Int((h.due > now ? h.due - now : 0) / 1_000_000)) }
            }
            // The records of one wake-up go to the writer together: one hand-off, not one per answer.
            var answered: [AnswerRecord] = []
            var sendError: Error?
            answers: for completion in http.poll(timeoutMs: untilDue) {
                guard var job = inFlight.removeValue(forKey: completion.tag) else { continue }
                let asked = job.environment
                // It counts against the budget for a window from its answer (RateBudget).
                if let key = client.rateKey(for: job) { budget.answered(key, now: Self.monotonicNanos()) }
                var httpStatus: Int?
                switch completion.outcome {
                case .response(let status, _):
                    httpStatus = status
                    breaker.answered()
                case .failure(_, let message, _):
                    breaker.failed(first: job.sends == 1, reason: message)
                }
                var answer = client.answer(to: completion.outcome, for: job)
                if let until = client.retryAfter(completion), let key = client.rateKey(for: job) {
                    // A 429: nothing more to this endpoint before the time Apple named.
                    budget.block(key, untilUnixMs: until, nowUnixMs: Self.unixMillis(), now: Self.monotonicNanos())
                    counts.rateLimited += 1
                }
                let decision = policy.decide(answer.answerClass, status: answer.status, state: &job.retry,
                                             now: Self.unixMillis(), jitter: Double.random(in: 0...1, using: &rng))
                if case .stop = decision {
                    counts.config += 1
                    if stopping == nil { stopping = Self.configurationError(answer) }
                    continue
                }
                if case .environmentsDisagree = decision {
                    answer.problem = Self.environmentsDisagree
                    job.startEnvironment = job.environment
                }
                let record = AnswerRecord(job: job, asked: asked, runID: runID, httpStatus: httpStatus, answer: answer,
                                          decision: decision, elapsedMs: completion.elapsedMs, now: Self.unixMillis())
                answered.append(record)
                switch decision {
                case .definitive, .rejectedAfterRepeated21002:
                    if answer.answerClass == .ok { counts.ok += 1 } else { counts.rejected += 1 }
                    progress.tick()
                case .switchEnvironment:
                    counts.switched += 1
                    job.environment = job.environment == .production ? .sandbox : .production
                    if stopping == nil {
                        if let key = client.rateKey(for: job), let due = budget.admit(key, now: Self.monotonicNanos()) {
                            waiting.insert(Waiting(due: due, sequence: nextTag, job: job))
                        } else {
                            // Recorded first: the answers of this wake-up are kept even if this throws.
                            do { try send(job) } catch { sendError = error; break answers }
                        }
                    }
                case .sendAgain(let afterMs):
                    counts.retried += 1
                    waiting.insert(Waiting(due: Self.monotonicNanos() + UInt64(afterMs) * 1_000_000,
                                           sequence: nextTag, job: job))
                case .leaveForNextRun, .environmentsDisagree:
                    counts.unresolved += 1
                    progress.tick()
                case .stop:
                    break
                }
                progress.note(retries: counts.retried)
            }
            guard records.push(contentsOf: answered) else {
                throw JobError(.failure, "recording App Store answers failed; verification stopped")
            }
            if let sendError { throw sendError }
            // The failures above are stored (a receipt whose request failed stays eligible: nothing
            // was believed); the requests still in flight are dropped with the multi handle.
            if stopping == nil {
                var verdict = breaker.verdict(moreFirstRequests: !inputDone || held != nil)
                // A whole wave went out and failed (retries among it), and no more may go: unreachable.
                if verdict == .goOn && !mayWiden() && inFlight.isEmpty { verdict = .unreachable }
                if verdict != .goOn { throw JobError(.temporary, breaker.message(verdict, service: Client.service)) }
            }
        }
        if let stopping { throw stopping }
        if sentHere > 0 && breaker.answers == 0 {
            throw JobError(.temporary, breaker.message(.unreachable, service: Client.service))
        }
    }

    /// `last_error` of a receipt production calls a sandbox receipt and the sandbox a production one.
    static var environmentsDisagree: String { "production says sandbox, sandbox says production" }

    static func configurationError(_ answer: Answer) -> JobError {
        // The Server API's 401 has no status: its problem says what to check.
        if answer.status == nil, let problem = answer.problem { return JobError(.configuration, problem) }
        return JobError(.configuration, "the App Store answered status \(answer.status ?? 0) ("
            + (answer.status == 21004 ? "the shared secret does not match: check IAP_SHARED_SECRET" : "our request was malformed")
            + "); verification stopped, no receipt was blamed")
    }

    /// Backoff deadlines: a clock that never jumps.
    static func monotonicNanos() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Wall time, for what is stored (when an answer came, when a receipt may be sent again).
    static func unixMillis() -> EpochMillis { EpochMillis(Date().timeIntervalSince1970 * 1000) }
}
