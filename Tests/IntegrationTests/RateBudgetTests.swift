// The job's own rate budget for the Server API (contract §3b), on a fake monotonic clock: no
// network, no sleeping.

import Testing

@testable import AppStore
@testable import ReconcileJob
@testable import Reconciliation

@Suite("The Server API rate budget")
struct RateBudgetTests {
    static let second: UInt64 = 1_000_000_000
    static let info = RateBudget.Key(endpoint: .transactionInfo, environment: .production)

    @Test("at most N in any window of a second (and 1%), per endpoint and environment")
    func slidingWindow() {
        var budget = RateBudget(rates: [.transactionInfo: 200])
        let start: UInt64 = 5 * Self.second
        var sent: [UInt64] = []
        var now = start
        // Ask every 100 µs for 3 seconds; keep the send times the budget admits.
        while now < start + 3 * Self.second {
            if budget.admit(Self.info, now: now) == nil { sent.append(now) }
            now += 100_000
        }
        // Never more than 200 in any window of 1.01 s…
        var j = 0
        for i in sent.indices {
            while sent[i] - sent[j] >= RateBudget.windowNs { j += 1 }
            #expect(i - j + 1 <= 200)
        }
        // …and close to 200 a second over the run (≥ 95%).
        #expect(Double(sent.count) / 3 >= 190, "\(sent.count) in 3 s")
        // Another endpoint and the sandbox have budgets of their own (the sandbox a tenth).
        #expect(budget.admit(RateBudget.Key(endpoint: .orderLookup, environment: .production), now: now) == nil)
        #expect(budget.limits[RateBudget.Key(endpoint: .transactionInfo, environment: .sandbox)] == 20)
        #expect(budget.limits[RateBudget.Key(endpoint: .refundHistory, environment: .production)] == 10)
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
}
