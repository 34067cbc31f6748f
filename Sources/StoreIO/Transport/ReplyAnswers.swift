import AppStore
import JobStore
import Reconciliation

/// How an exchange reads what is not a body (a 401, a 404, a 429): the same for every endpoint
/// and every exchange.
extension AppStoreTransport {
    /// The answer of a Server API or App Store Connect reply that is not a body to read: the same
    /// for every endpoint. `notFound` is a rejection here; Get Transaction Info asks the sandbox.
    package static func answer(_ reply: AppStoreReply) -> Answer {
        switch reply {
        case .answer(let status, _):
            return Answer(status: nil, answerClass: .ok, problem: "HTTP \(status)")
        case .unauthorized:
            return Answer(status: nil, answerClass: .config, problem: unauthorized)
        case .notFound:
            return Answer(
                status: nil, answerClass: .reject, rejection: .invalidReceipt,
                problem: "Apple knows no such transaction (4040010)")
        case .refused(let problem, _):
            return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: problem)
        case .rateLimited:
            return Answer(status: nil, answerClass: .retry, problem: "HTTP 429, rate limited")
        case .retry(let problem):
            return Answer(status: nil, answerClass: .retry, problem: problem)
        }
    }

    static let unauthorized =
        "the App Store Server API refused our token (HTTP 401): check IAP_ISSUER_ID, IAP_KEY_ID, "
        + "IAP_PRIVATE_KEY_FILE (or IAP_APP_KEYS) and that the key may be used for the app; verification stopped, "
        + "no receipt was blamed"
}
