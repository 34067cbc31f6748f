import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import StoreIO

/// Contract §4 at scale. Postgres does the joins (set-based, on cleaned copies of the source
/// relations) and streams the two kinds of family rows sorted by key, merged into *families* in
/// Swift (FamilyStreams.swift); the core (`Decide`) applies the rules to
/// one family at a time; findings stream back into `{S}.current_findings` on a second
/// connection. Memory holds one family, then one user and product of the inferred order match
/// (which crosses families: InferredMatch.swift), never the input rows or all the findings.
public final class DecideStage: Sendable {
    let settings: JobSettings
    let logger: Logger
    let runID: Int64
    /// Where the stage's scratch tables live and which Apple transactions it reads: the night's,
    /// or those of a few families for `lookup` (LookupFamilies.swift).
    let scope: Scope
    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }

    public enum Scope: Sendable {
        /// The night: unlogged tables in the job schema, seen by the stage's other sessions
        /// (NightTables.swift), over every Apple transaction the job learned.
        case night
        /// `lookup`: temporary tables of its one session over `pg_temp.lk_apple`, the Apple
        /// transactions of the families it decides; the job schema is only read.
        case lookup
    }

    /// `CREATE \(newTable("x"))`: a scratch table of the scope (with `columns`, e.g. `" (a text)"`).
    func newTable(_ name: SQL, _ columns: SQL = "") -> SQL {
        switch scope {
        case .night: return "UNLOGGED TABLE \(name)\(columns) WITH (autovacuum_enabled = false)"
        case .lookup: return "TEMPORARY TABLE \(name)\(columns)"
        }
    }

    /// The Apple transactions the stage decides from.
    var appleTransactions: SQL {
        switch scope {
        case .night: return "\(S).apple_transactions"
        case .lookup: return "pg_temp.lk_apple"
        }
    }

    public struct Result: Sendable {
        public var families = 0
        /// Families no rule finds anything in, counted without reading their rows (FamilyStream.isQuiet);
        /// most of them Postgres does not even send (DecideStage.crowdedKeysSQL).
        public var quietFamilies = 0
        /// The conservation tally's buckets of the grants (`Conservation`), counted here, where
        /// the rules see every clean grant once.
        public var grantBuckets: [String: Int] = [:]
    }

    public init(settings: JobSettings, runID: Int64, logger: Logger, scope: Scope = .night) {
        self.settings = settings
        self.runID = runID
        self.logger = logger
        self.scope = scope
    }

    // MARK: The stage's steps (the night's plan runs them: NightPlan.swift)

    /// What the steps after `prepare` need of it.
    struct Prepared: Sendable {
        let products: ProductCatalog
        /// The copies of the receipts, the orders and the grants, in that order.
        let copies: [SQL]
        let crowdedKeys: SQL
    }

    /// Drops the working tables of an earlier run, makes the products' and reads their catalog,
    /// and says the statements of the copies (they depend on the source's indexes).
    func prepare(_ db: PGConnection) throws -> Prepared {
        try NightTables.create(db, schema: settings.jobSchema)
        try db.execute(productsSQL)
        let products = try ProductCatalog.load(db)
        return Prepared(
            products: products, copies: try copiesSQL(db),
            crowdedKeys: crowdedKeysSQL(
                transactionIndexed: try indexLed(by: "transaction_id", of: .grants, db),
                counted: counted(SourceCopy.namedTwice)))
    }

    /// input_errors.csv's rows: the copies' bad rows and duplicated keys.
    func recordInputErrors(_ db: PGConnection) throws {
        try db.execute("DELETE FROM \(S).input_errors")
        let play = playViews == nil ? [] : try duplicatedRelations(db, store: .googlePlay)
        try db.run(inputErrorSQL(duplicated: try duplicatedRelations(db), playDuplicated: play))
    }

    /// The families, decided: both kinds of family rows at once, each on a stream of its own
    /// session (FamilyStreams.swift), merged here into families; findings stream into
    /// `current_findings` on a session of their own; then the inferred order match.
    /// `databaseOnly`: run exactly the same SQL and read every row, but apply no rule and write
    /// nothing (the benchmark's measure of what Postgres itself needs). Reaches `grants sorted`
    /// once Postgres has sorted the grants' family rows (their first row arrived, or their query
    /// ended): from then on their session waits for the transactions' sort and a core would idle;
    /// and `merged` when every family is decided, before the inferred order match.
    func decideFamilies(
        _ db: PGConnection, products: ProductCatalog, databaseOnly: Bool = false,
        reached: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> Result {
        let progress = StageProgress(stage: "decide", enabled: settings.progress)
        var result = Result()
        let grants = FamilyStream(
            sql: grantRowsSQL, prepare: unknownFactsSQL, products: products,
            settings: settings, keepRows: !databaseOnly, sorted: { reached("grants sorted") })
        defer { grants.finish() }
        let transactions = FamilyStream(
            sql: transactionRowsSQL, products: products, settings: settings,
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
        let decisions = settings.decisionSettings
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
            if FamilyStream.isQuiet(
                unreadTransactions: unreadTransactions.count, unreadGrants: unreadGrants.count,
                transactions: current.transactions.count, grants: current.grants.count)
            {
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
                } else {
                    unreadable += 1
                }
            }
            for line in unreadGrants {
                if case .grant(let fact, let kept)? = read(line) {
                    current.grants.append(fact)
                    currentKept.append(kept)
                } else {
                    unreadable += 1
                }
            }
            let decided = Decide.family(current, settings: decisions)
            result.families += 1
            if decided.compensations.isEmpty && decided.duplicates.isEmpty && decided.clawbacks.isEmpty
                && decided.unattributed.isEmpty
            {
                // Nothing found (most families): no grant is clawed back or a duplicate.
                for (grant, kept) in zip(current.grants, currentKept) {
                    result.grantBuckets[FindingWriter.bucket(grant.grant.grantID, kept: kept), default: 0] += 1
                }
            } else {
                try writer.add(
                    FindingWriter.Family(
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
            throw JobError(
                .internalCheck,
                "the family queries left out \(leftOutTransactions) transactions and "
                    + "\(leftOutGrants) grants of quiet families, where each has one of both; no report was written")
        }
        result.families += leftOutGrants
        result.quietFamilies += leftOutGrants
        result.grantBuckets["kept", default: 0] += leftOutGrants
        let parseProblems = transactions.problems.load(ordering: .relaxed) + grants.problems.load(ordering: .relaxed) + unreadable
        if parseProblems > 0 { logger.warning("family rows that could not be read", metadata: ["rows": "\(parseProblems)"]) }

        // refunds.csv's rows (they read no decided family) are found beside the inferred order
        // match, which leaves a core idle: the plan starts them now.
        reached("merged")
        // The inferred order match crosses families: one user and product at a time, from the spool.
        try spool.flush()
        try matchSpooledCandidates(db) { key, cells in try sink.add(report: .compensate, key: key, cells: cells) }
        try sink.commit()
        progress.finish()
        logger.info("decided", metadata: ["families": "\(result.families)", "quiet": "\(result.quietFamilies)", "rows": "\(rows)"])
        return result
    }
}
