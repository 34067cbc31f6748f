// When to stop asking an App Store that does not answer (contract §3, "Retries"), as a pure
// counter: each request's outcome in (an HTTP answer of any status, or a transport failure with
// libcurl's words: the host does not resolve, the connection is refused or reset, TLS fails, the
// timeout passes), "go on" or "stop" out. No clock and no I/O inside, so every rule is a unit test.
//
// Why: a request that fails in transport teaches nothing about its receipt, only about the host.
// Retrying each receipt `--max-attempts` times against a host that is gone costs the night
// receipts × attempts requests; at a host that accepts and never answers, each one lasts
// `--timeout-ms`. The breaker ends that after one wave of requests, or two once the host has
// answered, whatever the number of receipts.

/// Counts the outcomes of one run of the App Store transport and says when the App Store is
/// unreachable. One per run (verifyReceipt's, Get Transaction Info's, each Server API sweep's;
/// `lookup` keeps one over all its requests), over every host it asks: a host that answers keeps
/// the run going, whatever the others do.
public struct OutageBreaker: Sendable, Equatable {
    /// Requests in flight at most (`--concurrency`): the first wave.
    public let wave: Int
    /// HTTP answers of any status (a 503 is an answer: the host is there).
    public private(set) var answers = 0
    /// First requests (a receipt's or a conversation's first in the run) sent, and those of them
    /// that failed in transport.
    public private(set) var firstRequests = 0
    public private(set) var firstFailures = 0
    /// Transport failures since the last HTTP answer (or since the start).
    public private(set) var streak = 0
    /// libcurl's words for the last transport failure, with the host (the URL without credentials).
    public private(set) var lastFailure = ""

    public init(wave: Int) { self.wave = max(1, wave) }

    /// Failures in a row that stop a loop whose host answered before: two waves, so that every
    /// connection failing at once (a load balancer restarting resets them all) is retried on new
    /// ones before the night gives up, and at least 16, so that a small `--concurrency` on a lossy
    /// network (the `load` chaos scenario: 2% timeouts, 5% resets) never trips it by chance.
    public var streakLimit: Int { max(2 * wave, 16) }

    public enum Verdict: Sendable, Equatable {
        case goOn
        /// Not one HTTP answer, and the first wave failed in transport: nothing was believed.
        case unreachable
        /// The host answered, then `streakLimit` requests in a row failed in transport.
        case stoppedAnswering
    }

    /// A request went out; `first`: the first of its receipt or conversation in this loop.
    public mutating func sent(first: Bool) {
        if first { firstRequests += 1 }
    }

    /// An HTTP answer came, of any status.
    public mutating func answered() {
        answers += 1
        streak = 0
    }

    /// A request failed in transport with libcurl's `reason`.
    public mutating func failed(first: Bool, reason: String) {
        streak += 1
        if first { firstFailures += 1 }
        lastFailure = reason
    }

    /// Whether to go on. `moreFirstRequests`: the loop may still send a first request (receipts
    /// not read yet, or held); when it may not, a first wave smaller than `wave` is whole.
    public func verdict(moreFirstRequests: Bool) -> Verdict {
        if answers == 0 {
            let wholeWave = firstFailures >= wave || (!moreFirstRequests && firstRequests > 0 && firstFailures >= firstRequests)
            return wholeWave ? .unreachable : .goOn
        }
        return streak >= streakLimit ? .stoppedAnswering : .goOn
    }

    /// The line of exit 75 for `verdict`; `service` names what was asked ("the App Store",
    /// "the App Store Server API"). Holds libcurl's words and the URL without credentials: never a secret.
    public func message(_ verdict: Verdict, service: String) -> String {
        switch verdict {
        case .goOn:
            return ""
        case .unreachable:
            let requests = firstFailures == 1 ? "the first request" : "the first \(firstFailures) requests"
            return "\(service) is unreachable (\(lastFailure)): \(requests) got no HTTP answer; "
                + "nothing was believed: run again later"
        case .stoppedAnswering:
            return "\(service) stopped answering (\(lastFailure)): \(streak) requests in a row got no HTTP answer "
                + "after \(answers == 1 ? "1 answer" : "\(answers) answers"); the answers received are kept: run again later"
        }
    }
}
