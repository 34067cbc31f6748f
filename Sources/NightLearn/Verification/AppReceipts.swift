import AppStore
import Foundation
import JobStore
import Reconciliation
import Synchronization

/// App receipts verified on our own machine (contract "App receipts on our own machine"): the
/// reader hands each base64 receipt to a verifier thread, which checks it against the pinned root
/// (`AppReceiptVerifier`) and either settles it or, in `auto`, passes it on to verifyReceipt.
///
/// | verdict | `offline` | `auto` |
/// |---|---|---|
/// | valid, no auto-renewable subscription | valid | valid |
/// | valid, holding an auto-renewable subscription | valid (renewals unknown: skipped_checks) | verifyReceipt (`renewals`) |
/// | `bad_signature`, `expired`, `wrong_bundle` | rejected | rejected |
/// | `malformed` (iOS 6, an unknown type 0, …) | unresolved, with its reason | verifyReceipt (`malformed`) |
/// | `unknown_root`, `broken_chain` | rejected once a receipt verified tonight; none did: exit 78 | verifyReceipt (`chain`) |
///
/// The exit 78 protects the players: when no receipt of the night verifies and some fail on the
/// root, the configured roots are wrong (Apple changed its receipt intermediates in 2023 and
/// 2025), not the receipts. Their records are held until a receipt verifies; if none does,
/// `finish` stops the night, rejecting nothing.
final class AppReceipts: Sendable {
    /// Why a receipt went on to verifyReceipt in `auto`.
    enum Cause: String, Sendable, CaseIterable {
        /// Not settled offline: not PKCS#7 (iOS 6, a JSON text), an unknown type 0, a form beyond
        /// the limits.
        case malformed
        /// No chain to the configured root: verifyReceipt is Apple's word on it.
        case chain
        /// Valid, but it holds an auto-renewable subscription, whose renewals only verifyReceipt's
        /// `latest_receipt_info` tells.
        case renewals
    }

    /// What one night of offline verification did (summary.json `receipts_offline`).
    struct Counts: Sendable, Equatable {
        var verified = 0
        var rejected: [String: Int] = [:]
        var unsettled = 0
        var toVerifyReceipt: [String: Int] = [:]
    }

    private let verifier: AppReceiptVerifier
    private let mode: ReceiptsMode
    private let bundleIDs: Set<String>?
    private let runID: Int64
    private let rootsSource: String

    private struct State {
        var counts = Counts()
        var held: [AnswerRecord] = []
    }
    private let state = Mutex(State())

    init(settings: JobSettings, runID: Int64) {
        verifier = settings.appReceipts
        mode = settings.receipts
        bundleIDs = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        self.runID = runID
        rootsSource = settings.receiptRootsSource
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// The receipt's bytes, or nil when its text is not base64 as `is_base64` says (the whitespace it
    /// allows skipped). The reader decodes the receipts it reads (`ReceiptSelection.job(fromCandidate:)`).
    static func decoded(_ receiptData: String) -> [UInt8]? {
        var text = receiptData
        return text.withUTF8 { ReceiptSelection.base64Decoded($0) }
    }

    /// `job` as it goes on to verifyReceipt: with its text again, when the reader decoded it.
    static func withText(_ job: VerifyJob) -> VerifyJob {
        guard let bytes = job.receiptBytes else { return job }
        var asked = job
        asked.receiptData = Data(bytes).base64EncodedString()
        asked.receiptBytes = nil
        return asked
    }

    /// A transaction of an auto-renewable subscription: only those carry an expiry (1708) or a web
    /// order line item (1711).
    static func isAutoRenewable(_ t: AppleTransaction) -> Bool {
        t.expiresDate != nil || t.webOrderLineItemID != nil
    }

    /// Verifies `jobs`; their records go to `records` in one go, the receipts to ask go to
    /// `verifyReceipt`. Returns how many were settled here, or nil when the writer or the
    /// transport has stopped.
    func verify(_ jobs: [VerifyJob], records: BlockingQueue<AnswerRecord>, verifyReceipt: BlockingQueue<VerifyJob>) -> Int? {
        var ready: [AnswerRecord] = []
        ready.reserveCapacity(jobs.count)
        var settled = 0
        for i in jobs.indices {
            if let ask = verify(jobs[i], into: &ready) {
                guard verifyReceipt.push(ask) else { return nil }
            } else {
                settled += 1
            }
        }
        return records.push(moving: &ready) ? settled : nil
    }

    /// One receipt: its record (and the held ones it releases) go to `ready`; returns the job when
    /// it goes on to verifyReceipt instead.
    private func verify(_ job: VerifyJob, into ready: inout [AnswerRecord]) -> VerifyJob? {
        let started = DispatchTime.now().uptimeNanoseconds
        let result: Result<AppReceipt, SignedDataRejection> =
            (job.receiptBytes ?? Self.decoded(job.receiptData)).map { verifier.verify($0, bundleIDs: bundleIDs) }
            ?? .failure(.malformed("the receipt is not base64"))
        let elapsed = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        let now = EpochMillis(Date().timeIntervalSince1970 * 1000)
        let cause: Cause?
        switch result {
        case .success(let receipt) where mode == .auto && receipt.transactions.contains(where: Self.isAutoRenewable):
            cause = .renewals
        case .failure(.malformed) where mode == .auto: cause = .malformed
        case .failure(.unknownRoot), .failure(.brokenChain):
            cause = mode == .auto ? .chain : nil
        default: cause = nil
        }
        if let cause {
            state.withLock { $0.counts.toVerifyReceipt[cause.rawValue, default: 0] += 1 }
            return Self.withText(job)
        }
        if case .failure(let rejection) = result, case .malformed = rejection {
            ready.append(AnswerRecord(unsettledOffline: job, rejection: rejection, runID: runID, now: now))
            state.withLock { $0.counts.unsettled += 1 }
            return nil
        }
        let record = AnswerRecord(appReceipt: job, result: result, runID: runID, elapsedMs: elapsed, now: now)
        let released: [AnswerRecord]? = state.withLock { s in
            switch result {
            case .success:
                s.counts.verified += 1
                for r in s.held { s.counts.rejected[r.rej ?? "unknown_root", default: 0] += 1 }
                defer { s.held = [] }
                return s.held
            case .failure(.unknownRoot) where s.counts.verified == 0, .failure(.brokenChain) where s.counts.verified == 0:
                s.held.append(record)
                return nil
            case .failure(let rejection):
                s.counts.rejected[rejection.code, default: 0] += 1
                return []
            }
        }
        // Held records (released by the first receipt that verifies) go before this one.
        if let released {
            ready += released
            ready.append(record)
        }
        return nil
    }

    /// After the last receipt: releases the held records once a receipt verified tonight, else
    /// throws exit 78 naming the roots, rejecting nothing.
    func finish(records: BlockingQueue<AnswerRecord>) throws {
        let (held, verified) = state.withLock { s in
            defer { s.held = [] }
            return (s.held, s.counts.verified)
        }
        guard !held.isEmpty else { return }
        guard verified > 0 else {
            throw JobError(
                .configuration,
                "no app receipt verifies against the configured receipt roots (\(rootsSource)): "
                    + "\(held.count) failed on the root or the chain and none verified, so none is rejected; "
                    + "set IAP_RECEIPT_ROOT_CERTIFICATES to the PEM files of the right roots, or unset it for Apple Root CA")
        }
        state.withLock { s in for r in held { s.counts.rejected[r.rej ?? "unknown_root", default: 0] += 1 } }
        guard records.push(contentsOf: held) else { throw JobError(.failure, "recording App Store answers failed") }
    }
}
