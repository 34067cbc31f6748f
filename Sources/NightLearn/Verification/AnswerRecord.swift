import AppStore
import Reconciliation

/// One answer as the writer stores it (a request, the receipt's state, the transactions
/// learned): rows of the staging tables (`StagedAnswers`, migration 12). Codable with the keys
/// of `record_answers(jsonb)`, the JSON function of earlier builds, which the tests use to
/// compare the two ways of storing.
struct AnswerRecord: Codable, Sendable, Equatable {
    /// The receipt, the environment asked (the one that answered), the answer class.
    var r, env, cls: String
    /// Attempt number over all runs; milliseconds the request took.
    var n, ms: Int
    /// The run; Unix ms of the answer.
    var run, at: Int64
    /// HTTP status and App Store status, when there were any.
    var http, st: Int?
    /// Problem text, bundle id, start environment (after a disagreement), verdict.
    var err, bundle, start, verdict: String?
    /// A sweep request; the answer is definitive; always true: the receipt's state row is updated.
    var sweep, final: Bool
    var state = true
    var failedRuns, runs21002: Int
    /// Unix ms from which an unresolved receipt may be sent again.
    var next: Int64?
    var txs: [Transaction]?
    /// `signed_transaction` for a StoreKit 2 upload (nil: an app receipt); the specific reason of a
    /// definitive rejection (`unknown_root`, `bad_signature`, …, or the App Store status).
    var kind, rej: String?
    /// A request went to the App Store for this answer (false: a StoreKit 2 upload verified
    /// offline). Only requests are stored in `verify_attempts` (migration 12), as the contract
    /// defines that table; the receipt's state records the verdict either way. Not a JSON key:
    /// `record_answers(jsonb)` stored every record there.
    var asked = true
    /// An upload verified offline whose receipt had no state row when it was read: stored by COPY
    /// straight into `receipt_state` and `receipt_transactions` (migration 17). Not a JSON key.
    var fresh = false

    enum CodingKeys: String, CodingKey {
        case r, n, run, at, env, http, st, cls, err, ms, sweep, state, bundle, start, final, verdict, next, txs, kind, rej
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
        /// Signed transactions only: what Apple signs beyond verifyReceipt's fields (migration 5).
        var price: Int64?
        var cur, sf, aat, type, own, reason: String?
        var rvd: Int64?
        var rvr: Int?
        var rvt: String?
        var rvp: Int?
        var sd: Int64?

        init(_ t: AppleTransaction) {
            (tid, otid, pid, q, pd) = (t.transactionID, t.originalTransactionID, t.productID, t.quantity, t.purchaseDate)
            (opd, exp, cd, cr) = (t.originalPurchaseDate, t.expiresDate, t.cancellationDate, t.cancellationReason)
            (trial, wol, bundle) = (t.isTrialPeriod, t.webOrderLineItemID, t.bundleID)
        }

        init(_ s: SignedTransaction) {
            self.init(s.transaction)
            (price, cur, sf, aat, type, own, reason) = (
                s.price, s.currency, s.storefront, s.appAccountToken, s.type,
                s.inAppOwnershipType, s.transactionReason
            )
            (rvd, rvr, rvt, rvp, sd) = (
                s.revocationDate, s.revocationReason, s.revocationType, s.revocationPercentage,
                s.signedDate
            )
        }
    }

    /// The record of a StoreKit 2 upload verified offline: definitive either way (the same bytes
    /// give the same verdict on every run), one attempt, no HTTP.
    init(
        signed job: VerifyJob, result: Result<SignedTransaction, SignedDataRejection>, runID: Int64,
        elapsedMs: Int, now: EpochMillis
    ) {
        switch result {
        case .success(let signed):
            self.init(
                verifiedOffline: job, environment: signed.transaction.environment, bundle: signed.transaction.bundleID,
                txs: [Transaction(signed)], runID: runID, elapsedMs: elapsedMs, now: now)
        case .failure(let rejection):
            self.init(rejectedOffline: job, rejection, as: "signed transaction", runID: runID, elapsedMs: elapsedMs, now: now)
        }
        kind = "signed_transaction"
    }

    /// The record of an app receipt verified on our machine (`AppReceipts`): valid, or definitively
    /// rejected with its specific reason (`rejection`); no request, so no `verify_attempts` row.
    init(
        appReceipt job: VerifyJob, result: Result<AppReceipt, SignedDataRejection>, runID: Int64,
        elapsedMs: Int, now: EpochMillis
    ) {
        switch result {
        case .success(let receipt):
            self.init(
                verifiedOffline: job, environment: receipt.environment, bundle: receipt.bundleID,
                txs: receipt.transactions.map(Transaction.init), runID: runID, elapsedMs: elapsedMs, now: now)
        case .failure(let rejection):
            self.init(rejectedOffline: job, rejection, as: "app receipt verified offline", runID: runID, elapsedMs: elapsedMs, now: now)
        }
    }

    /// What was verified offline, valid: definitive, one attempt, no request.
    private init(
        verifiedOffline job: VerifyJob, environment: AppStoreEnvironment, bundle: String?, txs: [Transaction], runID: Int64,
        elapsedMs: Int, now: EpochMillis
    ) {
        (r, n, run, at, ms, sweep, final) = (job.receiptID, job.priorAttempts + 1, runID, now, elapsedMs, job.sweep, true)
        (failedRuns, runs21002, asked, fresh) = (job.retry.failedRuns, job.retry.runs21002, false, job.fresh)
        env = environment.rawValue
        cls = "ok"
        verdict = "valid"
        self.bundle = bundle
        self.txs = txs
    }

    /// What was verified offline and failed a check: a definitive rejection with its specific
    /// reason (`what` names it in `last_error`). verify_attempts.environment is required: it is
    /// filed under production, where nothing it claims is believed.
    private init(
        rejectedOffline job: VerifyJob, _ rejection: SignedDataRejection, as what: String, runID: Int64, elapsedMs: Int,
        now: EpochMillis
    ) {
        (r, n, run, at, ms, sweep, final) = (job.receiptID, job.priorAttempts + 1, runID, now, elapsedMs, job.sweep, true)
        (failedRuns, runs21002, asked, fresh) = (job.retry.failedRuns, job.retry.runs21002, false, job.fresh)
        env = AppStoreEnvironment.production.rawValue
        cls = "reject"
        verdict =
            rejection.code == "wrong_bundle" ? RejectionReason.wrongBundle.rawValue : RejectionReason.invalidReceipt.rawValue
        rej = rejection.code
        err = "\(what): \(rejection)"
    }

    /// An app receipt `--receipts offline` cannot settle (`malformed`: not PKCS#7, an unknown type
    /// 0, …): it stays unresolved, its reason in `last_error`, and is read again next night.
    init(unsettledOffline job: VerifyJob, rejection: SignedDataRejection, runID: Int64, now: EpochMillis) {
        r = job.receiptID
        n = job.priorAttempts
        run = runID
        at = now
        ms = 0
        env = (job.startEnvironment ?? job.environment).rawValue
        cls = "offline"
        err = "not settled offline (--receipts offline): \(rejection)"
        sweep = job.sweep
        final = false
        failedRuns = job.retry.failedRuns
        runs21002 = job.retry.runs21002
        asked = false
    }

    /// The record of `answer` for `job` (asked in `asked`) after the policy's `decision`.
    init(
        job: VerifyJob, asked: AppStoreEnvironment, runID: Int64, httpStatus: Int?, answer: Answer,
        decision: RetryPolicy.Decision, elapsedMs: Int, now: EpochMillis
    ) {
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
        kind = job.signed ? "signed_transaction" : nil
        switch decision {
        case .definitive where answer.answerClass == .ok:
            cls = "ok"
            final = true
            verdict = "valid"
            err = nil
            txs = answer.signed.isEmpty ? answer.transactions.map(Transaction.init) : answer.signed.map(Transaction.init)
        case .definitive:
            cls = "reject"
            final = true
            let reason = answer.rejection ?? .invalidReceipt
            verdict = reason.rawValue
            rej = reason == .wrongBundle ? reason.rawValue : answer.status.map { "status \($0)" }
            err = answer.problem ?? reason.rawValue
        case .rejectedAfterRepeated21002:
            cls = "reject"
            final = true
            verdict = RejectionReason.invalidReceipt.rawValue
            rej = "status 21002"
            err = "status 21002 in \(RetryPolicy.runs21002Limit) runs: malformed receipt"
        case .leaveForNextRun(let eligibleAt), .environmentsDisagree(let eligibleAt):
            next = eligibleAt
        case .switchEnvironment, .sendAgain, .stop:
            break
        }
    }
}
