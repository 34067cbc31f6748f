import AppStore
import HTTP
import Reconciliation
import TransportCore

/// One paged conversation with the App Store Server API: a notification history sweep, or one
/// customer's transaction history. The conversation says which page it wants (an endpoint's row
/// of `AppStoreEndpoints`), reads each page, verifies and stores what it holds, and says whether
/// there is a next one.
package protocol Conversation: AnyObject {
    /// The request for the next page.
    var request: AppStoreRequest { get }
    /// A 200's body. Throws `ServerAPIGarbage` for a body that is not what Apple sends (retried
    /// like a timeout); returns true when this was the last page.
    func page(_ body: [UInt8]) throws -> Bool
    /// Apple will not answer this conversation (a refused request, or retries used up): what was
    /// stored stays, the position does not advance.
    func abandon(_ problem: String)
}

/// Runs conversations through the App Store transport (`AppStoreTransport`: budget, 429,
/// backoff, 401 → exit 78, the outage breaker → exit 75), each one page at a time (a page's token
/// or revision comes from the page before). Runs on the calling thread, which owns the
/// conversations' database connection.
package struct Pager {
    let transport: AppStoreTransport

    /// Pages through `transport` (its budget, retries and breaker).
    package init(transport: AppStoreTransport) { self.transport = transport }

    /// Pages asked and items read, for the run's summary.
    package struct Counts: Sendable, Equatable {
        /// Requests sent, per endpoint name.
        package var requests: [String: Int] = [:]
        /// 429 answers.
        package var rateLimited = 0
        /// Answers sent again after a backoff.
        package var retried = 0
        /// Conversations Apple would not answer.
        package var abandoned = 0
        /// Why Google Play was skipped (its service account refused, its token endpoint silent):
        /// its conversations were dropped unasked, their positions not moved.
        package var playRefusal: String?
        /// Google Play was skipped because its token endpoint did not answer.
        package var playOutage = false

        /// Nothing counted yet.
        package init() {}
    }

    /// Runs `conversations` to their last page or their abandonment, adding to `counts`.
    package func run(_ conversations: [Conversation], progress: StageProgress, counts: inout Counts) throws {
        guard !conversations.isEmpty else { return }
        var abandoned = 0
        var feed = ListFeed(conversations.map { Paging($0, progress: progress, abandoned: { abandoned += 1 }) })
        var breaker = OutageBreaker(wave: transport.concurrency)
        var sent = TransportCounts()
        defer {
            counts.requests.merge(sent.requests, uniquingKeysWith: +)
            counts.rateLimited += sent.rateLimited
            counts.retried += sent.retried
            counts.abandoned += abandoned
            if counts.playRefusal == nil, let refusal = sent.playRefusal {
                (counts.playRefusal, counts.playOutage) = (refusal, sent.playOutage)
            }
        }
        try transport.run(&feed, breaker: &breaker, counts: &sent)
    }
}

/// A conversation as the transport sees it: its pages in turn, each page's retries counted from
/// nought; abandoned on a refusal or when a page used up its attempts.
private final class Paging: AppStoreExchange {
    let conversation: Conversation
    let progress: StageProgress
    let abandoned: () -> Void
    var retry = RetryPolicy.State()
    var sends = 0
    /// The page just read was the last.
    private var last = false

    init(_ conversation: Conversation, progress: StageProgress, abandoned: @escaping () -> Void) {
        (self.conversation, self.progress, self.abandoned) = (conversation, progress, abandoned)
    }

    var request: AppStoreRequest { conversation.request }

    func read(_ reply: AppStoreReply) throws -> Answer {
        guard case .answer(_, let body) = reply else { return AppStoreTransport.answer(reply) }
        do {
            last = try conversation.page(body)
            return Answer(status: nil, answerClass: .ok)
        } catch let garbage as ServerAPIGarbage {
            return Answer(status: nil, answerClass: .retry, problem: "\(request.name): \(garbage.problem)")
        }
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        switch decision {
        case .definitive where answer.answerClass == .ok:
            if last {
                progress.tick()
                return false
            }
            retry.attemptsThisRun = 0
            return true
        case .definitive, .rejectedAfterRepeated21002:
            give(up: answer.problem ?? "refused")
        case .leaveForNextRun, .environmentsDisagree:
            give(up: (answer.problem ?? "no answer") + " (after \(retry.attemptsThisRun) attempts)")
        case .switchEnvironment, .sendAgain, .stop:
            break
        }
        return false
    }

    private func give(up problem: String) {
        abandoned()
        conversation.abandon(problem)
        progress.tick()
    }
}
