// Where the decide stage's findings go: `FindingWriter` turns a family's decision into rows on a
// thread of its own, `FindingSink` streams them into `{S}.current_findings`.

import Foundation
import JobStore
import NightLearn
import Postgres
import Reconciliation
import Synchronization

/// Writes what the rules found in a family (its rows to the sink, its compensation candidates to
/// the spool) and counts its grants' tally buckets, on a thread of its own: the thread that merges
/// the families and applies the rules was the one the family streams waited for (both Postgres
/// backends in `ClientWrite`), and writing the rows was over half its work.
/// Families arrive in batches, in order; one thread writes them, so the sink
/// and the spool are used by one thread at a time (the stage's again after `finish`).
final class FindingWriter: @unchecked Sendable {
    struct Family: Sendable {
        let decision: FamilyDecision
        /// Each grant of the family, in its order, and whether it is `kept` when the rules take it
        /// for no finding.
        let grants: [(id: String, kept: Bool)]
    }

    private let queue = BlockingQueue<[Family]>(capacity: 8)
    private var pending: [Family] = []
    private let failure = Mutex<(any Error)?>(nil)
    private let done = DispatchSemaphore(value: 0)
    /// Written by the writing thread only; read after it ended.
    private var buckets: [String: Int] = [:]
    private var ended = false

    init(sink: FindingSink, spool: CompensationSpool) {
        Thread { [self] in
            do {
                while true {
                    guard let batch = queue.pop(timeoutMs: 1000) else {
                        if queue.isClosedAndEmpty { break }
                        continue
                    }
                    for family in batch { try write(family, sink: sink, spool: spool) }
                }
            } catch {
                failure.withLock { $0 = error }
                queue.close()
            }
            done.signal()
        }.start()
    }

    private func write(_ family: Family, sink: FindingSink, spool: CompensationSpool) throws {
        let decided = family.decision
        for c in decided.compensations {
            // Alone, a candidate gets its exact order or `none`; `none` ones are matched later.
            let row = Decide.matchOrders([c], openOrders: [])[0]
            if let order = c.exactOrder {
                try sink.add(report: .compensate, key: row.findingKey, cells: row.cells)
                try spool.exact(orderID: order.orderID)
            } else {
                try spool.candidate(c, row: row)
            }
        }
        for d in decided.duplicates { try sink.add(report: .duplicateGrants, key: d.findingKey, cells: d.cells) }
        for c in decided.clawbacks { try sink.add(report: .clawback, key: c.findingKey, cells: c.cells) }
        for u in decided.unattributed { try sink.add(report: .unattributed, key: u.findingKey, cells: u.cells) }
        let clawedBack: Set<String> = decided.clawbacks.isEmpty ? [] : Set(decided.clawbacks.map(\.grantID))
        let duplicated: Set<String> = decided.duplicates.isEmpty ? [] : Set(decided.duplicates.map(\.grantID))
        for (id, kept) in family.grants {
            buckets[Self.bucket(id, kept: kept, clawedBack: clawedBack, duplicated: duplicated), default: 0] += 1
        }
    }

    /// A decided grant's bucket in the conservation tally, tried in the tally's order
    /// (Conservation.buckets): clawed back, a duplicate, else kept or unverified (`kept`).
    static func bucket(_ grantID: String, kept: Bool, clawedBack: Set<String> = [], duplicated: Set<String> = []) -> String {
        clawedBack.contains(grantID)
            ? "clawed_back"
            : duplicated.contains(grantID)
                ? "duplicate"
                : kept ? "kept" : "unverified"
    }

    /// Hands a family over; throws what the writing thread met, once it has stopped.
    func add(_ family: Family) throws {
        pending.append(family)
        guard pending.count >= 256 else { return }
        let batch = pending
        pending = []
        pending.reserveCapacity(256)
        if !queue.push(batch) { try end() }
    }

    /// Writes the rest and waits for the thread; returns the grants' buckets it counted.
    func finish() throws -> [String: Int] {
        if !pending.isEmpty {
            let batch = pending
            pending = []
            queue.push(batch)
        }
        try end()
        return buckets
    }

    /// Stops the thread when the stage left early (what it had not written is dropped with the
    /// sink's transaction).
    func stop() { try? end() }

    private func end() throws {
        if !ended {
            ended = true
            queue.close()
            done.wait()
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }
}

/// Streams findings into `{S}.current_findings` over its own connection (one COPY per run).
/// Used by one thread at a time: the stage's, or its FindingWriter's while that one runs.
/// The table is emptied before the sink's transaction, not in it (`empty`): the TRUNCATE would
/// lock it until the commit, and refunds.csv's rows are added on another session meanwhile.
/// Nothing reads the table before the stage ends, and every run empties it first.
final class FindingSink: @unchecked Sendable {
    /// The findings table's cells (`c1`…): the widest findings report's, made by migration 10.
    static let maxCells = ReportFile.findingsCells
    private let db: PGConnection
    private let schema: JobSchema
    private var pending: [[String?]] = []
    private var started = false

    init(settings: JobSettings) throws {
        schema = settings.jobSchema
        db = try JobDatabase.connect(settings)
    }

    /// Empties the table, before the sink's transaction and the refunds' rows (the night's plan:
    /// step `empty findings`).
    static func empty(_ db: PGConnection, schema: JobSchema) throws {
        try db.execute("TRUNCATE \(schema.sql).current_findings")  // made by migration 10
    }

    func begin() throws {
        try db.execute("BEGIN")
        started = true
    }

    func add(report: ReportFile, key: String, cells: [String]) throws {
        var row: [String?] = [report.rawValue, key]
        row.append(contentsOf: cells.map { Optional($0) })
        while row.count < 2 + FindingSink.maxCells { row.append(nil) }
        pending.append(row)
        if pending.count >= 2000 { try flushPending() }
    }

    private func flushPending() throws {
        guard !pending.isEmpty else { return }
        let rows = pending
        pending.removeAll(keepingCapacity: true)
        try db.copyIn("COPY \(schema.sql).current_findings FROM STDIN") { w in
            for row in rows { try w.row(row) }
        }
    }

    func commit() throws {
        try flushPending()
        try db.execute("COMMIT")
        started = false
    }

    func close() {
        if started { try? db.execute("ROLLBACK") }
        db.close()
    }
}
