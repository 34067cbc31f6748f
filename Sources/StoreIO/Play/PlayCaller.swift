import AppStore
import JobStore
import PlayStore
import StrictJSON
import Reconciliation
import TransportCore

/// One question to Google at a time through the one transport (its retries, 429 holds, the 401/403
/// doubt, the outage breaker): what Google Play says of a purchase token, a pull of the job's
/// notification subscription and its acknowledgement, an answer to a refund review. `lookup` and
/// `respond` ask so; the tests hold the whole way (assertion, access token, bearer, classes, strict
/// reading) to the simulator over HTTP.
///
/// Concurrency: each question runs the transport on the calling thread.
package struct PlayCaller {
    let transport: AppStoreTransport
    let play: PlaySettings
    /// Over every question of the caller.
    private var breaker = OutageBreaker(wave: 1)

    /// What Google said of one token.
    package enum Said: Sendable, Equatable {
        /// The purchase, read strictly.
        case purchase(PlayPurchase)
        /// 404: Google knows no such token in the package.
        case unknown
        /// 410: the token is no longer valid.
        case gone
    }

    /// Questions one at a time with `play`'s service account under `settings`' retry policy and timeout.
    package init(play: PlaySettings, settings: TransportSettings) {
        var transport = AppStoreTransport(settings: settings, service: "Google Play", concurrency: 1)
        transport.play = play
        self.transport = transport
        self.play = play
    }

    /// What Google says of `token` in `package`. Throws exit 78 when Google refuses the service
    /// account, exit 75 when Google does not answer (or answers only garbage) after the attempts,
    /// exit 64 for a token or package that is not one.
    package mutating func purchase(package: String, token: String) throws -> Said {
        guard let request = PlayRows.productPurchase(package: package, token: token) else {
            throw JobError(.usage, "\(shown(token)) in \(shown(package)) is not a purchase token of a package")
        }
        switch try ask(request, PlayPurchase.read) {
        case .body(let purchase): return .purchase(purchase)
        case .notFound: return .unknown
        case .gone: return .gone
        case .refused(let problem, _): throw JobError(.usage, "Google refused the request (\(problem))")
        }
    }

    /// The next messages of the job's subscription (`PLAY_PUBSUB_SUBSCRIPTION`), at most
    /// `maxMessages`; none when nothing is waiting. Each must be stored before it is acknowledged.
    package mutating func pull(maxMessages: Int) throws -> [PubSubMessage] {
        guard let subscription = play.subscription, let request = PlayRows.pull(subscription: subscription, maxMessages: maxMessages)
        else { throw JobError(.configuration, "no PLAY_PUBSUB_SUBSCRIPTION is set: Play's notifications are not pulled") }
        guard case .body(let messages) = try ask(request, PubSubMessage.readPull) else {
            throw JobError(.configuration, "Pub/Sub knows no subscription \(subscription): check PLAY_PUBSUB_SUBSCRIPTION")
        }
        return messages
    }

    /// Acknowledges messages already stored (an ack of a stale delivery acknowledges nothing, and is
    /// no error: the message comes again, and storing it again changes nothing).
    package mutating func acknowledge(_ ackIDs: [String]) throws {
        guard let subscription = play.subscription else { return }
        guard let request = PlayRows.acknowledge(subscription: subscription, ackIDs: ackIDs) else { return }
        _ = try ask(request) { _ in .success(()) }
    }

    /// What Google did with an answer to a refund review.
    package enum ReviewSent: Sendable, Equatable {
        /// Accepted (200; Google keeps the first answer per token and says OK to the others).
        case accepted
        /// Refused, with Google's HTTP status (404: no such order) and its problem.
        case refused(status: Int?, problem: String)
    }

    /// Sends `review` for `orderID` of `package` (Google keeps the first answer per token).
    package mutating func reviewRefund(package: String, orderID: String, review: RefundReview) throws -> ReviewSent {
        guard let request = PlayRows.reviewRefund(package: package, orderID: orderID, review: review) else {
            throw JobError(.usage, "\(shown(orderID)) of \(shown(package)) is not a Play order id of a package")
        }
        switch try ask(request, refusals: true, { _ in .success(()) }) {
        case .body: return .accepted
        case .notFound: return .refused(status: 404, problem: "Google knows no such order (HTTP 404)")
        case .gone: return .refused(status: 410, problem: "HTTP 410")
        case .refused(let problem, let status): return .refused(status: status, problem: problem)
        }
    }

    /// The line of a package Google refused the account for.
    static func packageRefusal(_ package: String) -> String {
        "Google refused the service account for \(package) (HTTP 401 or 403, again with a fresh token a second later)"
    }

    /// The outcome of one request read by `read`.
    private enum Asked<T> { case body(T), notFound, gone, refused(String, Int?) }

    /// `refusals`: a refusal of the request (a 4xx but 401, 403, 404, 410) is returned, not thrown
    /// (exit 64).
    private mutating func ask<T>(
        _ request: AppStoreRequest, refusals: Bool = false, _ read: @escaping ([UInt8]) -> Result<T, PlayGarbage>
    ) throws -> Asked<T> {
        let asking = PlayAsking(request, read: read)
        var feed = ListFeed([asking])
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        if let refusal = counts.playRefusal ?? counts.playRefusedPackages.sorted().first.map(Self.packageRefusal) {
            if counts.playOutage { throw JobError(.temporary, "\(refusal); run again later") }
            throw JobError(.configuration, "\(refusal): check PLAY_SERVICE_ACCOUNT_FILE and the account's access in Play Console")
        }
        switch asking.outcome {
        case .read(let value): return .body(value)
        case .notFound: return .notFound
        case .gone: return .gone
        case .refused(let problem, let status):
            if refusals { return .refused(problem, status) }
            throw JobError(.usage, "Google refused the request (\(problem))")
        case .gaveUp(let problem):
            throw JobError(
                .temporary, "Google did not answer (\(problem)) after \(transport.policy.maxAttempts) attempts; run again later")
        }
    }
}

/// A token, an id or a package as a line shows it (printable ASCII, cut).
private func shown(_ text: String) -> String { Sanitized.text(text.utf8, limit: 40) }

/// The one request of a question, and what became of it. A 2xx body the reader refuses is retried
/// like a timeout, never believed. The night asks each token so (PlayPurchases in NightLearn).
package final class PlayAsking<T>: AppStoreExchange {
    /// What became of the request: a body read, 404 or 410 with Google's error body, another
    /// refusal, or no answer believed after the attempts.
    package enum Outcome { case read(T), notFound, gone, refused(String, Int?), gaveUp(String) }
    /// The one request.
    package let request: AppStoreRequest
    let reader: ([UInt8]) -> Result<T, PlayGarbage>
    /// Its attempts in this run.
    package var retry = RetryPolicy.State()
    /// Requests sent for it.
    package var sends = 0
    /// What became of it; `gaveUp` until Google said something believable.
    package private(set) var outcome = Outcome.gaveUp("no answer")
    /// Its outcome is final for the run (not sent again): the night stores it.
    package private(set) var finished = false

    /// Asks `request`, its 2xx body read by `read`.
    package init(_ request: AppStoreRequest, read: @escaping ([UInt8]) -> Result<T, PlayGarbage>) {
        (self.request, reader) = (request, read)
    }

    /// The class of Google's reply: a body read, 404 and 410 as Google said them, the rest retried or refused.
    package func read(_ reply: AppStoreReply) -> Answer {
        switch reply {
        case .answer(_, let body):
            switch reader(body) {
            case .success(let value):
                outcome = .read(value)
                return Answer(status: nil, answerClass: .ok)
            case .failure(let garbage):
                return Answer(status: nil, answerClass: .retry, problem: "Google answered something that is not its answer: \(garbage)")
            }
        case .notFound:
            outcome = .notFound
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: "Google knows no such id")
        case .refused(_, 410?):
            outcome = .gone
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: "the token is no longer valid")
        case .refused(let problem, let status):
            outcome = .refused(problem, status)
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: problem)
        case .unauthorized:
            return Answer(status: nil, answerClass: .config, problem: "Google refused the service account")
        case .rateLimited:
            return Answer(status: nil, answerClass: .retry, problem: "HTTP 429, rate limited")
        case .retry(let problem):
            return Answer(status: nil, answerClass: .retry, problem: problem)
        }
    }

    /// Keeps the outcome of the attempts' end; never sent again now.
    package func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        if case .leaveForNextRun = decision { outcome = .gaveUp(answer.problem ?? "no answer") }
        if case .sendAgain = decision {} else { finished = true }
        return false
    }
}
