import Foundation
import HTTP
import PlayStore

/// The Play service account's access token: an assertion signed with its key (`ServiceAccount`),
/// exchanged at the token endpoint, reused until five minutes before it expires, exchanged afresh
/// when the transport doubts it (a 401 or 403). The token endpoint is asked outside the transport's
/// budgets (about once an hour), on the transport's thread, a few attempts a second apart.
/// Neither the key nor a token is ever logged or stored.
///
/// Concurrency: owned by one transport run (`RequestSigner`), used on its thread only.
struct GoogleTokens {
    let settings: PlaySettings
    let timeoutMs: Int
    /// Attempts at the token endpoint before Play is given up for the run (unreachable).
    static let attempts = 3
    /// A token is renewed this long before Google's expiry.
    static let renewBeforeMs: Int64 = 300_000
    private var current: (token: String, expiresAtMs: Int64)?
    /// Exchanges made (a test counts them).
    private(set) var exchanges = 0

    init(settings: PlaySettings, timeoutMs: Int) { (self.settings, self.timeoutMs) = (settings, timeoutMs) }

    /// Why no token could be had: Play is skipped for the run (the transport drops its requests).
    struct Unavailable: Error, CustomStringConvertible {
        /// One line, credential-free: what the token endpoint said, or that it did not answer.
        let description: String
    }

    /// A valid token at `nowMs`; `fresh`: exchanged now whatever is held.
    mutating func token(nowMs: Int64, fresh: Bool) throws(Unavailable) -> String {
        if !fresh, let current, nowMs < current.expiresAtMs - Self.renewBeforeMs { return current.token }
        current = nil
        var problem = "no answer"
        for attempt in 1...Self.attempts {
            if attempt > 1 { usleep(UInt32(500_000 * (attempt - 1))) }
            exchanges += 1
            let now = Int64(Date().timeIntervalSince1970)
            let form = GoogleOAuth.form(
                assertion: settings.account.assertion(scopes: [GoogleOAuth.androidPublisherScope], now: now))
            switch Self.post(form, to: settings.tokenURL, timeoutMs: timeoutMs) {
            case .failed(let message):
                problem = message
            case .answered(let status, let body):
                switch GoogleOAuth.answer(status: status, body: body) {
                case .token(let token, let expiresIn):
                    current = (token, nowMs + expiresIn * 1000)
                    return token
                case .refused(let error):
                    throw Unavailable(
                        description: "Google's token endpoint refused the service account \(settings.account.clientEmail) (\(error))")
                case .retry(let why):
                    problem = why
                }
            }
        }
        throw Unavailable(description: "Google's token endpoint did not give a token after \(Self.attempts) attempts (\(problem))")
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
