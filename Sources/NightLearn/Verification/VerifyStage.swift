import AppStore
import Foundation
import JobStore
import Logging
import Postgres
import Reconciliation
import StoreIO
import Synchronization

/// What the verification stage did, for the ledger, the summary and the tests.
public struct VerifyCounts: Sendable, Equatable {
    public var candidates = 0
    public var sweep = 0
    public var requests = 0
    public var ok = 0
    public var rejected = 0
    public var switched = 0
    public var retried = 0
    public var unresolved = 0
    public var config = 0
    /// StoreKit 2 uploads verified offline: valid, and definitively rejected.
    public var signedVerified = 0
    public var signedRejected = 0
    /// App receipts verified on our machine (`--receipts`): valid; rejected, by reason; left
    /// unresolved (`offline`); passed on to verifyReceipt, by cause (`auto`).
    public var receiptsOffline = 0
    public var receiptsOfflineRejected: [String: Int] = [:]
    public var receiptsOfflineUnsettled = 0
    public var receiptsToVerifyReceipt: [String: Int] = [:]
    /// Server API answers 429 (rate limited), and requests sent to it.
    public var rateLimited = 0
    public var apiRequests = 0
    public var seconds = 0.0

    /// Nothing verified yet.
    public init() {}
}

/// Contract §2–§3: select the unresolved receipts and the refund sweep, ask the App Store
/// concurrently, and persist every answer as it arrives.
///
/// Selection (`ReceiptSelection`) → a bounded queue filled by a reader thread on its own
/// connection → the App Store transport on the calling thread (`AppStoreTransport`, which owns the
/// libcurl multi handle) → a bounded queue → the answer writer on its own connection and thread
/// (`AnswerWriter`). Memory is bounded by the queues, not by the number of receipts.
public final class VerifyStage {
    let settings: JobSettings
    let logger: Logger
    let runID: Int64

    public init(settings: JobSettings, runID: Int64, logger: Logger) {
        self.settings = settings
        self.runID = runID
        self.logger = logger
    }

    /// What the reader thread reports back.
    private final class ReaderOutcome: Sendable {
        let read = Atomic<Int>(0)
        let failure = Mutex<Error?>(nil)
    }

    public func run(db: PGConnection) throws -> VerifyCounts {
        let started = Date()
        let selection = ReceiptSelection(settings: settings)
        let progress = StageProgress(stage: "verify", enabled: settings.progress)
        var counts = VerifyCounts()
        // The sweep list is small; the unresolved receipts stream, and the reader tells their
        // number when it has read them all (no second pass to count them). Swept signed
        // transactions go to the Server API (they are in the list only when it is configured).
        // `--receipts offline` asks verifyReceipt nothing: the app receipts' refund sweep is not
        // done (skipped_checks).
        let offlineOnly = settings.receipts == .offline
        let swept = settings.sweepLimit > 0 ? try selection.sweepJobs(db) : []
        var sweep: [VerifyJob] = [], apiSweep: [VerifyJob] = []
        for var job in swept {
            if job.signed || SignedDataVerifier.isJWS(job.receiptData) {
                job.signed = true
                apiSweep.append(job)
            } else if !offlineOnly {
                sweep.append(job)
            }
        }
        counts.sweep = sweep.count + apiSweep.count
        logger.info("verification starting", metadata: ["sweep": "\(swept.count)"])

        // By weight too: an app receipt of 200 purchases is 100 KB of base64 and its record 200
        // transactions, so a queue counted in items alone grew with the receipts' size.
        let input = BlockingQueue<VerifyJob>(
            capacity: max(256, settings.concurrency * 8), weightLimit: 8 << 20, weight: { $0.receiptData.utf8.count })
        let records = BlockingQueue<AnswerRecord>(capacity: 50_000, weightLimit: 20_000, weight: { 1 + ($0.txs?.count ?? 0) })
        let writer = AnswerWriter(queue: records, settings: settings)
        writer.start()
        let signed = SignedUploads(settings: settings, runID: runID)
        let appReceipts = AppReceipts(settings: settings, runID: runID)
        let offline = settings.receipts != .verifyReceipt
        // StoreKit 2 uploads need no request, nor do app receipts verified on our machine: the
        // reader hands them to a verifier on each core (the signature check is the stage's CPU),
        // which takes them a few at a time and hands their records to the writer together; an app
        // receipt it cannot settle goes on to verifyReceipt (`auto`).
        // 1,024 uploads (about 4 MB) keep both verifiers fed between the reader's turns; a deeper
        // queue only faulted in more fresh memory for the uploads' bytes (4,096: 13 MB more RSS).
        let uploads = BlockingQueue<VerifyJob>(
            capacity: 1024, weightLimit: 8 << 20, weight: { $0.receiptData.utf8.count + ($0.receiptBytes?.count ?? 0) })
        let verifiers = DispatchGroup()
        for _ in 0..<max(1, ProcessInfo.processInfo.activeProcessorCount) {
            verifiers.enter()
            let verifier = Thread {
                defer { verifiers.leave() }
                while true {
                    // Up to 128 at a time: one hand-off from the reader and one to the writer per
                    // batch (32 cost measurably more hand-offs on two cores).
                    // And at most 1 MB of them: 128 receipts of 200 purchases are 14 MB of base64.
                    let jobs = uploads.pop(max: 128, maxWeight: 1 << 20, timeoutMs: 200)
                    guard !jobs.isEmpty else {
                        if uploads.isClosedAndEmpty { return }
                        continue
                    }
                    // false or nil: the writer (or the transport) has stopped; so does the reader,
                    // on its next push.
                    // Split only when mixed (each split copied every job).
                    let uploaded: [VerifyJob], receipts: [VerifyJob]
                    if !jobs.contains(where: \.signed) {
                        (uploaded, receipts) = ([], jobs)
                    } else if jobs.allSatisfy(\.signed) {
                        (uploaded, receipts) = (jobs, [])
                    } else {
                        (uploaded, receipts) = (jobs.filter(\.signed), jobs.filter { !$0.signed })
                    }
                    guard uploaded.isEmpty || signed.verify(uploaded, records: records) else { uploads.close(); return }
                    var settled = uploaded.count
                    if !receipts.isEmpty {
                        guard let n = appReceipts.verify(receipts, records: records, verifyReceipt: input) else {
                            uploads.close()
                            return
                        }
                        settled += n
                    }
                    progress.tick(settled)
                }
            }
            verifier.stackSize = 1 << 20
            verifier.start()
        }

        let outcome = ReaderOutcome()
        let sweptCount = counts.sweep
        let reader = Thread { [settings, candidateSQL = selection.candidateSQL, sweep] in
            do {
                let rdb = try JobDatabase.connect(settings)
                defer { rdb.close() }
                // Binary COPY: the uploads' 3,600 bytes are found by their length, not scanned.
                var form = SignedDataVerifier.FormCheck()
                try rdb.copyOutBinary(candidateSQL, columns: ReceiptSelection.candidateColumns) { row in
                    guard let job = ReceiptSelection.job(fromCandidate: row, decoding: offline, check: &form) else {
                        return
                    }
                    outcome.read.add(1, ordering: .relaxed)
                    // A StoreKit 2 upload needs no request: to a verifier; so does an app receipt
                    // (decoded by now), unless `--receipts verify-receipt`.
                    if job.signed || offline {
                        guard uploads.push(job) else { return }
                    } else {
                        guard input.push(job) else { return }
                    }
                }
            } catch {
                outcome.failure.withLock { $0 = error }
            }
            uploads.close()
            // The verifiers pass receipts on to verifyReceipt until they are done with the last.
            verifiers.wait()
            progress.setTotal(outcome.read.load(ordering: .relaxed) + sweptCount)
            for job in sweep { guard input.push(job) else { break } }
            input.close()
        }
        reader.stackSize = 1 << 20
        reader.start()

        var loopError: Error?
        do {
            try VerifyRequests.run(
                .receipts(settings), input: input,
                transport: AppStoreTransport(settings: settings, service: VerifyAsking.receipts(settings).service),
                runID: runID, progress: progress, records: records, counts: &counts)
            // The loop ends once the reader closed its queue: every upload has been read; the
            // verifiers end once they checked the last.
            verifiers.wait()
            try signed.finish(records: records, db: db, settings: settings)
            try appReceipts.finish(records: records)
            if let api = settings.serverAPI, !apiSweep.isEmpty {
                try sweepWithServerAPI(
                    apiSweep, api: api, signed: signed, records: records, progress: progress,
                    counts: &counts)
            }
        } catch {
            loopError = error
        }
        input.close()
        uploads.close()
        verifiers.wait()
        records.close()
        writer.waitUntilDone()
        progress.finish()
        counts.candidates = outcome.read.load(ordering: .relaxed)
        (counts.signedVerified, counts.signedRejected) = signed.counts
        let offlineCounts = appReceipts.counts
        counts.receiptsOffline = offlineCounts.verified
        counts.receiptsOfflineRejected = offlineCounts.rejected
        counts.receiptsOfflineUnsettled = offlineCounts.unsettled
        counts.receiptsToVerifyReceipt = offlineCounts.toVerifyReceipt
        counts.seconds = Date().timeIntervalSince(started)
        if let error = outcome.failure.withLock({ $0 }) { throw JobError.from(error, doing: "reading receipts to verify") }
        if let error = writer.error { throw JobError.from(error, doing: "recording App Store answers") }
        if let loopError { throw loopError }
        return counts
    }

    /// The refund sweep of signed transactions: Get Transaction Info for each (its current state),
    /// through the same transport, within the job's rate budget. An upload settled at upload
    /// and never verified is verified offline first (that is how its transaction id is known).
    private func sweepWithServerAPI(
        _ jobs: [VerifyJob], api: ServerAPISettings, signed: SignedUploads,
        records: BlockingQueue<AnswerRecord>, progress: StageProgress,
        counts: inout VerifyCounts
    ) throws {
        let queue = BlockingQueue<VerifyJob>(capacity: jobs.count + 1)
        for var job in jobs {
            if job.transactionID == nil {
                guard let verified = signed.verify(job, records: records) else { break }
                guard case .success(let transaction) = verified else { continue }
                job.transactionID = transaction.transaction.transactionID
                job.environment = transaction.transaction.environment
                job.retry.switched = true
            }
            _ = queue.push(job)
        }
        queue.close()
        var transport = AppStoreTransport(settings: settings, service: VerifyAsking.signedTransactions(settings).service)
        transport.serverAPI = api
        transport.rates = api.rates
        let before = counts.requests
        try VerifyRequests.run(
            .signedTransactions(settings), input: queue, transport: transport, runID: runID,
            progress: progress, records: records, counts: &counts)
        counts.apiRequests += counts.requests - before
    }
}
