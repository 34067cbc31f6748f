import AppStore
import JobStore
import PlayStore
import Reconciliation
import TransportCore

/// One question to Google Play at a time through the one transport (its retries, 429 holds, the
/// 401/403 doubt, the outage breaker): what Google says of a purchase token. `lookup` asks so; the
/// tests hold the whole way (assertion, access token, bearer, classes, strict reading) to the
/// simulator over HTTP.
///
/// Concurrency: each question runs the transport on the calling thread.
package struct PlayCaller {
    let transport: AppStoreTransport
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
    }

    /// What Google says of `token` in `package`. Throws exit 78 when Google refuses the service
    /// account, exit 75 when Google does not answer (or answers only garbage) after the attempts,
    /// exit 64 for a token or package that is not one.
    package mutating func purchase(package: String, token: String) throws -> Said {
        guard let request = PlayRows.productPurchase(package: package, token: token) else {
            throw JobError(.usage, "\(shown(token)) in \(shown(package)) is not a purchase token of a package")
        }
        let asking = PlayAsking(request)
        var feed = ListFeed([asking])
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        if let refusal = counts.playRefusal {
            throw JobError(.configuration, "\(refusal): check PLAY_SERVICE_ACCOUNT_FILE and the account's access in Play Console")
        }
        switch asking.outcome {
        case .said(let said):
            return said
        case .refused(let problem):
            throw JobError(.usage, "Google refused the question (\(problem))")
        case .gaveUp(let problem):
            throw JobError(
                .temporary, "Google Play did not answer (\(problem)) after \(transport.policy.maxAttempts) attempts; run again later")
        }
    }
}

/// A token or package as a line shows it (printable ASCII, cut).
private func shown(_ text: String) -> String {
    String(text.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" }.prefix(40))
}

/// The one request of a question, and what became of it. A 200 body that is not Google's is
/// retried like a timeout, never believed.
private final class PlayAsking: AppStoreExchange {
    enum Outcome { case said(PlayCaller.Said), refused(String), gaveUp(String) }
    let request: AppStoreRequest
    var retry = RetryPolicy.State()
    var sends = 0
    var outcome = Outcome.gaveUp("no answer")

    init(_ request: AppStoreRequest) { self.request = request }

    func read(_ reply: AppStoreReply) -> Answer {
        switch reply {
        case .answer(_, let body):
            switch PlayPurchase.read(body) {
            case .success(let purchase):
                outcome = .said(.purchase(purchase))
                return Answer(status: nil, answerClass: .ok)
            case .failure(let garbage):
                return Answer(status: nil, answerClass: .retry, problem: "Google answered something that is not a purchase: \(garbage)")
            }
        case .notFound:
            outcome = .said(.unknown)
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: "Google knows no such token")
        case .refused(_, 410?):
            outcome = .said(.gone)
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: "the token is no longer valid")
        case .refused(let problem, _):
            outcome = .refused(problem)
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: problem)
        case .unauthorized:
            return Answer(status: nil, answerClass: .config, problem: "Google refused the service account")
        case .rateLimited:
            return Answer(status: nil, answerClass: .retry, problem: "HTTP 429, rate limited")
        case .retry(let problem):
            return Answer(status: nil, answerClass: .retry, problem: problem)
        }
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        if case .leaveForNextRun = decision { outcome = .gaveUp(answer.problem ?? "no answer") }
        return false
    }
}
