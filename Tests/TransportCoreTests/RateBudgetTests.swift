// The job's own rate budget for the Server API (contract §3b), on a fake monotonic clock: no
// network, no sleeping.

import Testing

@testable import AppStore
@testable import Reconciliation
@testable import TransportCore

@Suite("The Server API rate budget")
struct RateBudgetTests {
    static let second: UInt64 = 1_000_000_000
    static let (a, b) = (Credential.app("a"), Credential.app("b"))
    static let info = RateBudget.Key(endpoint: .transactionInfo, environment: .production)

    /// Requests asked for every 100 µs for 3 seconds, each answered `latency(i)` after it was
    /// sent; returns each admitted request's send and answer times.
    static func drive(_ budget: inout RateBudget, latency: (Int) -> UInt64) -> [(sent: UInt64, answered: UInt64)] {
        let start: UInt64 = 5 * second
        var done: [(sent: UInt64, answered: UInt64)] = []
        var pending: [(sent: UInt64, answered: UInt64)] = []
        var now = start
        while now < start + 3 * second {
            pending.sort { $0.answered < $1.answered }
            while let first = pending.first, first.answered <= now {
                budget.answered(info, now: first.answered)
                done.append(pending.removeFirst())
            }
            if budget.admit(info, now: now) == nil { pending.append((now, now + latency(done.count + pending.count))) }
            now += 100_000
        }
        return done + pending
    }

    @Test("a 401 is doubted for a second, confirmed only by a request sent after the doubt began, cleared by any other answer")
    func unauthorizedDoubts() {
        var d = UnauthorizedDoubts()
        let t0 = 10 * Self.second, wait = UnauthorizedDoubts.confirmAfterNs
        #expect(d.unauthorized(Self.a, sentAt: t0 - 5, now: t0) == .askAgain(due: t0 + wait, firstDoubt: true))
        // Sent before the doubt (the old token): asked again, no new doubt.
        #expect(d.unauthorized(Self.a, sentAt: t0 - 1, now: t0 + 10) == .askAgain(due: t0 + wait, firstDoubt: false))
        #expect(d.heldUntil(Self.a, now: t0 + 10) == t0 + wait && d.heldUntil(Self.a, now: t0 + wait) == nil)
        #expect(d.heldUntil(Self.b, now: t0) == nil && !d.isDoubted(Self.b), "another app is not held")
        // A request sent after the doubt began gets a 401 too: confirmed.
        #expect(d.unauthorized(Self.a, sentAt: t0 + wait, now: t0 + wait + 5) == .confirmed)
        // A stray 401: the fresh request answered, the doubt cleared, a later 401 doubted afresh.
        var stray = UnauthorizedDoubts()
        _ = stray.unauthorized(Self.a, sentAt: t0, now: t0)
        stray.answered(Self.a, sentAt: t0 - 1)
        #expect(stray.isDoubted(Self.a), "an answer to a request sent before the doubt clears nothing")
        stray.answered(Self.a, sentAt: t0 + wait)
        #expect(!stray.isDoubted(Self.a))
        #expect(stray.unauthorized(Self.a, sentAt: t0 + 3 * wait, now: t0 + 3 * wait) == .askAgain(due: t0 + 4 * wait, firstDoubt: true))
    }

    @Test("each app has its own budget and its own 429 hold (Apple's limits are per app)")
    func perApp() {
        var budget = RateBudget(rates: [.transactionHistory: 2])
        let a = RateBudget.Key(endpoint: .transactionHistory, environment: .production, app: "com.example.a")
        let b = RateBudget.Key(endpoint: .transactionHistory, environment: .production, app: "com.example.b")
        let now = 5 * Self.second
        #expect(budget.admit(a, now: now) == nil && budget.admit(a, now: now) == nil)
        #expect(budget.admit(a, now: now) != nil, "a third request of app a within the window")
        #expect(budget.admit(b, now: now) == nil, "app b waits for app a's budget")
        // A 429 of app a holds a alone.
        budget.block(a, untilUnixMs: 10_000, nowUnixMs: 0, now: now)
        #expect(budget.admit(b, now: now) == nil)
        #expect(budget.admit(a, now: now + 2 * Self.second) != nil, "app a sent before its Retry-After")
    }

    @Test("at most N in any window of a second (and 1%), wherever between send and answer Apple counts each request")
    func slidingWindow() {
        // Latencies from 1 ms to 400 ms: the network bunches answers.
        var budget = RateBudget(rates: [.transactionInfo: 200])
        let requests = Self.drive(&budget) { i in UInt64(1 + (i * 7919) % 400) * 1_000_000 }
        // For any window of Apple's (a second), the requests whose [sent, answered] meets it: an
        // upper bound of what Apple can count in it, wherever it counts each one.
        let events = requests.flatMap { [$0.sent, $0.answered] }.sorted()
        var worst = 0
        for t in events {
            worst = max(worst, requests.filter { $0.sent < t + Self.second && $0.answered >= t }.count)
        }
        #expect(worst <= 200, "\(worst) requests could be counted in one window")
        #expect(requests.count > 300, "\(requests.count) in 3 s")
        // At the simulator's pace (20 ms) the budget is nearly used: 200 / 1.03 s.
        var steady = RateBudget(rates: [.transactionInfo: 200])
        let paced = Self.drive(&steady) { _ in 20_000_000 }
        #expect(Double(paced.count) / 3 >= 190, "\(paced.count) in 3 s")
        // Another endpoint and the sandbox have budgets of their own (the sandbox a tenth).
        #expect(budget.admit(RateBudget.Key(endpoint: .orderLookup, environment: .production), now: 9 * Self.second) == nil)
        #expect(budget.limit(RateBudget.Key(endpoint: .transactionInfo, environment: .sandbox)) == 20)
        // Without --api-rate: 90% of Apple's published limits.
        let defaults = RateBudget(rates: [:])
        #expect(defaults.limit(Self.info) == 45)
        #expect(defaults.limit(RateBudget.Key(endpoint: .refundHistory, environment: .production)) == 9)
        #expect(defaults.limit(RateBudget.Key(endpoint: .transactionInfo, environment: .sandbox)) == 4)
    }

    @Test("Google Play's buckets: 44 a second by default (2,640 a minute), the voided list one; --play-rate's per-second rate as given")
    func playBuckets() {
        let play = { (budget: AppStoreBudget) in RateBudget.Key(budget: budget, environment: .production, app: "com.example.game") }
        let defaults = RateBudget(rates: [:])
        #expect(defaults.limit(play(PlayRows.oneTimePurchases)) == 44 && defaults.limit(play(PlayRows.orders)) == 44)
        #expect(defaults.limit(play(PlayRows.voidedPurchases)) == 1)
        let set = RateBudget(
            rates: [.transactionInfo: 7], named: [PlayRows.oneTimePurchases.name: 100, PlayRows.voidedPurchases.name: 0.5])
        #expect(set.limit(play(PlayRows.oneTimePurchases)) == 100 && set.limit(play(PlayRows.orders)) == 44)
        // The least the budget paces is one a second.
        #expect(set.limit(play(PlayRows.voidedPurchases)) == 1)
        #expect(set.limit(Self.info) == 7)
    }

    @Test("a 429's Retry-After (UNIX ms) holds the endpoint until then, and a shorter one does not shorten it")
    func retryAfter() {
        var budget = RateBudget(rates: [:])
        let now: UInt64 = 10 * Self.second
        let nowUnix: Int64 = 1_763_700_000_000
        budget.block(Self.info, untilUnixMs: nowUnix + 1500, nowUnixMs: nowUnix, now: now)
        budget.block(Self.info, untilUnixMs: nowUnix + 200, nowUnixMs: nowUnix, now: now)
        let due = budget.admit(Self.info, now: now + Self.second)
        #expect(due == now + 1_500_000_000)
        #expect(budget.admit(Self.info, now: now + 1_500_000_000) == nil)
        // Other endpoints are not held.
        #expect(budget.admit(RateBudget.Key(endpoint: .transactionHistory, environment: .production), now: now) == nil)
    }

    @Test("App Store Connect's hourly allowance (X-Rate-Limit): counted down per request; a pause once a tenth is left")
    func hourly() {
        let sales = RateBudget.Key(budget: AppStoreBudget(name: "reports", appleRate: 1000), environment: .production)
        var budget = RateBudget(rates: [:])
        var now: UInt64 = 10 * Self.second
        budget.report(HourlyAllowance(limit: 100, remaining: 12), for: sales)
        var sent = 0
        while budget.admit(sales, now: now) == nil {
            budget.answered(sales, now: now)
            sent += 1
            now += Self.second
        }
        // 12 left, 10 kept: two go.
        #expect(sent == 2)
        let due = budget.admit(sales, now: now)
        #expect(due == now + RateBudget.hourlyPauseNs || due.map { $0 > now } == true)
        // After the pause one goes, and its answer says again what is left.
        #expect(budget.admit(sales, now: now + RateBudget.hourlyPauseNs) == nil)
        budget.report(HourlyAllowance(limit: 100, remaining: 90), for: sales)
        budget.answered(sales, now: now + RateBudget.hourlyPauseNs)
        #expect(budget.admit(sales, now: now + RateBudget.hourlyPauseNs + 2 * Self.second) == nil)
    }

    @Test("hostile Retry-After: none, or more than an hour ahead, holds nothing (backoff alone); a past one holds nothing either")
    func hostileRetryAfter() {
        let now: Int64 = 1_763_700_000_000
        #expect(TransportLines.believable(retryAfter: now + 1500, nowMs: now) == now + 1500)
        #expect(TransportLines.believable(retryAfter: nil, nowMs: now) == nil)
        #expect(TransportLines.believable(retryAfter: now + 3_600_001, nowMs: now) == nil)
        #expect(TransportLines.believable(retryAfter: 9_999_999_999_999_999, nowMs: now) == nil)
        // In the past: believed, and RateBudget.block waits nought.
        var budget = RateBudget(rates: [:])
        budget.block(
            Self.info, untilUnixMs: TransportLines.believable(retryAfter: now - 5000, nowMs: now)!, nowUnixMs: now,
            now: 10 * Self.second)
        #expect(budget.admit(Self.info, now: 10 * Self.second) == nil)
    }
}
