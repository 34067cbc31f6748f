// What happens after each answer (contract §3's table and the job's retry rules), as a pure
// function: the answer class, the receipt's counters and the run's settings in; "definitive",
// "switch", "send again after X ms", "leave for the next run, eligible at T" or "stop" out.
// No clock and no randomness inside: the time and the jitter are passed in, so every row of the
// table is a unit test.

import Reconciliation

public struct RetryPolicy: Sendable, Equatable {
    /// Requests per receipt within one run (environment switches not counted): `--max-attempts`.
    public var maxAttempts: Int
    /// Base of the in-run exponential backoff with full jitter: `--retry-base-ms`.
    public var retryBaseMs: Int
    /// Base of the wait between runs, doubled per failed run, at most a day: `--retry-delay-minutes`.
    public var retryDelayMinutes: Int
    /// Runs with a 21002 answer after which the receipt is rejected for good.
    public static let runs21002Limit = 3
    /// The longest wait between runs.
    public static let maxDelayMinutes = 24 * 60

    public init(maxAttempts: Int = 4, retryBaseMs: Int = 500, retryDelayMinutes: Int = 10) {
        (self.maxAttempts, self.retryBaseMs, self.retryDelayMinutes) = (maxAttempts, retryBaseMs, retryDelayMinutes)
    }

    /// Where one receipt stands. Carried from run to run (`failedRuns`, `runs21002`) and within
    /// one run (the rest).
    public struct State: Sendable, Equatable {
        /// Runs that ended with this receipt still unresolved.
        public var failedRuns: Int
        /// Runs in which this receipt got at least one 21002 answer.
        public var runs21002: Int
        /// Failed requests in this run (switch answers not counted).
        public var attemptsThisRun = 0
        /// Whether this run's 21002 was already counted in `runs21002`.
        public var counted21002ThisRun = false
        /// The receipt already went to the other environment (in this run, or production and the
        /// sandbox disagreed in an earlier one): a further switch answer is a disagreement.
        public var switched: Bool

        public init(failedRuns: Int = 0, runs21002: Int = 0, switched: Bool = false) {
            (self.failedRuns, self.runs21002, self.switched) = (failedRuns, runs21002, switched)
        }
    }

    public enum Decision: Sendable, Equatable {
        /// ok or reject: stored as the receipt's verdict, never sent again (the refund sweep aside).
        case definitive
        /// 21002 in `runs21002Limit` runs: rejected for good as malformed.
        case rejectedAfterRepeated21002
        /// 21007/21008: send once to the other environment, now.
        case switchEnvironment
        /// Send again in this run after this many milliseconds.
        case sendAgain(afterMs: Int)
        /// Unresolved for this run; may be sent again from this time on (Unix ms).
        case leaveForNextRun(eligibleAt: EpochMillis)
        /// Production says sandbox and the sandbox says production: unresolved for this run, and
        /// later runs ask the environment that answered last, without switching.
        case environmentsDisagree(eligibleAt: EpochMillis)
        /// 21004 / 21000: ours, not the receipt's: verification stops (exit 78).
        case stop
    }

    /// The decision for one answer; updates `state`.
    /// - Parameters:
    ///   - now: Unix ms of the answer (the wait between runs counts from it).
    ///   - jitter: a number in `0...1` (uniform random in the job), scaling the backoff.
    public func decide(_ answerClass: AnswerClass, status: Int?, state: inout State, now: EpochMillis,
                       jitter: Double) -> Decision {
        switch answerClass {
        case .ok, .reject:
            return .definitive
        case .config:
            return .stop
        case .switchEnvironment where !state.switched:
            state.switched = true
            return .switchEnvironment
        case .switchEnvironment:
            state.failedRuns += 1
            return .environmentsDisagree(eligibleAt: nextRun(after: now, failedRuns: state.failedRuns))
        case .retry:
            if status == 21002 && !state.counted21002ThisRun {
                state.counted21002ThisRun = true
                state.runs21002 += 1
                if state.runs21002 >= Self.runs21002Limit { return .rejectedAfterRepeated21002 }
            }
            state.attemptsThisRun += 1
            if state.attemptsThisRun < maxAttempts {
                return .sendAgain(afterMs: backoffMs(afterAttempt: state.attemptsThisRun, jitter: jitter))
            }
            state.failedRuns += 1
            return .leaveForNextRun(eligibleAt: nextRun(after: now, failedRuns: state.failedRuns))
        }
    }

    /// Full jitter: uniform in `0 ... retryBaseMs × 2^(attempt − 1)` (at least 1 ms of range).
    public func backoffMs(afterAttempt attempt: Int, jitter: Double) -> Int {
        let cap = Double(retryBaseMs) * Double(1 << min(30, max(0, attempt - 1)))
        return Int((min(1, max(0, jitter)) * max(1, cap)).rounded(.down))
    }

    /// `retryDelayMinutes × 2^(failedRuns − 1)` minutes after `now`, at most a day.
    public func nextRun(after now: EpochMillis, failedRuns: Int) -> EpochMillis {
        let doubled = retryDelayMinutes.multipliedReportingOverflow(by: 1 << min(10, max(0, failedRuns - 1)))
        let minutes = doubled.overflow ? Self.maxDelayMinutes : min(Self.maxDelayMinutes, doubled.partialValue)
        return now + EpochMillis(minutes) * 60_000
    }
}
