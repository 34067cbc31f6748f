// The two kinds of family rows, `T` (Apple transactions) and `G` (grants), each sorted by family
// key and read on a session and a thread of its own, so Postgres builds and sorts both at once on
// the machine's two cores and the rows are parsed beside the rules (one
// query with a UNION ALL made one backend do all of it, then sort the
// union). The decide stage merges the two streams by key into families.

import Foundation
import JobStore
import NightLearn
import Postgres
import Reconciliation
import Synchronization

final class FamilyStream: @unchecked Sendable {
    enum Fact: Sendable {
        case transaction(KnownTransaction)
        /// `kept`: the grant is revoked, or Apple or a receipt knows it (the tally's bucket `kept`
        /// when the rules take it for no finding).
        case grant(GrantFacts, kept: Bool)
        /// A row whose quiet flag is set (`TransactionColumn.settled`, `GrantColumn.onlyGrant`), as
        /// COPY sent it: read only if its family is not quiet (`isQuiet`, `row(_:)`).
        case unread([UInt8])
    }

    /// A family no rule finds anything in: its only transaction is `settled` (production, neither
    /// refunded nor revoked, covered by one active grant of its own) and its only grant is that
    /// grant. So: nothing to compensate (covered), no duplicate (one grant), nothing to claw back
    /// (the grant's transaction stands, Apple showed it, in production), nothing unattributed (a
    /// grant). Its grant is `kept` (Apple knows its transaction). Four in five families on the
    /// benchmark's data: their rows are not read, and the rules do not run.
    /// `unreadTransactions`/`unreadGrants` are the family's rows of each kind
    /// with the flag set, `transactions`/`grants` the count of those without it.
    static func isQuiet(unreadTransactions: Int, unreadGrants: Int, transactions: Int, grants: Int) -> Bool {
        unreadTransactions == 1 && unreadGrants == 1 && transactions == 0 && grants == 0
    }

    /// A line read whole, its product looked up in `products`: nil when its key or a required
    /// field is missing (FamilyRow).
    static func row(_ line: UnsafeBufferPointer<UInt8>, products: ProductCatalog) -> Row? {
        guard let row = FamilyRow(line), let key = row.key else { return nil }
        if row.isTransaction, let t = row.transaction(products) { return Row(key: key, fact: .transaction(t)) }
        if row.isGrant, let g = row.grant(products) {
            return Row(key: key, fact: .grant(g, kept: row[GrantColumn.tallyKept] == "t"))
        }
        return nil
    }

    struct Row: Sendable {
        let key: String
        let fact: Fact
    }

    /// Batches of rows in key order. A row is an optional so that the reader can move it out with
    /// `take()`: no retain and release of its strings on the merging thread, and no reversal here.
    private let queue = BlockingQueue<[Row?]>(capacity: 8)
    private let failure = Mutex<(any Error)?>(nil)
    /// Rows that could not be read (no key, a missing required field): logged by the stage.
    let problems = Atomic<Int>(0)
    /// Every row Postgres sent.
    let rows = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)
    /// The current batch, and the place of its next row.
    private var batch: [Row?] = []
    private var batchNext = 0
    private var finished = false

    /// Starts reading `sql`'s rows at once, after running `prepare` (statements that make what
    /// `sql` reads, on the stream's own session). `keepRows: false` parses nothing and only counts
    /// (`run --database-only`, the benchmark's measure of Postgres alone). `sorted` is called once,
    /// on the reading thread, when the first row arrives (Postgres has sorted them all) or, if
    /// none does, when the query ends or fails.
    init(
        sql: SQL, prepare: SQL = "", products: ProductCatalog, settings: JobSettings, keepRows: Bool = true,
        sorted: @escaping @Sendable () -> Void = {}
    ) {
        let thread = Thread { [self] in
            var announced = false
            defer { if !announced { sorted() } }
            do {
                let db = try JobDatabase.connect(settings)
                defer { db.close() }
                try NightTables.use(db, schema: settings.jobSchema)
                // The two streams already keep both cores busy: parallel workers on top of them
                // made the stage slower.
                try db.execute("SET max_parallel_workers_per_gather = 0")
                if !prepare.isEmpty { try db.execute(prepare) }
                var pending: [Row?] = []
                pending.reserveCapacity(1024)
                var stopped = false
                try db.copyOut("COPY (\(sql)) TO STDOUT") { line in
                    if !announced { announced = true; sorted() }
                    rows.add(1, ordering: .relaxed)
                    // After the consumer left the rest is drained unread (libpq cannot cut a COPY short).
                    guard keepRows, !stopped else { return }
                    // A row with its quiet flag set waits, unread but for its key, for its family
                    // (a key with an escape is read the usual way).
                    if FamilyRow.quietFlag(line), let key = FamilyRow.plainKey(line) {
                        pending.append(Row(key: key, fact: .unread(Array(line))))
                    } else if let row = Self.row(line, products: products) {
                        pending.append(row)
                    } else {
                        problems.add(1, ordering: .relaxed)
                    }
                    if pending.count >= 1024 {
                        stopped = !queue.push(pending)
                        pending = []
                        pending.reserveCapacity(1024)
                    }
                }
                if !pending.isEmpty, !stopped { queue.push(pending) }
            } catch {
                failure.withLock { $0 = error }
            }
            queue.close()
            done.signal()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// The next row in key order; nil after the last. Throws what the reading thread met.
    func next() throws -> Row? {
        while batchNext == batch.count {
            if let b = queue.pop(timeoutMs: 1000) {
                batch = b
                batchNext = 0
            } else if queue.isClosedAndEmpty {
                if let error = failure.withLock({ $0 }) { throw error }
                return nil
            }
        }
        defer { batchNext += 1 }
        return batch[batchNext].take()
    }

    /// Waits for the reading thread (it stops parsing at once and drains the COPY when rows are
    /// left). Call once, when done with the stream.
    func finish() {
        guard !finished else { return }
        finished = true
        queue.close()
        done.wait()
    }
}

extension String {
    /// Byte order of the UTF-8, as Postgres's `COLLATE "C"` sorts. (One `memcmp` over contiguous
    /// UTF-8, which every string read from Postgres is; the generic comparison of the two views
    /// byte by byte was 3% of the job's CPU, on the merging thread.)
    func precedesInC(_ other: String) -> Bool {
        if let order = compareBytes(other) { return order < 0 }
        return utf8.lexicographicallyPrecedes(other.utf8)
    }

    func equalsInC(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        if let order = compareBytes(other) { return order == 0 }
        return utf8.elementsEqual(other.utf8)
    }

    /// <0, 0 or >0 as `self`'s UTF-8 sorts before, with or after `other`'s; nil when either is
    /// not stored contiguously (a bridged string).
    private func compareBytes(_ other: String) -> Int? {
        utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b -> Int in
                let common = min(a.count, b.count)
                let order = common == 0 ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, common))
                return order != 0 ? order : a.count - b.count
            }
        } ?? nil
    }
}
