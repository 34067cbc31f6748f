import AppStore
import JobStore
import Reconciliation

/// What an answer (or a failure) does: it frees its slot and its budget place, is classified, may
/// doubt or refuse its credential, may hold its endpoint (a 429), and is read and settled by its
/// exchange under the retry policy, which may send the exchange's next request at once.
extension TransportMachine {
    /// The completion of the request tagged `completion.tag`, at `now` (monotonic) and `unixMs`
    /// (wall: what is stored, a `Retry-After`), with `jitter` in 0...1 for a backoff. Returns the
    /// exchange's next request when it goes now. Throws what the exchange throws on reading (its
    /// database failing) and a 429 that asks to wait longer than `longestRateLimitWaitMs`.
    package mutating func answered(
        _ completion: ExchangeCompletion, now: UInt64, unixMs: Int64, jitter: Double
    ) throws -> Send? {
        guard let (exchange, asked, sentAt) = inFlight.removeValue(forKey: completion.tag) else { return nil }
        let key = budgetKey(asked)
        // It counts against the budget for a window from its answer (RateBudget).
        if let key { budget.answered(key, now: now) }
        let reply = classify(completion, asked: asked, exchange: exchange, key: key, unixMs: unixMs)
        if let credential = credential(of: asked) {
            if case .unauthorized = reply {
                try unauthorized(
                    credential, exchange: exchange, asked: asked, sentAt: sentAt,
                    reply: reply, completion: completion, now: now)
                return nil
            }
            doubts.answered(credential, sentAt: sentAt)
            if credential == .teamKey, case .response(403, _) = completion.outcome { teamKeyRefused = true }
        }
        if case .rateLimited(let until) = reply {
            try rateLimited(until: until, key: key, asked: asked, now: now, unixMs: unixMs)
        }
        let answer = try exchange.read(reply)
        let decision = limits.policy.decide(
            answer.answerClass, status: answer.status, state: &exchange.retry, now: unixMs, jitter: jitter)
        let again = exchange.settled(answer, decision: decision, asked: asked, completion: completion)
        switch decision {
        case .stop:
            if stopping == nil { stopping = TransportLines.configurationError(answer) }
            return nil
        case .sendAgain(let afterMs):
            counts.retried += 1
            later(exchange, due: now + UInt64(afterMs) * 1_000_000)
            return nil
        case .definitive, .rejectedAfterRepeated21002, .switchEnvironment, .leaveForNextRun, .environmentsDisagree:
            guard again, stopping == nil else { return nil }
            return next(exchange, now: now)
        }
    }

    /// The reply `completion` carries; the breaker and the hourly allowance learn from it.
    private mutating func classify(
        _ completion: ExchangeCompletion, asked: AppStoreRequest, exchange: E, key: RateBudget.Key?, unixMs: Int64
    ) -> AppStoreReply {
        switch completion.outcome {
        case .response(let status, let body):
            breaker.answered()
            if let key, let header = completion.headers["X-Rate-Limit"], let allowance = HourlyAllowance.parse(header) {
                budget.report(allowance, for: key)
            }
            if asked.service.isGoogle {
                return PlayRows.reply(httpStatus: status, body: body, retryAfter: completion.headers["Retry-After"], nowMs: unixMs)
            }
            return AppStoreReply.classify(
                asked.service, httpStatus: status, body: body, retryAfter: completion.headers["Retry-After"])
        case .failure(let message, _):
            breaker.failed(first: exchange.sends == 1, reason: message)
            return .retry(message)
        }
    }

    /// What a refused credential costs: the team key's step is told and the run goes on; an app of
    /// several is dropped unasked (the others go on); the last app's refusal stops the run.
    enum Refusal {
        case tellExchange
        case dropUnasked
        case stopRun(JobError)
    }

    /// A 401 with `credential`, one path for every credential: the first is doubted (the token is
    /// signed afresh, the request asked again a second later); one to a request sent after the doubt
    /// began is believed, and the credential refused.
    private mutating func unauthorized(
        _ credential: Credential, exchange: E, asked: AppStoreRequest, sentAt: UInt64,
        reply: AppStoreReply, completion: ExchangeCompletion, now: UInt64
    ) throws {
        if case .askAgain(let due, let firstDoubt) = doubts.unauthorized(credential, sentAt: sentAt, now: now) {
            if firstDoubt { renew.insert(credential) }
            counts.retried += 1
            later(exchange, due: due)
            return
        }
        let decision: RetryPolicy.Decision
        switch refuse(credential) {
        case .dropUnasked:
            dropUnasked(credential)
            return
        case .tellExchange:
            decision = .definitive
        case .stopRun(let error):
            decision = .stop
            if stopping == nil { stopping = error }
        }
        let answer = try exchange.read(reply)
        _ = exchange.settled(answer, decision: decision, asked: asked, completion: completion)
    }

    /// `credential` is refused, confirmed: what that costs.
    private mutating func refuse(_ credential: Credential) -> Refusal {
        switch credential {
        case .teamKey:
            // The exit code is not the team key's to change: only the step that asked ends.
            teamKeyRefused = true
            return .tellExchange
        case .app(let app):
            // With other apps still answering, only this app stops.
            if let apps, !apps.refuse(app) { return .dropUnasked }
            return .stopRun(JobError(.configuration, TransportLines.unauthorized(apps: apps?.apps ?? [app])))
        case .playAccount:
            // Play is skipped for the run; the exit code is the night's to decide (78 only when every
            // store and app is refused).
            counts.playRefusal =
                counts.playRefusal ?? "Google refused the service account (HTTP 401 or 403, again with a fresh token a second later)"
            return .dropUnasked
        case .playPackage(let package):
            // This package only: the account may lack access to one app of several.
            counts.playRefusedPackages.insert(package)
            return .dropUnasked
        }
    }

    /// A 429: nothing more to the endpoint before the time Apple named (none believable: the
    /// backoff alone); a wait longer than the run may take ends it.
    private mutating func rateLimited(
        until: Int64?, key: RateBudget.Key?, asked: AppStoreRequest, now: UInt64, unixMs: Int64
    ) throws {
        counts.rateLimited += 1
        if let longest = limits.longestRateLimitWaitMs, let until, until - unixMs > longest {
            throw JobError(
                .temporary,
                "the App Store asks to wait \((until - unixMs) / 1000) s (rate limit of \(asked.name)); run again later")
        }
        if let key, let until = TransportLines.believable(retryAfter: until, nowMs: unixMs) {
            budget.block(key, untilUnixMs: until, nowUnixMs: unixMs, now: now)
        }
    }

    /// The exchange's next request (the next page, the other environment): now if nothing holds it.
    private mutating func next(_ exchange: E, now: UInt64) -> Send? {
        let request = exchange.request
        if let credential = credential(of: request), isRefused(credential) || doubts.isDoubted(credential) {
            // Through the refusal and the second's wait.
            later(exchange, due: now)
            return nil
        }
        if let key = budgetKey(request), let due = budget.admit(key, now: now) {
            later(exchange, due: due)
            return nil
        }
        return send(exchange, request)
    }
}
