import AppStore
import Reconciliation

/// One piece of work that asks the App Store: a receipt to verify, a notification sweep, a
/// customer's history, a lookup. It says which request it wants sent now (an endpoint's row of
/// `AppStoreEndpoints` with its id, query and body), reads each answer into an `Answer` whose class
/// the retry policy decides on, and is told the decision. The transport does everything else.
package protocol AppStoreExchange: AnyObject {
    /// The request to send now.
    var request: AppStoreRequest { get }
    /// Where it stands with the retry policy (this run's attempts; a receipt's runs before).
    var retry: RetryPolicy.State { get set }
    /// Requests sent for it in this run (the transport counts; 1: its first).
    var sends: Int { get set }
    /// Reads one classified answer to `request` (throws only what stops the run, e.g. the
    /// database that stores a page failing).
    func read(_ reply: AppStoreReply) throws -> Answer
    /// The policy's decision on `answer` (read from an answer to `asked`). True: send `request`
    /// again now (the next page, the other environment).
    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool
}

/// How one request ended, as the exchange that asked sees it: an answer (status and body) or a
/// failure with none. The transport's driver makes one of each call's end; the state machine and its
/// tests make them without a socket.
package struct ExchangeCompletion: Sendable {
    /// An answer, or a failure before one came.
    package enum Outcome: Sendable, Equatable {
        /// The status and body of an answer.
        case response(status: Int, body: [UInt8])
        /// No answer: `message` says why (credential-free); `timedOut` when the wait ran out.
        case failure(message: String, timedOut: Bool)
    }
    /// The request's tag (`TransportMachine.Send.tag`).
    package var tag: Int
    /// What came back.
    package var outcome: Outcome
    /// Milliseconds from start to end of the call.
    package var elapsedMs: Int
    /// The headers the transport reads (`Retry-After`, `X-Rate-Limit`), names as asked.
    package var headers: [String: String]

    /// A completion of the request tagged `tag`.
    package init(tag: Int, outcome: Outcome, elapsedMs: Int = 0, headers: [String: String] = [:]) {
        (self.tag, self.outcome, self.elapsedMs, self.headers) = (tag, outcome, elapsedMs, headers)
    }
}

/// Where a run's exchanges come from: a queue a reader fills while the run goes on
/// (verification), or a list known before (the sweeps, `lookup`).
package protocol ExchangeFeed {
    associatedtype Exchange: AppStoreExchange
    /// The next exchange if one is ready now.
    mutating func next() -> Exchange?
    /// The next exchange, waiting up to `timeoutMs` for one.
    mutating func next(timeoutMs: Int) -> Exchange?
    /// No exchange will come any more.
    var finished: Bool { get }
}

/// A list of exchanges known before the run.
package struct ListFeed<Exchange: AppStoreExchange>: ExchangeFeed {
    private var list: [Exchange]
    private var position = 0
    /// A feed of `list`, in its order.
    package init(_ list: [Exchange]) { self.list = list }
    /// The next exchange of the list.
    package mutating func next() -> Exchange? {
        guard position < list.count else { return nil }
        position += 1
        return list[position - 1]
    }
    /// The list never waits.
    package mutating func next(timeoutMs: Int) -> Exchange? { next() }
    /// Every exchange of the list was taken.
    package var finished: Bool { position >= list.count }
}

/// What a transport run did, for the summary and the tests.
package struct TransportCounts: Sendable, Equatable {
    /// Requests sent, per endpoint name (`transaction_info`, `verify_receipt`…).
    package var requests: [String: Int] = [:]
    /// 429 answers.
    package var rateLimited = 0
    /// Answers sent again after a backoff.
    package var retried = 0
    /// Play exchanges dropped unasked once Google refused the service account (left for the next night).
    package var playDropped = 0
    /// Why Google Play was skipped for the run (its service account refused, its token endpoint
    /// silent), credential-free; nil: not skipped.
    package var playRefusal: String?
    /// Packages whose requests Google refused (HTTP 401 or 403, confirmed with a fresh token): their
    /// exchanges were dropped unasked; the other packages went on.
    package var playRefusedPackages: Set<String> = []
    /// Google Play was skipped because its token endpoint did not answer, not because it refused.
    package var playOutage = false
    /// Requests sent, every endpoint.
    package var total: Int { requests.values.reduce(0, +) }

    /// Nothing counted yet.
    package init() {}
}
