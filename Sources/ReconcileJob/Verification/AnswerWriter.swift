import Foundation
import Logging
import Postgres
import Synchronization

/// Commits answer records in small groups on its own connection and thread: a kill loses at most
/// what was in flight and the last group. Each group is one call of `record_answers(jsonb)`.
final class AnswerWriter: Sendable {
    /// Records per round trip, at most: `record_answers` applies them as sets (migration 11), so a
    /// larger group costs Postgres less per record; the writer takes what has queued, so at the
    /// App Store's pace groups stay small and each answer is committed soon after it arrives.
    static let groupSize = 512

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
                let sql = "SELECT \(settings.jobSchema.quoted).record_answers($1::jsonb)"
                while true {
                    let batch = queue.popAll(timeoutMs: 200)
                    if batch.isEmpty {
                        if queue.isClosedAndEmpty { break }
                        continue
                    }
                    var start = 0
                    while start < batch.count {
                        let end = min(batch.count, start + Self.groupSize)
                        let json = AnswerRecord.jsonArray(batch[start..<end])
                        try db.query(sql, [String(decoding: json, as: UTF8.self)])
                        start = end
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
