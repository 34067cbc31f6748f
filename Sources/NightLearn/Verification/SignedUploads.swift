import AppStore
import Foundation
import JobStore
import Postgres
import Reconciliation
import Synchronization

/// StoreKit 2 uploads (contract §2): a signed transaction is verified offline, without the App
/// Store, as the reader meets it, and its record goes straight to the answer writer. The verdict
/// is definitive either way: the same bytes give the same answer on every run.
///
/// One exception protects the players: when no signed transaction of the run verifies and some
/// fail on the root, the configured roots are wrong, not the uploads. Records of uploads that
/// failed on the root are held back until one upload verifies; if none does, `finish` proves
/// the roots with a signed transaction that verified in an earlier run, and without such proof
/// stops the run with exit 78, blaming no upload. (A single forged upload in a quiet night
/// therefore cannot stop the job once any genuine one was ever verified.)
///
/// Concurrency: `verify` runs on the reader's thread; the counters and the held records sit
/// behind a `Mutex`, so `finish` may run on another thread once the reader is done.
final class SignedUploads: Sendable {
    private let verifier: SignedDataVerifier
    private let bundleIDs: Set<String>?
    private let runID: Int64
    /// Where the roots came from, for the one line of exit 78.
    private let rootsSource: String

    private struct State {
        var verified = 0
        var rejected = 0
        var held: [AnswerRecord] = []
    }
    private let state = Mutex(State())

    init(settings: JobSettings, runID: Int64) {
        verifier = settings.signedData
        bundleIDs = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        self.runID = runID
        rootsSource = settings.rootCertificatesSource
    }

    /// Signed transactions verified and rejected in this run (held records not yet counted).
    var counts: (verified: Int, rejected: Int) { state.withLock { ($0.verified, $0.rejected) } }

    /// Verifies one upload and hands its record to `records` (or holds it). Returns the verdict,
    /// nil when the writer has stopped.
    @discardableResult
    func verify(_ job: VerifyJob, records: BlockingQueue<AnswerRecord>) -> Result<SignedTransaction, SignedDataRejection>? {
        var ready: [AnswerRecord] = []
        let result = verify(job, into: &ready)
        return records.push(contentsOf: ready) ? result : nil
    }

    /// Verifies `jobs` and hands their records to `records` in one go (one wake-up of the writer
    /// instead of one per upload). False when the writer has stopped.
    func verify(_ jobs: [VerifyJob], records: BlockingQueue<AnswerRecord>) -> Bool {
        var ready: [AnswerRecord] = []
        ready.reserveCapacity(jobs.count)
        // By index: the jobs are read in place, not copied one by one.
        for i in jobs.indices { verify(jobs[i], into: &ready) }
        return records.push(contentsOf: ready)
    }

    /// Verifies one upload; its record (and any held ones it releases) go to `ready`.
    @discardableResult
    private func verify(_ job: VerifyJob, into ready: inout [AnswerRecord]) -> Result<SignedTransaction, SignedDataRejection> {
        let started = DispatchTime.now().uptimeNanoseconds
        let result = verifier.verifyTransaction(job.receiptData, bundleIDs: bundleIDs)
        let elapsed = Int((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        let record = AnswerRecord(
            signed: job, result: result, runID: runID, elapsedMs: elapsed,
            now: EpochMillis(Date().timeIntervalSince1970 * 1000))
        let held: [AnswerRecord]? = state.withLock { s in
            switch result {
            case .success:
                s.verified += 1
                guard !s.held.isEmpty else { return [] }
                defer { s.held = [] }
                return s.held
            case .failure(.unknownRoot) where s.verified == 0:
                s.held.append(record)
                return nil
            case .failure:
                s.rejected += 1
                return []
            }
        }
        // Held records (released by the first upload that verifies) go before this one.
        if let held {
            ready += held
            ready.append(record)
        }
        return result
    }

    /// After the last upload: releases the held records once the roots are proven right (by an
    /// upload of this run, or one verified in an earlier run), else throws exit 78.
    func finish(records: BlockingQueue<AnswerRecord>, db: PGConnection, settings: JobSettings) throws {
        let held: [AnswerRecord] = state.withLock { s in
            defer { s.held = [] }
            return s.held
        }
        guard !held.isEmpty else { return }
        if try counts.verified == 0 && !rootsProvedByEarlierRun(db: db, settings: settings) {
            throw JobError(
                .configuration,
                "no signed transaction verifies against the configured roots "
                    + "(\(rootsSource)): \(held.count) failed on the root and none was rejected; "
                    + "set IAP_ROOT_CERTIFICATES to the PEM files of the right roots, or unset it for Apple Root CA - G3")
        }
        state.withLock { $0.rejected += held.count }
        for r in held {
            guard records.push(r) else { throw JobError(.failure, "recording App Store answers failed") }
        }
    }

    /// A signed transaction an earlier run verified still verifies with today's roots.
    private func rootsProvedByEarlierRun(db: PGConnection, settings: JobSettings) throws -> Bool {
        let job = settings.jobSchema.sql
        let result = try db.query(
            """
            SELECT r.receipt_data FROM \(job).receipt_state s
            JOIN \(ident: settings.sourceSchema).iap_receipts r ON r.receipt_id = s.receipt_id
            WHERE s.kind = 'signed_transaction' AND s.verdict = 'valid' AND r.receipt_data IS NOT NULL
            ORDER BY s.last_attempt_at DESC LIMIT 3
            """)
        for row in 0..<result.rowCount {
            guard let data = result.value(row, 0) else { continue }
            if case .success = verifier.verifyTransaction(data, bundleIDs: nil) { return true }
        }
        return false
    }
}
