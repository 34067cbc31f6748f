import Foundation
import JobStore
import Logging
import NightDecide
import NightLearn
import Postgres
import Reconciliation

/// `iap-reconcile check`: what tonight would read, before a night runs (docs/contract.md,
/// "`check`: before the first night"). Read-only: no App Store call, no lock, no ledger row,
/// nothing written anywhere (plain SELECTs in one read-only snapshot on the source's session,
/// and a few reads of the job schema when there is one at this build's version). It reports
/// what a studio's mapping gets wrong before customer service ever sees a list: input errors by
/// reason with example keys, keys that now hold other content, grants without Apple's
/// transaction id, windows that hold nothing, and the night's own hold rules against the last
/// published night. Exit 65 names each failed expectation.
public struct Check: Sendable {
    let settings: JobSettings
    /// Source columns to count grants without a transaction id by (`--by`).
    let by: [String]
    /// `--estimate-families`: about how many families to decide for what tonight would list.
    let estimateFamilies: Int

    public init(settings: JobSettings, by: [String], estimateFamilies: Int = 2000) {
        self.settings = settings
        self.by = by
        self.estimateFamilies = estimateFamilies
    }

    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }

    static let relations: [(SourceRelation, time: String?)] = [
        (.products, nil), (.orders, "created_at"), (.receipts, "submitted_at"), (.grants, "granted_at"),
    ]

    public func run() throws -> Outcome {
        if let url = settings.databaseURL {
            do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
                throw JobError(
                    .configuration,
                    "DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                        + "fix it in the environment (see docs/contract.md, 'Environment variables')")
            }
        }
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        // Two stores (contract §1): the App Store's views made before the read-only transaction.
        var settings = self.settings
        if settings.sourceDatabaseURL == nil {
            do { try StoreViews.checkSources(&settings, db: db, source: db, command: "check") } catch {
                throw JobError.from(error, doing: "check")
            }
        }
        return try Check(settings: settings, by: by, estimateFamilies: estimateFamilies).run(db)
    }

    private func run(_ db: PGConnection) throws -> Outcome {
        var outcome: Outcome
        do {
            try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { try? db.execute("ROLLBACK") }
            outcome = try SourceDatabase.reading(settings, job: db, retry: true, logger: .init(label: "iap-reconcile check")) { source in
                if source !== db { try source.execute("SET TRANSACTION READ ONLY") }
                return try check(db: db, source: source)
            }
        } catch {
            throw JobError.from(error, doing: "check")
        }
        // What tonight would list: decided in temporary tables (not possible in a read-only
        // transaction), in a transaction of their own that is rolled back.
        guard outcome.history.available else { return outcome }
        do {
            try tonight(&outcome, db: db)
        } catch {
            throw JobError.from(error, doing: "check: deciding what tonight would list")
        }
        return outcome
    }

    /// `outcome.tonight`, and the night's hold rules on its lists (`findings_share`,
    /// `findings_median`).
    func tonight(_ outcome: inout Outcome, db: PGConnection) throws {
        let logger = Logger(label: "iap-reconcile check")
        let tonight = try SourceDatabase.reading(settings, job: db, retry: true, logger: logger) { source in
            try CheckTonight(settings: settings, db: db, source: source, families: estimateFamilies).run()
        }
        outcome.tonight = tonight
        let published = try HeldNight(settings: settings, runID: 0).published(db)
        let how = tonight.exact ? "every family decided" : "estimated from \(tonight.keys_decided) sampled family keys"
        let figures = NightFigures(relations: Self.figures(outcome.relations), reports: tonight.reports)
        for var reason in NightHold.reasons(tonight: figures, published: published, thresholds: settings.hold)
        where reason.check == "findings_share" || reason.check == "findings_median" {
            reason.text = "tonight, from what the job already knows (\(how)): " + reason.text
            outcome.failed.append(reason)
        }
    }

    func check(db: PGConnection, source: PGConnection) throws -> Outcome {
        if source !== db {
            var found = settings
            try StoreViews.checkSources(&found, db: db, source: source, command: "check")
        } else {
            _ = try SourceCheck.verify(source, schema: settings.storeRows ?? settings.sourceSchema)
        }
        var notes: [String] = []
        // The job schema: read only when it is there at this build's version.
        let schema = try SchemaCheck.read(db, schema: settings.jobSchema)
        let current = schema.isCurrent
        var history = History(available: current, note: "", published_nights: 0, last_published: nil, last_counts: [:], median: [:])
        if !current {
            let migrated = schema.newestRecorded
            history.note =
                migrated == 0
                ? "no job schema \(settings.jobSchema.name) yet: the checks against the last published night were skipped"
                : "the job schema \(settings.jobSchema.name) is at migration \(migrated) of \(Migrations.latest): the checks "
                    + "against the last published night were skipped (a night, or iap-reconcile migrate, brings it up)"
            notes.append(history.note)
        }
        // receipt_data's form: the job schema's own functions when they read the same database,
        // else the same forms by pattern.
        let exactForms = current && source === db
        if !exactForms { notes.append("receipt_data's form checked by pattern (the night checks it with the job schema's functions)") }
        if current && source !== db {
            notes.append("to verify: counted without the answers the job already holds (they are in another database): at most this many")
        }

        let published: PublishedNights
        if current {
            published = try HeldNight(settings: settings, runID: 0).published(db)
            history.published_nights = published.count
            history.last_counts = try lastCounts(db)
            for (report, rows) in published.reportRows { history.median[report] = NightHold.median(rows) }
            history.last_published = try db.query(
                """
                SELECT to_char(max((as_of AT TIME ZONE 'UTC')::date), 'YYYY-MM-DD') FROM \(S).runs WHERE \(HeldNight.publishedSQL)
                """
            ).value(0, 0)
            if published.count == 0 { history.note = "no night published yet"; notes.append(history.note) }
        } else {
            published = PublishedNights()
        }

        var relations: [Relation] = []
        for (relation, time) in Self.relations {
            var r = try stats(relation, time: time, source: source, exactForms: exactForms)
            if current, relation.copy != nil {
                let kept = try db.query("SELECT key, digest FROM \(S).key_digests WHERE relation = \(relation.rawValue)")
                if kept.rowCount > 0 {
                    let keys = (0..<kept.rowCount).map { kept.value($0, 0) ?? "" }
                    let digests = (0..<kept.rowCount).map { kept.value($0, 1) ?? "0" }
                    let k = try source.query(keysSQL(relation, keys: keys, digests: digests))
                    let compared = Int(k.value(0, 0) ?? "") ?? 0
                    if compared > 0 {
                        r.keys_compared = compared
                        r.keys_changed = Int(k.value(0, 1) ?? "") ?? 0
                    }
                }
            }
            relations.append(r)
        }
        var failed = NightHold.reasons(
            tonight: NightFigures(relations: Self.figures(relations), reports: [:]),
            published: published, thresholds: settings.hold)
        // A relation with rows and nothing inside the window: a time column of the wrong meaning
        // or unit (the night sees no row to decide), said even without a night to compare with.
        for r in relations
        where r.rows >= settings.hold.minRows && r.in_window == 0
            && !failed.contains(where: { $0.check == "window_rows_shrank" && $0.subject == r.relation })
        {
            failed.append(
                HoldReason(
                    check: "window_empty", subject: r.relation,
                    text: """
                        \(r.relation): none of its \(r.rows) rows lies inside the window (\(window)): a time column read in the \
                        wrong unit or zone, or a view that filters the recent rows out?
                        """))
        }
        let grants = try grantsWithoutTransaction(source)
        if grants.rows > 0 {
            let products = grants.by_product.prefix(3).map { "\($0.value) \($0.rows)" }.joined(separator: ", ")
            let byText = by.compactMap { column in
                grants.by[column].map { "by \(column): " + $0.prefix(3).map { "\($0.value) \($0.rows)" }.joined(separator: ", ") }
            }.joined(separator: "; ")
            failed.append(
                HoldReason(
                    check: "grants_without_transaction_id", subject: SourceRelation.grants.rawValue,
                    text: """
                        iap_grants: \(grants.rows) grants have no transaction_id (\(products)\(byText.isEmpty ? "" : "; " + byText)): \
                        each is an input error, and the purchase it delivered is listed to compensate every night; a grant made by \
                        hand must carry the transaction_id of the purchase it makes good (docs/contract.md, "`check`: before the first night")
                        """))
        }
        return Outcome(
            as_of: UTC.timestamp(settings.asOf), window: window, source_schema: settings.sourceSchema,
            relations: relations, grants_without_transaction_id: grants,
            receipts: try receipts(db: db, source: source, jobSchema: current, exactForms: exactForms),
            history: history, tonight: nil, failed: failed, notes: notes)
    }

    /// The relations as the night's hold rules read them.
    static func figures(_ relations: [Relation]) -> [String: NightFigures.Relation] {
        Dictionary(
            uniqueKeysWithValues: relations.map {
                (
                    $0.relation,
                    NightFigures.Relation(
                        rows: $0.rows, inputErrors: $0.input_errors, inWindow: $0.in_window,
                        keysCompared: $0.keys_compared, keysChanged: $0.keys_changed)
                )
            })
    }
}
