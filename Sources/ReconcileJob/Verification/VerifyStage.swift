import AppStore
import Foundation
import Logging
import Postgres
import Reconciliation
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
    public var seconds = 0.0
}

/// Contract §2–§3: select the unresolved receipts and the refund sweep, ask the App Store
/// concurrently, and persist every answer as it arrives.
///
/// Selection (`ReceiptSelection`) → a bounded queue filled by a reader thread on its own
/// connection → the request loop on the calling thread (`RequestLoop`, which owns the libcurl
/// multi handle) → a bounded queue → the answer writer on its own connection and thread
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
        let progress = Progress(stage: "verify", enabled: settings.progress)
        var counts = VerifyCounts()
        // The sweep list is small; the unresolved receipts stream, and the reader tells their
        // number when it has read them all (no second pass to count them).
        let sweep = settings.sweepLimit > 0 ? try selection.sweepJobs(db) : []
        counts.sweep = sweep.count
        logger.info("verification starting", metadata: ["sweep": "\(sweep.count)"])

        let input = BlockingQueue<VerifyJob>(capacity: max(256, settings.concurrency * 8))
        let outcome = ReaderOutcome()
        let reader = Thread { [settings, candidateSQL = selection.candidateSQL] in
            do {
                let rdb = try JobDatabase.connect(settings)
                defer { rdb.close() }
                try rdb.copyOut("COPY (\(candidateSQL)) TO STDOUT") { line in
                    if let job = ReceiptSelection.job(fromCopyLine: line, sweep: false) {
                        outcome.read.add(1, ordering: .relaxed)
                        guard input.push(job) else { return }
                    }
                }
            } catch {
                outcome.failure.withLock { $0 = error }
            }
            progress.setTotal(outcome.read.load(ordering: .relaxed) + sweep.count)
            for job in sweep { guard input.push(job) else { break } }
            input.close()
        }
        reader.stackSize = 1 << 20
        reader.start()

        let records = BlockingQueue<AnswerRecord>(capacity: 50_000)
        let writer = AnswerWriter(queue: records, settings: settings)
        writer.start()

        let loop = RequestLoop(
            client: VerifyReceiptClient(settings: settings),
            policy: RetryPolicy(maxAttempts: settings.maxAttempts, retryBaseMs: settings.retryBaseMs,
                                retryDelayMinutes: settings.retryDelayMinutes),
            concurrency: settings.concurrency, runID: runID, progress: progress)
        var loopError: Error?
        do {
            try loop.run(input: input, records: records, counts: &counts)
        } catch {
            loopError = error
        }
        input.close()
        records.close()
        writer.waitUntilDone()
        progress.finish()
        counts.candidates = outcome.read.load(ordering: .relaxed)
        counts.seconds = Date().timeIntervalSince(started)
        if let error = outcome.failure.withLock({ $0 }) { throw JobError.from(error, doing: "reading receipts to verify") }
        if let error = writer.error { throw JobError.from(error, doing: "recording App Store answers") }
        if let loopError { throw loopError }
        return counts
    }
}
