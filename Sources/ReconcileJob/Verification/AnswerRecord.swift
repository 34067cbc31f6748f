import AppStore
import Reconciliation

/// One answer as `record_answers(jsonb)` stores it (a request, the receipt's state, the
/// transactions learned). Encoded with `JSONEncoder` by the writer; absent fields are omitted.
struct AnswerRecord: Codable, Sendable, Equatable {
    var r: String
    /// Attempt number over all runs.
    var n: Int
    var run: Int64
    /// Unix ms of the answer.
    var at: Int64
    /// The environment asked (which is the one that answered).
    var env: String
    var http: Int?
    var st: Int?
    var cls: String
    var err: String?
    var ms: Int
    var sweep: Bool
    /// Always true: the receipt's state row is updated.
    var state = true
    var failedRuns: Int
    var runs21002: Int
    var bundle: String?
    var start: String?
    var final: Bool
    var verdict: String?
    /// Unix ms from which an unresolved receipt may be sent again.
    var next: Int64?
    var txs: [Transaction]?

    enum CodingKeys: String, CodingKey {
        case r, n, run, at, env, http, st, cls, err, ms, sweep, state, bundle, start, final, verdict, next, txs
        case failedRuns = "failed_runs", runs21002 = "runs_21002"
    }

    /// An Apple transaction learned from a valid answer.
    struct Transaction: Codable, Sendable, Equatable {
        var tid, otid, pid: String
        var q: Int
        var pd: Int64
        var opd, exp, cd: Int64?
        var cr: String?
        var trial: Bool?
        var wol, bundle: String?

        init(_ t: AppleTransaction) {
            tid = t.transactionID
            otid = t.originalTransactionID
            pid = t.productID
            q = t.quantity
            pd = t.purchaseDate
            opd = t.originalPurchaseDate
            exp = t.expiresDate
            cd = t.cancellationDate
            cr = t.cancellationReason
            trial = t.isTrialPeriod
            wol = t.webOrderLineItemID
            bundle = t.bundleID
        }
    }

    /// The record of `answer` for `job` (asked in `asked`) after the policy's `decision`.
    init(job: VerifyJob, asked: AppStoreEnvironment, runID: Int64, httpStatus: Int?, answer: Answer,
         decision: RetryPolicy.Decision, elapsedMs: Int, now: EpochMillis) {
        r = job.receiptID
        n = job.priorAttempts + job.sends
        run = runID
        at = now
        env = asked.rawValue
        http = httpStatus
        st = answer.status
        ms = elapsedMs
        sweep = job.sweep
        failedRuns = job.retry.failedRuns
        runs21002 = job.retry.runs21002
        bundle = answer.bundleID
        start = job.startEnvironment?.rawValue
        cls = answer.answerClass.rawValue
        err = answer.problem
        final = false
        switch decision {
        case .definitive where answer.answerClass == .ok:
            cls = "ok"
            final = true
            verdict = "valid"
            err = nil
            txs = answer.transactions.map(Transaction.init)
        case .definitive:
            cls = "reject"
            final = true
            let reason = answer.rejection ?? .invalidReceipt
            verdict = reason.rawValue
            err = answer.problem ?? reason.rawValue
        case .rejectedAfterRepeated21002:
            cls = "reject"
            final = true
            verdict = RejectionReason.invalidReceipt.rawValue
            err = "status 21002 in \(RetryPolicy.runs21002Limit) runs: malformed receipt"
        case .leaveForNextRun(let eligibleAt), .environmentsDisagree(let eligibleAt):
            next = eligibleAt
        case .switchEnvironment, .sendAgain, .stop:
            break
        }
    }
}
