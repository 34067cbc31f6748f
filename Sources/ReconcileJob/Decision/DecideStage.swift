import Foundation
import Logging
import Postgres
import Reconciliation
import Synchronization

/// Contract §4 at scale. Postgres does the joins (set-based, on cleaned copies of the source
/// relations) and streams the two kinds of family rows sorted by key, merged into *families* in
/// Swift (FamilyStreams.swift); the core (`Decide`) applies the rules to
/// one family at a time; findings stream back into `{S}.current_findings` on a second
/// connection. Memory holds one family, then one user and product of the inferred order match
/// (which crosses families: InferredMatch.swift), never the input rows or all the findings.
public final class DecideStage {
    let settings: JobSettings
    let logger: Logger
    let runID: Int64
    var S: String { settings.jobSchema.quoted }
    var src: String { "\"\(settings.sourceSchema)\"" }

    public struct Result {
        public var families = 0
        /// Families no rule finds anything in, counted without reading their rows (FamilyStream.isQuiet);
        /// most of them Postgres does not even send (DecideStage.crowdedKeysSQL).
        public var quietFamilies = 0
        /// The conservation tally's buckets of the grants (`Conservation`), counted here, where
        /// the rules see every clean grant once.
        public var grantBuckets: [String: Int] = [:]
    }

    public init(settings: JobSettings, runID: Int64, logger: Logger) {
        self.settings = settings
        self.runID = runID
        self.logger = logger
    }

    // MARK: The stage

    /// `databaseOnly`: run exactly the same SQL and read every row, but apply no rule and write
    /// nothing (the benchmark's measure of what Postgres itself needs). `afterCopies` is called
    /// once the copies of the source relations are made (Night.swift counts the receipts then).
    public func run(db: PGConnection, databaseOnly: Bool = false, afterCopies: () -> Void = {}) throws -> Result {
        let progress = Progress(stage: "decide", enabled: settings.progress)
        var result = Result()
        try NightTables.create(db, schema: settings.jobSchema)
        try db.execute(productsSQL)
        let products = try ProductCatalog.load(db)
        // The crowded keys read the source grants, not their copy: they are made beside the copies.
        try NightTables.executeInParallel(try copiesSQL(db) + [crowdedKeysSQL], settings: settings)
        afterCopies()
        // Both kinds of rows at once, each on its own session (FamilyStreams.swift). The grants'
        // query reads only the copies and what was learned from Apple: it starts now, beside the
        // input checks and the attribution on this session, which used one core of two, and the
        // `T` query, which reads `who`, starts after them.
        let grants = FamilyStream(sql: grantRowsSQL, prepare: unknownGrantsSQL, products: products,
                                  settings: settings, keepRows: !databaseOnly)
        defer { grants.finish() }
        if !databaseOnly {
            try db.execute("DELETE FROM \(S).input_errors")
            try db.execute(inputErrorSQL(duplicated: try duplicatedRelations(db)))
        }
        try prepareTokenOrders(db)
        try db.execute(attributionSQL)
        let transactions = FamilyStream(sql: transactionRowsSQL, products: products, settings: settings,
                                        keepRows: !databaseOnly)
        defer { transactions.finish() }
        // The rows the streams leave out (crowdedKeysSQL) are what they do not send of these.
        let all = try db.query("SELECT (SELECT count(*) FROM \(S).apple_transactions), (SELECT count(*) FROM g)")
        let allTransactions = Int(all.value(0, 0) ?? "") ?? -1, allGrants = Int(all.value(0, 1) ?? "") ?? -1
        if databaseOnly {
            while try transactions.next() != nil {}
            while try grants.next() != nil {}
            result.families = transactions.rows.load(ordering: .relaxed) + grants.rows.load(ordering: .relaxed)
            return result
        }

        // Findings go to a second connection while the first streams families, written on a
        // thread of their own (FindingWriter).
        let sink = try FindingSink(settings: settings)
        defer { sink.close() }
        let decisions = DecisionSettings(asOf: settings.asOf, windowDays: settings.windowDays)
        let spool = try CompensationSpool(settings: settings)
        defer { spool.close() }
        let writer = FindingWriter(sink: sink, spool: spool)
        defer { writer.stop() }
        var current = Family(key: "")
        var currentKept: [Bool] = []  // per grant of `current`: revoked, or Apple or a receipt knows it
        // The family's rows with their quiet flag set, not read yet (FamilyStream.isQuiet).
        var unreadTransactions: [[UInt8]] = []
        var unreadGrants: [[UInt8]] = []
        var unreadable = 0
        var rows = 0
        var progressed = 0
        func flush() throws {
            guard !current.key.isEmpty else { return }
            if FamilyStream.isQuiet(unreadTransactions: unreadTransactions.count, unreadGrants: unreadGrants.count,
                                    transactions: current.transactions.count, grants: current.grants.count) {
                result.families += 1
                result.quietFamilies += 1
                result.grantBuckets["kept", default: 0] += 1
                return
            }
            // Not quiet: its waiting rows are read now. A flagged row is its family's only row of
            // its kind, so the order of each kind stays the streams' order.
            func read(_ line: [UInt8]) -> FamilyStream.Fact? {
                line.withUnsafeBufferPointer { FamilyStream.row($0, products: products) }?.fact
            }
            for line in unreadTransactions {
                if case .transaction(let fact)? = read(line) {
                    current.transactions.append(fact)
                } else { unreadable += 1 }
            }
            for line in unreadGrants {
                if case .grant(let fact, let kept)? = read(line) {
                    current.grants.append(fact)
                    currentKept.append(kept)
                } else { unreadable += 1 }
            }
            let decided = Decide.family(current, settings: decisions)
            result.families += 1
            if decided.compensations.isEmpty && decided.duplicates.isEmpty && decided.clawbacks.isEmpty
                && decided.unattributed.isEmpty {
                // Nothing found (most families): each grant's bucket is `kept` or `unverified`.
                for kept in currentKept { result.grantBuckets[kept ? "kept" : "unverified", default: 0] += 1 }
            } else {
                try writer.add(FindingWriter.Family(
                    decision: decided, grants: zip(current.grants, currentKept).map { ($0.grant.grantID, $1) }))
            }
        }
        try sink.begin()
        // Merge the two sorted streams: each family is every row of the smallest key left.
        var t = try transactions.next()
        var g = try grants.next()
        // Rows are moved out of `t` and `g` (`take()`), not copied: a copy retains and releases
        // each of a row's strings.
        while t != nil || g != nil {
            let key: String
            let tKey = t?.key, gKey = g?.key
            if let tKey, let gKey { key = gKey.precedesInC(tKey) ? gKey : tKey } else { key = (tKey ?? gKey)! }
            try flush()
            current = Family(key: key)
            currentKept.removeAll(keepingCapacity: true)
            unreadTransactions.removeAll(keepingCapacity: true)
            unreadGrants.removeAll(keepingCapacity: true)
            while t?.key.equalsInC(key) == true {
                switch t.take()?.fact {
                case .transaction(let fact)?: current.transactions.append(fact)
                case .unread(let line)?: unreadTransactions.append(line)
                default: unreadable += 1
                }
                rows += 1
                t = try transactions.next()
            }
            while g?.key.equalsInC(key) == true {
                switch g.take()?.fact {
                case .grant(let fact, let kept)?: current.grants.append(fact); currentKept.append(kept)
                case .unread(let line)?: unreadGrants.append(line)
                default: unreadable += 1
                }
                rows += 1
                g = try grants.next()
            }
            if rows / 50_000 != progressed { progressed = rows / 50_000; progress.rows(rows) }
        }
        try flush()
        for (bucket, n) in try writer.finish() { result.grantBuckets[bucket, default: 0] += n }
        // The quiet families Postgres left out: one transaction and one grant each.
        let leftOutTransactions = allTransactions - transactions.rows.load(ordering: .relaxed)
        let leftOutGrants = allGrants - grants.rows.load(ordering: .relaxed)
        guard leftOutTransactions == leftOutGrants, leftOutTransactions >= 0 else {
            throw JobError(.internalCheck, "the family queries left out \(leftOutTransactions) transactions and "
                + "\(leftOutGrants) grants of quiet families, where each has one of both; no report was written")
        }
        result.families += leftOutGrants
        result.quietFamilies += leftOutGrants
        result.grantBuckets["kept", default: 0] += leftOutGrants
        let parseProblems = transactions.problems.load(ordering: .relaxed) + grants.problems.load(ordering: .relaxed) + unreadable
        if parseProblems > 0 { logger.warning("family rows that could not be read", metadata: ["rows": "\(parseProblems)"]) }

        // The inferred order match crosses families: one user and product at a time, from the spool.
        try spool.flush()
        try matchSpooledCandidates(db) { key, cells in try sink.add(report: .compensate, key: key, cells: cells) }
        try sink.commit()
        progress.finish()
        logger.info("decided", metadata: ["families": "\(result.families)", "quiet": "\(result.quietFamilies)", "rows": "\(rows)"])
        return result
    }

    /// Why a finding of an earlier night is gone tonight (closed.csv), judged from the data as it
    /// is now: the purchase left the window (out_of_window), the goods were delivered (granted),
    /// the grant was taken back (revoked), Apple reversed the refund (refund_reversed), or else the
    /// source rows changed (input_changed). The key holds the id after its report's prefix.
    var closedBecauseSQL: String {
        let refundStart = settings.asOf - EpochMillis(settings.refundWindowDays) * 86_400_000
        let id = "split_part(f.finding_key, '|', 2)"
        func apple(_ condition: String) -> String {
            "EXISTS (SELECT 1 FROM \(S).apple_transactions t WHERE t.transaction_id = \(id) AND \(condition))"
        }
        let grantRevoked = "EXISTS (SELECT 1 FROM g WHERE g.grant_id = \(id) AND g.revoked_ms IS NOT NULL)"
        let granted = "EXISTS (SELECT 1 FROM g WHERE g.transaction_id = \(id) AND g.revoked_ms IS NULL)"
        return """
            CASE f.report
                WHEN 'compensate.csv' THEN CASE
                    WHEN \(apple("t.purchase_date_ms < \(settings.windowStart)")) THEN 'out_of_window'
                    WHEN \(granted) THEN 'granted' ELSE 'input_changed' END
                WHEN 'unattributed.csv' THEN CASE
                    WHEN \(apple("t.purchase_date_ms < \(settings.windowStart)")) THEN 'out_of_window'
                    WHEN \(granted) THEN 'granted' ELSE 'input_changed' END
                WHEN 'duplicate_grants.csv' THEN CASE WHEN \(grantRevoked) THEN 'revoked' ELSE 'input_changed' END
                WHEN 'clawback.csv' THEN CASE
                    WHEN \(grantRevoked) THEN 'revoked'
                    WHEN EXISTS (SELECT 1 FROM g JOIN \(S).apple_transactions t ON t.transaction_id = g.transaction_id
                                 WHERE g.grant_id = \(id) AND \(TransactionColumn.reversed)) THEN 'refund_reversed'
                    ELSE 'input_changed' END
                WHEN 'refunds.csv' THEN CASE
                    WHEN \(apple("coalesce(t.cancellation_date_ms, t.revocation_date_ms) < \(refundStart) AND coalesce(t.reversed_date_ms, 0) < \(refundStart)")) THEN 'out_of_window'
                    ELSE 'input_changed' END
                ELSE 'input_changed'
            END
            """
    }

    /// refunds.csv, then the findings history, in one piece of SQL, run once the families are
    /// decided; the receipts' conservation tally, which reads neither, may still be running beside
    /// it on a session of its own (Night.swift). One simple query is one
    /// transaction, so a kill leaves both undone or both done. `first_seen` survives: a finding keeps
    /// the date it first appeared; one that disappears is closed, and reopens with its old
    /// first_seen if it comes back.
    var refundsAndHistorySQL: String {
        let day = "'\(UTC.date(settings.asOf))'::date"
        return """
            \(refundsSQL);
            INSERT INTO \(S).findings AS f (finding_key, report, first_seen, last_seen, closed_on)
            SELECT finding_key, report, \(day), \(day), NULL FROM \(S).current_findings
            ON CONFLICT (finding_key) DO UPDATE SET
                first_seen = least(f.first_seen, EXCLUDED.first_seen),
                last_seen = greatest(f.last_seen, EXCLUDED.last_seen),
                closed_on = NULL;
            UPDATE \(S).findings f SET closed_on = \(day), closed_because = \(closedBecauseSQL)
            WHERE closed_on IS NULL AND first_seen <= \(day)
              AND NOT EXISTS (SELECT 1 FROM \(S).current_findings c WHERE c.finding_key = f.finding_key)
            """
    }
}

/// Writes what the rules found in a family (its rows to the sink, its compensation candidates to
/// the spool) and counts its grants' tally buckets, on a thread of its own: the thread that merges
/// the families and applies the rules was the one the family streams waited for (both Postgres
/// backends in `ClientWrite`), and writing the rows was over half its work (issue "The night at
/// Postgres's floor"). Families arrive in batches, in order; one thread writes them, so the sink
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
        // The grants' buckets, tried in the tally's order (Conservation.buckets).
        let clawedBack: Set<String> = decided.clawbacks.isEmpty ? [] : Set(decided.clawbacks.map(\.grantID))
        let duplicated: Set<String> = decided.duplicates.isEmpty ? [] : Set(decided.duplicates.map(\.grantID))
        for (id, kept) in family.grants {
            let bucket = clawedBack.contains(id) ? "clawed_back" : duplicated.contains(id) ? "duplicate"
                : kept ? "kept" : "unverified"
            buckets[bucket, default: 0] += 1
        }
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
    func stop() {
        guard !ended else { return }
        ended = true
        queue.close()
        done.wait()
    }

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
final class FindingSink: @unchecked Sendable {
    static let maxCells = 15
    private let db: PGConnection
    private let schema: JobSchema
    private var pending: [[String?]] = []
    private var started = false

    init(settings: JobSettings) throws {
        schema = settings.jobSchema
        db = try JobDatabase.connect(settings)
    }

    func begin() throws {
        try db.execute("""
            CREATE UNLOGGED TABLE IF NOT EXISTS \(schema.quoted).current_findings (
                report text NOT NULL, finding_key text NOT NULL,
                c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text,
                c11 text, c12 text, c13 text);
            ALTER TABLE \(schema.quoted).current_findings ADD COLUMN IF NOT EXISTS c14 text, ADD COLUMN IF NOT EXISTS c15 text;
            BEGIN;
            TRUNCATE \(schema.quoted).current_findings;
            """)
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
        try db.copyIn("COPY \(schema.quoted).current_findings FROM STDIN") { w in
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
