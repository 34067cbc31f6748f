import AppStore
import Foundation
import HTTP
import Reconciliation

/// What the job needs to call the App Store Server API (contract §3b), from `IAP_ISSUER_ID`,
/// `IAP_KEY_ID`, `IAP_PRIVATE_KEY_FILE` and the first of `IAP_BUNDLE_IDS`.
public struct ServerAPISettings: Sendable {
    public var productionURL = "https://api.storekit.apple.com"
    public var sandboxURL = "https://api.storekit-sandbox.apple.com"
    /// Requests per second per endpoint in production (`--api-rate`; the sandbox gets a tenth).
    public var rates: [ServerAPIEndpoint: Double] = [:]
    /// Signs the bearer tokens; holds the `.p8` key (never printed).
    public var jwt: AppStoreJWT

    public init(jwt: AppStoreJWT) { self.jwt = jwt }

    func baseURL(_ environment: AppStoreEnvironment) -> String {
        var url = environment == .production ? productionURL : sandboxURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// Get Transaction Info for the refund sweep of signed transactions: the transaction's current
/// state (a refund shows as `revocationDate`) in one signed answer, verified like an upload
/// before anything in it is believed. 4040010 from production asks the sandbox once (the retry
/// policy's one switch); from the sandbox it is a rejection of the sweep, which never undoes a
/// stored verdict.
struct ServerAPIClient: AppStoreClient {
    let api: ServerAPISettings
    let verifier: SignedDataVerifier
    let bundleIDs: Set<String>?
    let timeoutMs: Int
    static let service = "the App Store Server API"

    init(api: ServerAPISettings, settings: JobSettings) {
        self.api = api
        verifier = settings.signedData
        bundleIDs = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        timeoutMs = settings.timeoutMs
    }

    func request(for job: VerifyJob, tag: Int) -> HTTPRequest {
        // Only digits reach a path (the id came out of a verified signed transaction).
        let id = job.transactionID.flatMap { ServerAPI.isPathSafe($0) ? $0 : nil } ?? "0"
        return HTTPRequest(
            tag: tag, method: .get, url: api.baseURL(job.environment) + ServerAPI.transactionInfoPath(id),
            headers: ["Authorization: Bearer " + api.jwt.token(now: Int64(Date().timeIntervalSince1970))],
            timeoutMs: timeoutMs, wantedHeaders: ["Retry-After"])
    }

    func rateKey(for job: VerifyJob) -> RateBudget.Key? {
        RateBudget.Key(endpoint: .transactionInfo, environment: job.environment)
    }

    func retryAfter(_ completion: HTTPCompletion) -> Int64? {
        guard case .response(429, _) = completion.outcome else { return nil }
        return completion.headers["Retry-After"].flatMap(ServerAPI.parseRetryAfter) ?? 0
    }

    func answer(to outcome: HTTPCompletion.Outcome, for job: VerifyJob) -> Answer {
        switch outcome {
        case .failure(_, let message, _):
            return Answer(status: nil, answerClass: .retry, problem: message)
        case .response(let status, let body):
            switch ServerAPI.classify(httpStatus: status, body: body, retryAfter: nil) {
            case .ok(let body):
                return verified(body, job: job)
            case .unauthorized:
                return Answer(status: nil, answerClass: .config, problem: Self.unauthorized)
            case .transactionNotFound:
                if job.environment == .production {
                    return Answer(status: nil, answerClass: .switchEnvironment, problem: "4040010 in production")
                }
                return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt,
                              problem: "Apple knows no such transaction in either environment (4040010)")
            case .rateLimited:
                return Answer(status: nil, answerClass: .retry, problem: "HTTP 429, rate limited")
            case .retry(let problem):
                return Answer(status: nil, answerClass: .retry, problem: problem)
            case .refused(_, let problem):
                return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: problem)
            }
        }
    }

    /// The signed transaction of a 200, verified. A body or signature that fails is never
    /// believed: retried like a timeout, since the answer (not the purchase) is what is wrong.
    private func verified(_ body: [UInt8], job: VerifyJob) -> Answer {
        let jws: String
        do { jws = try ServerAPI.signedTransactionInfo(body) } catch {
            return Answer(status: nil, answerClass: .retry, problem: "Get Transaction Info: \(error)")
        }
        switch verifier.verifyTransaction(jws, bundleIDs: bundleIDs) {
        case .success(let signed):
            guard signed.transaction.transactionID == job.transactionID else {
                return Answer(status: nil, answerClass: .retry,
                              problem: "Get Transaction Info answered about another transaction")
            }
            return Answer(status: nil, answerClass: .ok, transactions: [signed.transaction],
                          bundleID: signed.transaction.bundleID, signed: [signed])
        case .failure(let rejection):
            return Answer(status: nil, answerClass: .retry, problem: "signedTransactionInfo: \(rejection)")
        }
    }

    static let unauthorized = "the App Store Server API refused our token (HTTP 401): check IAP_ISSUER_ID, IAP_KEY_ID, "
        + "IAP_PRIVATE_KEY_FILE and that the first of IAP_BUNDLE_IDS is the key's app; verification stopped, "
        + "no receipt was blamed"
}
