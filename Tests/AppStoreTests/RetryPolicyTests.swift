// Contract §3's table, row by row: the answer as Apple (or the network) gives it, its class,
// and what the retry policy does with it. No Postgres, no clock, no randomness.

import Testing

@testable import AppStore
@testable import Reconciliation

@Suite("The retry policy, row by row of contract §3")
struct RetryPolicyTests {
    static let policy = RetryPolicy(maxAttempts: 4, retryBaseMs: 500, retryDelayMinutes: 10)
    static let now: EpochMillis = 1_763_700_000_000
    static let minute: EpochMillis = 60_000

    /// One row: an HTTP status and body (or a transport failure), and the decision on a first try.
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var http: Int = 200
        var body: String? = nil
        var expectedClass: AnswerClass
        var expected: RetryPolicy.Decision
        var testDescription: String { name }
    }

    static let validReceipt = #"{"bundle_id":"com.example.game","in_app":[]}"#

    static let rows: [Row] = [
        Row(name: "0: ok, definitive", body: #"{"status":0,"receipt":\#(validReceipt)}"#,
            expectedClass: .ok, expected: .definitive),
        Row(name: "21006: ok, definitive", body: #"{"status":21006,"receipt":\#(validReceipt)}"#,
            expectedClass: .ok, expected: .definitive),
        Row(name: "21007: switch to the sandbox", body: #"{"status":21007}"#,
            expectedClass: .switchEnvironment, expected: .switchEnvironment),
        Row(name: "21008: switch to production", body: #"{"status":21008}"#,
            expectedClass: .switchEnvironment, expected: .switchEnvironment),
        Row(name: "21005: retry", body: #"{"status":21005}"#, expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "21009: retry", body: #"{"status":21009}"#, expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "21002: retry (first run)", body: #"{"status":21002}"#, expectedClass: .retry,
            expected: .sendAgain(afterMs: 250)),
        Row(name: "21100 with is_retryable true: retry", body: #"{"status":21100,"is_retryable":true}"#,
            expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "21199 with is-retryable absent: retry", body: #"{"status":21199}"#,
            expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "HTTP 503: retry", http: 503, body: "busy", expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "HTTP 429: retry", http: 429, body: "", expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "timeout: retry", http: 0, body: nil, expectedClass: .retry, expected: .sendAgain(afterMs: 250)),
        Row(name: "body not JSON: retry", body: "<html>oops</html>", expectedClass: .retry,
            expected: .sendAgain(afterMs: 250)),
        Row(name: "21003: reject, definitive", body: #"{"status":21003}"#, expectedClass: .reject, expected: .definitive),
        Row(name: "21010: reject, definitive", body: #"{"status":21010}"#, expectedClass: .reject, expected: .definitive),
        Row(name: "21100 with is_retryable false: reject", body: #"{"status":21100,"is_retryable":false}"#,
            expectedClass: .reject, expected: .definitive),
        Row(name: "21150 with is-retryable false: reject", body: #"{"status":21150,"is-retryable":false}"#,
            expectedClass: .reject, expected: .definitive),
        Row(name: "21004: config, stop", body: #"{"status":21004}"#, expectedClass: .config, expected: .stop),
        Row(name: "21000: config, stop", body: #"{"status":21000}"#, expectedClass: .config, expected: .stop),
    ]

    @Test(arguments: rows)
    func firstAnswer(_ row: Row) {
        let answer = row.body.map {
            VerifyReceipt.classify(httpStatus: row.http, body: Array($0.utf8), environment: .production, allowedBundles: [])
        } ?? VerifyReceipt.transportFailure("timeout after 15000 ms")
        #expect(answer.answerClass == row.expectedClass, "\(answer)")
        var state = RetryPolicy.State()
        let decision = Self.policy.decide(answer.answerClass, status: answer.status, state: &state, now: Self.now,
                                          jitter: 0.5)
        #expect(decision == row.expected)
    }

    @Test("retry: full-jitter backoff doubling per attempt, then left for the next run after --max-attempts")
    func retriesWithinARun() {
        var state = RetryPolicy.State()
        var decisions: [RetryPolicy.Decision] = []
        for _ in 0..<4 {
            decisions.append(Self.policy.decide(.retry, status: 21005, state: &state, now: Self.now, jitter: 1))
        }
        #expect(decisions == [.sendAgain(afterMs: 500), .sendAgain(afterMs: 1000), .sendAgain(afterMs: 2000),
                              .leaveForNextRun(eligibleAt: Self.now + 10 * Self.minute)])
        #expect(state.failedRuns == 1 && state.attemptsThisRun == 4)
        #expect(Self.policy.backoffMs(afterAttempt: 3, jitter: 0) == 0)
        #expect(RetryPolicy(maxAttempts: 1).decide(.retry, status: nil, state: &state, now: Self.now, jitter: 0)
                == .leaveForNextRun(eligibleAt: Self.now + 20 * Self.minute), "the second failed run waits 20 minutes")
    }

    @Test("the wait between runs: 10 minutes doubled per failed run, at most a day",
          arguments: [(1, 10), (2, 20), (3, 40), (4, 80), (8, 1280), (9, 1440), (50, 1440)])
    func betweenRuns(_ failedRuns: Int, _ minutes: Int) {
        #expect(Self.policy.nextRun(after: Self.now, failedRuns: failedRuns) == Self.now + EpochMillis(minutes) * Self.minute)
        var state = RetryPolicy.State(failedRuns: failedRuns - 1)
        state.attemptsThisRun = 3
        #expect(Self.policy.decide(.retry, status: nil, state: &state, now: Self.now, jitter: 0)
                == .leaveForNextRun(eligibleAt: Self.now + EpochMillis(minutes) * Self.minute))
        #expect(RetryPolicy(retryDelayMinutes: 0).nextRun(after: Self.now, failedRuns: failedRuns) == Self.now)
        #expect(RetryPolicy(retryDelayMinutes: Int.max).nextRun(after: Self.now, failedRuns: failedRuns)
                == Self.now + 1440 * Self.minute)
    }

    @Test("21002 is rejected for good on the third run that got it, counted once per run")
    func repeated21002() {
        var state = RetryPolicy.State(failedRuns: 2, runs21002: 1)
        #expect(Self.policy.decide(.retry, status: 21002, state: &state, now: Self.now, jitter: 0) == .sendAgain(afterMs: 0))
        #expect(Self.policy.decide(.retry, status: 21002, state: &state, now: Self.now, jitter: 0) == .sendAgain(afterMs: 0))
        #expect(state.runs21002 == 2, "two 21002 answers in one run count as one run")
        var third = RetryPolicy.State(failedRuns: 2, runs21002: 2)
        #expect(Self.policy.decide(.retry, status: 21002, state: &third, now: Self.now, jitter: 0)
                == .rejectedAfterRepeated21002)
    }

    @Test("a second switch answer: the environments disagree, no third request in this run")
    func environmentsDisagree() {
        var state = RetryPolicy.State()
        #expect(Self.policy.decide(.switchEnvironment, status: 21007, state: &state, now: Self.now, jitter: 0)
                == .switchEnvironment)
        #expect(Self.policy.decide(.switchEnvironment, status: 21008, state: &state, now: Self.now, jitter: 0)
                == .environmentsDisagree(eligibleAt: Self.now + 10 * Self.minute))
        var known = RetryPolicy.State(failedRuns: 1, switched: true)
        #expect(Self.policy.decide(.switchEnvironment, status: 21008, state: &known, now: Self.now, jitter: 0)
                == .environmentsDisagree(eligibleAt: Self.now + 20 * Self.minute))
    }
}
