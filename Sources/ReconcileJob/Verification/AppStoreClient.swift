import AppStore
import HTTP
import Reconciliation

/// One way of asking the App Store about a receipt: the request for a job, and the classified
/// answer for what came back. The request loop, the queues and the answer writer know nothing
/// else of the protocol, so a second one (the App Store Server API) is a second conformance.
protocol AppStoreClient: Sendable {
    func request(for job: VerifyJob, tag: Int) -> HTTPRequest
    func answer(to outcome: HTTPCompletion.Outcome, for job: VerifyJob) -> Answer
    /// The endpoint and environment a job's next request goes to, for the job's own rate budget;
    /// nil: no budget (verifyReceipt has none).
    func rateKey(for job: VerifyJob) -> RateBudget.Key?
    /// A 429's `Retry-After` in this completion, as a UNIX time in milliseconds.
    func retryAfter(_ completion: HTTPCompletion) -> Int64?
    /// What the exit-75 line calls the other end when it does not answer.
    static var service: String { get }
}

extension AppStoreClient {
    func rateKey(for job: VerifyJob) -> RateBudget.Key? { nil }
    func retryAfter(_ completion: HTTPCompletion) -> Int64? { nil }
    static var service: String { "the App Store" }
}

/// The legacy verifyReceipt protocol (contract §3).
struct VerifyReceiptClient: AppStoreClient {
    let productionURL: String
    let sandboxURL: String
    /// `$IAP_SHARED_SECRET`, sent as `password`; never printed.
    let password: String?
    let timeoutMs: Int
    let allowedBundles: Set<String>

    init(settings: JobSettings) {
        productionURL = settings.productionURL
        sandboxURL = settings.sandboxURL
        password = settings.sharedSecret
        timeoutMs = settings.timeoutMs
        allowedBundles = settings.bundleIDs
    }

    func request(for job: VerifyJob, tag: Int) -> HTTPRequest {
        HTTPRequest(tag: tag, url: job.environment == .production ? productionURL : sandboxURL,
                    body: VerifyReceipt.requestBody(receiptData: job.receiptData, password: password),
                    timeoutMs: timeoutMs)
    }

    func answer(to outcome: HTTPCompletion.Outcome, for job: VerifyJob) -> Answer {
        switch outcome {
        case .response(let status, let body):
            return VerifyReceipt.classify(httpStatus: status, body: body, environment: job.environment,
                                          allowedBundles: allowedBundles)
        case .failure(_, let message, _):
            return VerifyReceipt.transportFailure(message)
        }
    }
}
