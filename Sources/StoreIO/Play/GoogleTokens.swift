import Foundation
import HTTP
import PlayStore
import Synchronization

/// The Play service account's access token: an assertion signed with its key (`ServiceAccount`),
/// exchanged at the token endpoint, reused until shortly before it expires (five minutes, or half
/// its life when Google gives less than ten), exchanged afresh when the transport doubts it (a 401
/// or 403). The token endpoint is asked outside the transport's budgets (about once an hour), on
/// the asking transport's thread, a few attempts a second apart. Neither the key nor a token is
/// ever logged or stored.
///
/// Concurrency: one per `PlaySettings`, shared by every transport run of the process (the token
/// outlives a run). A lock keeps one exchange at a time: a thread that waited for another's
/// exchange takes its token (or its failure, remembered a minute) instead of asking again.
final class GoogleTokens: Sendable {
    let account: ServiceAccount
    let tokenURL: String
    /// The assertion's scopes: the Play Developer API's, and Pub/Sub's when a subscription is pulled.
    let scopes: [String]
    /// Attempts at the token endpoint before Play is given up for the run (unreachable).
    static let attempts = 3
    /// A token is renewed this long before Google's expiry at most (half its life when shorter).
    static let renewBeforeMs: Int64 = 300_000
    /// A failed exchange is remembered this long: the runs asking meanwhile are told at once.
    static let failureMemoryMs: Int64 = 60_000
    /// A doubted token renewed by another run this recently is taken as the fresh one (less than
    /// the transport's second of doubt, so a doubt's own renewal is never skipped).
    static let freshEnoughMs: Int64 = 500
    private struct Held {
        var token: String?
        /// When the token is renewed (before Google's expiry).
        var renewAtMs: Int64 = 0
        /// When the token was had.
        var obtainedAtMs: Int64 = 0
        /// The last exchange's failure, and until when it stands.
        var failure: Unavailable?
        var failureUntilMs: Int64 = 0
        /// Exchanges made (a test counts them).
        var exchanges = 0
    }
    private let held = Mutex(Held())

    init(account: ServiceAccount, tokenURL: String, scopes: [String]) {
        (self.account, self.tokenURL, self.scopes) = (account, tokenURL, scopes)
    }

    /// Exchanges made so far.
    var exchanges: Int { held.withLock { $0.exchanges } }

    /// Why no token could be had: Play is skipped for the run (the transport drops its requests).
    struct Unavailable: Error, CustomStringConvertible {
        /// One line, credential-free: what the token endpoint said, or that it did not answer.
        let description: String
        /// Google refused the service account (`invalid_grant`…): ours to fix (exit 78 where Play
        /// is all a command does). false: the token endpoint did not answer (exit 75 there).
        let refused: Bool
    }

    /// A valid token at `nowMs`; `fresh`: exchanged now whatever is held, unless another run just
    /// did. Each attempt waits at most `timeoutMs`.
    func token(nowMs: Int64, fresh: Bool, timeoutMs: Int) throws(Unavailable) -> String {
        try held.withLock { (held) throws(Unavailable) -> String in
            if let token = held.token, nowMs < held.renewAtMs, !fresh || nowMs - held.obtainedAtMs < Self.freshEnoughMs {
                return token
            }
            if let failure = held.failure, nowMs < held.failureUntilMs { throw failure }
            held.token = nil
            switch Result(catching: { () throws(Unavailable) in try exchange(timeoutMs: timeoutMs, counting: &held.exchanges) }) {
            case .success(let (token, expiresIn)):
                let margin = min(Self.renewBeforeMs, expiresIn * 500)
                (held.token, held.renewAtMs, held.obtainedAtMs, held.failure) = (token, nowMs + expiresIn * 1000 - margin, nowMs, nil)
                return token
            case .failure(let failure):
                (held.failure, held.failureUntilMs) = (failure, nowMs + Self.failureMemoryMs)
                throw failure
            }
        }
    }

    /// The token endpoint's token and its lifetime in seconds, after at most `attempts` tries.
    private func exchange(timeoutMs: Int, counting exchanges: inout Int) throws(Unavailable) -> (String, Int64) {
        var problem = "no answer"
        for attempt in 1...Self.attempts {
            if attempt > 1 { usleep(UInt32(500_000 * (attempt - 1))) }
            exchanges += 1
            let now = Int64(Date().timeIntervalSince1970)
            let form = GoogleOAuth.form(assertion: account.assertion(scopes: scopes, now: now))
            switch Self.post(form, to: tokenURL, timeoutMs: timeoutMs) {
            case .failed(let message):
                problem = message
            case .answered(let status, let body):
                switch GoogleOAuth.answer(status: status, body: body) {
                case .token(let token, let expiresIn):
                    return (token, expiresIn)
                case .refused(let error):
                    throw Unavailable(
                        description: "Google's token endpoint refused the service account \(account.clientEmail) (\(error))", refused: true)
                case .retry(let why):
                    problem = why
                }
            }
        }
        throw Unavailable(
            description: "Google's token endpoint did not give a token after \(Self.attempts) attempts (\(problem))", refused: false)
    }

    private enum Posted { case answered(Int, [UInt8]), failed(String) }

    /// One POST of the form; its status and body, or libcurl's words (credential-free).
    private static func post(_ form: String, to url: String, timeoutMs: Int) -> Posted {
        let http = HTTPMulti(maxBodyBytes: 1 << 16)
        defer { http.close() }
        do {
            try http.add(
                HTTPRequest(
                    tag: 1, method: .post, url: url, body: Array(form.utf8),
                    headers: ["Content-Type: application/x-www-form-urlencoded"], timeoutMs: timeoutMs))
        } catch {
            return .failed("\(error)")
        }
        while true {
            for completion in http.poll(timeoutMs: 1000) where completion.tag == 1 {
                switch completion.outcome {
                case .response(let status, let body): return .answered(status, body)
                case .failure(_, let message, _): return .failed(message)
                }
            }
        }
    }
}
