import AppStore
import HTTP
import JobStore
import Reconciliation
import StoreIO
import TransportCore

/// How verification asks the App Store about a receipt: the legacy verifyReceipt (contract §3),
/// or Get Transaction Info for a swept signed transaction (§3b). Everything else (sending,
/// budgets, retries, the breaker) is the transport's.
enum VerifyAsking: Sendable {
    /// verifyReceipt: `$IAP_SHARED_SECRET` sent as `password` (never printed); answers for other
    /// apps are rejected.
    case verifyReceipt(password: String?, allowedBundles: Set<String>)
    /// Get Transaction Info: the signed answer verified as an upload is, for these apps (nil: any).
    case transactionInfo(verifier: SignedDataVerifier, bundleIDs: Set<String>?)

    static func receipts(_ settings: JobSettings) -> VerifyAsking {
        .verifyReceipt(password: settings.sharedSecret, allowedBundles: settings.bundleIDs)
    }

    static func signedTransactions(_ settings: JobSettings) -> VerifyAsking {
        .transactionInfo(verifier: settings.signedData, bundleIDs: settings.bundleIDs.isEmpty ? nil : settings.bundleIDs)
    }

    /// What the exit-75 line calls the other end.
    var service: String {
        if case .transactionInfo = self { return "the App Store Server API" }
        return "the App Store"
    }
}

/// One run of verification requests: the receipts of a queue through the transport, the record of
/// every answer to the writer (one hand-off per wake-up), the counts and progress of the stage.
/// Used on the transport's thread only.
final class VerifyRequests {
    let asking: VerifyAsking
    let runID: Int64
    let progress: StageProgress
    let records: BlockingQueue<AnswerRecord>
    var counts: VerifyCounts
    private var batch: [AnswerRecord] = []

    init(asking: VerifyAsking, runID: Int64, progress: StageProgress, records: BlockingQueue<AnswerRecord>, counts: VerifyCounts) {
        (self.asking, self.runID, self.progress, self.records, self.counts) = (asking, runID, progress, records, counts)
    }

    /// Asks about every receipt of `input` until it is closed and empty; `counts` carries on from
    /// an earlier run's.
    static func run(
        _ asking: VerifyAsking, input: BlockingQueue<VerifyJob>, transport: AppStoreTransport, runID: Int64,
        progress: StageProgress, records: BlockingQueue<AnswerRecord>, counts: inout VerifyCounts
    ) throws {
        let session = VerifyRequests(asking: asking, runID: runID, progress: progress, records: records, counts: counts)
        var feed = QueueFeed(queue: input, session: session)
        var breaker = OutageBreaker(wave: transport.concurrency)
        var sent = TransportCounts()
        defer {
            counts = session.counts
            counts.requests += sent.total
            counts.rateLimited += sent.rateLimited
        }
        try transport.run(&feed, breaker: &breaker, counts: &sent, recorded: session.flush)
    }

    /// The records of one wake-up to the writer together.
    func flush() throws {
        guard !batch.isEmpty else { return }
        guard records.push(contentsOf: batch) else {
            throw JobError(.failure, "recording App Store answers failed; verification stopped")
        }
        batch.removeAll(keepingCapacity: true)
    }

    func append(_ record: AnswerRecord) { batch.append(record) }

    /// `last_error` of a receipt production calls a sandbox receipt and the sandbox a production one.
    static var environmentsDisagree: String { "production says sandbox, sandbox says production" }
}

/// The receipts a reader thread hands over.
struct QueueFeed: ExchangeFeed {
    let queue: BlockingQueue<VerifyJob>
    let session: VerifyRequests
    mutating func next() -> VerifyExchange? { queue.tryPop().map { VerifyExchange(job: $0, session: session) } }
    mutating func next(timeoutMs: Int) -> VerifyExchange? {
        queue.pop(timeoutMs: timeoutMs).map { VerifyExchange(job: $0, session: session) }
    }
    var finished: Bool { queue.isClosedAndEmpty }
}

/// One receipt (or swept signed transaction) being asked about.
final class VerifyExchange: AppStoreExchange {
    private(set) var job: VerifyJob
    let session: VerifyRequests

    init(job: VerifyJob, session: VerifyRequests) { (self.job, self.session) = (job, session) }

    var retry: RetryPolicy.State {
        get { job.retry }
        set { job.retry = newValue }
    }
    var sends: Int {
        get { job.sends }
        set { job.sends = newValue }
    }

    var request: AppStoreRequest {
        switch session.asking {
        case .verifyReceipt(let password, _):
            return AppStoreEndpoints.verifyReceipt.request(
                in: job.environment, body: VerifyReceipt.requestBody(receiptData: job.receiptData, password: password))
        case .transactionInfo:
            // Only digits reach a path (the id came out of a verified signed transaction).
            return AppStoreEndpoints.transactionInfo.request(in: job.environment, id: job.transactionID)
        }
    }

    func read(_ reply: AppStoreReply) -> Answer {
        switch session.asking {
        case .verifyReceipt(_, let allowedBundles):
            switch reply {
            case .answer(let status, let body):
                return VerifyReceipt.classify(
                    httpStatus: status, body: body, environment: job.environment,
                    allowedBundles: allowedBundles)
            case .retry(let message):
                return VerifyReceipt.transportFailure(message)
            case .unauthorized, .notFound, .refused, .rateLimited:
                // verifyReceipt's answers are all `.answer`: not reached.
                return VerifyReceipt.transportFailure("an answer verifyReceipt does not give")
            }
        case .transactionInfo(let verifier, let bundleIDs):
            switch reply {
            case .answer(_, let body):
                return verified(body, verifier: verifier, bundleIDs: bundleIDs)
            case .notFound where job.environment == .production:
                // 4040010 from production asks the sandbox once (the retry policy's one switch).
                return Answer(status: nil, answerClass: .switchEnvironment, problem: "4040010 in production")
            case .notFound:
                // From the sandbox: a rejection of the sweep, which never undoes a stored verdict.
                return Answer(
                    status: nil, answerClass: .reject, rejection: .invalidReceipt,
                    problem: "Apple knows no such transaction in either environment (4040010)")
            default:
                return AppStoreTransport.answer(reply)
            }
        }
    }

    /// The signed transaction of a 200, verified. A body or signature that fails is never
    /// believed: retried like a timeout, since the answer (not the purchase) is what is wrong.
    private func verified(_ body: [UInt8], verifier: SignedDataVerifier, bundleIDs: Set<String>?) -> Answer {
        let jws: String
        do { jws = try AppStoreEndpoints.transactionInfo.reader(body) } catch {
            return Answer(status: nil, answerClass: .retry, problem: "Get Transaction Info: \(error)")
        }
        switch verifier.verifyTransaction(jws, bundleIDs: bundleIDs) {
        case .success(let signed):
            guard signed.transaction.transactionID == job.transactionID else {
                return Answer(status: nil, answerClass: .retry, problem: "Get Transaction Info answered about another transaction")
            }
            return Answer(
                status: nil, answerClass: .ok, transactions: [signed.transaction],
                bundleID: signed.transaction.bundleID, signed: [signed])
        case .failure(let rejection):
            return Answer(status: nil, answerClass: .retry, problem: "signedTransactionInfo: \(rejection)")
        }
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        if case .stop = decision {
            session.counts.config += 1
            return false
        }
        var answer = answer
        if case .environmentsDisagree = decision {
            answer.problem = VerifyRequests.environmentsDisagree
            job.startEnvironment = job.environment
        }
        var httpStatus: Int?
        if case .response(let status, _) = completion.outcome { httpStatus = status }
        session.append(
            AnswerRecord(
                job: job, asked: asked.environment, runID: session.runID, httpStatus: httpStatus,
                answer: answer, decision: decision, elapsedMs: completion.elapsedMs,
                now: AppStoreTransport.unixMillis()))
        var again = false
        switch decision {
        case .definitive, .rejectedAfterRepeated21002:
            if answer.answerClass == .ok { session.counts.ok += 1 } else { session.counts.rejected += 1 }
            session.progress.tick()
        case .switchEnvironment:
            session.counts.switched += 1
            job.environment = job.environment == .production ? .sandbox : .production
            again = true
        case .sendAgain:
            session.counts.retried += 1
        case .leaveForNextRun, .environmentsDisagree:
            session.counts.unresolved += 1
            session.progress.tick()
        case .stop:
            break
        }
        session.progress.note(retries: session.counts.retried)
        return again
    }
}
