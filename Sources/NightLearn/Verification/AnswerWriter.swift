import Foundation
import JobStore
import Logging
import Postgres
import Synchronization

/// Commits answer records in small groups on its own connection and thread: a kill loses at most
/// what was in flight and the last group. Each group is one transaction (`StagedAnswers`).
final class AnswerWriter: Sendable {
    /// Records per transaction, at most: they are merged as sets (migration 12), so a larger group
    /// costs Postgres less per record; the writer takes what has queued, so at the App Store's
    /// pace groups stay small and each answer is committed soon after it arrives.
    static let groupSize = 512
    /// How long a small batch waits for more before it is stored.
    static let lingerMs: UInt32 = 25

    private let queue: BlockingQueue<AnswerRecord>
    private let settings: JobSettings
    private let done = DispatchSemaphore(value: 0)
    private let failure = Mutex<Error?>(nil)

    init(queue: BlockingQueue<AnswerRecord>, settings: JobSettings) {
        self.queue = queue
        self.settings = settings
    }

    /// The first error of the writer thread, once `waitUntilDone` returned.
    var error: Error? { failure.withLock { $0 } }

    func start() {
        let thread = Thread { [self] in
            defer { done.signal() }
            do {
                let db = try JobDatabase.connect(settings)
                defer { db.close() }
                try StagedAnswers.prepare(db, schema: settings.jobSchema)
                var encoder = CopyTextEncoder()
                var stagedSinceVacuum = 0
                while true {
                    let waiting = queue.waitForItems(timeoutMs: 200)
                    if waiting == 0 {
                        if queue.isClosedAndEmpty { break }
                        continue
                    }
                    // At the App Store's pace answers come a few at a time: a short wait gathers a
                    // group's worth of round trips into one (each answer is still stored within
                    // about `linger` of its arrival). Then all of them at once: one copy of each
                    // record out of the queue, where a part and then the rest made two.
                    if waiting < Self.groupSize && !queue.isClosedAndEmpty {
                        usleep(Self.lingerMs * 1000)
                    }
                    let batch = queue.popAll(timeoutMs: 0)
                    for group in StagedAnswers.groups(batch, size: Self.groupSize) {
                        try StagedAnswers.record(group, db: db, schema: settings.jobSchema, encoder: &encoder)
                        stagedSinceVacuum += group.count
                        if stagedSinceVacuum >= StagedAnswers.answersBetweenVacuums {
                            try StagedAnswers.vacuum(db)
                            stagedSinceVacuum = 0
                        }
                    }
                }
            } catch {
                failure.withLock { $0 = $0 ?? error }
                queue.close()
            }
        }
        thread.start()
    }

    func waitUntilDone() { done.wait() }
}
