import Foundation
import Logging
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
    public struct Reason: Sendable, Encodable, Equatable {
        public var reason: String
        public var rows: Int
        /// Up to five keys of rows with it, in byte order.
        public var examples: [String]
    }

    public struct Relation: Sendable, Encodable {
        public var relation: String
        public var rows: Int
        public var input_errors: Int
        public var input_errors_percent: String
        public var reasons: [Reason]
        /// Clean rows whose time column lies in the window (nil: iap_products).
        public var in_window: Int?
        /// Keys of the last published night found again, and those now holding other content.
        public var keys_compared: Int?
        public var keys_changed: Int?
    }

    public struct Count: Sendable, Encodable, Equatable {
        public var value: String
        public var rows: Int
    }

    public struct GrantsWithoutTransaction: Sendable, Encodable {
        public var rows: Int
        public var by_product: [Count]
        /// Per `--by` column: its values among those grants, most rows first.
        public var by: [String: [Count]]
    }

    public struct Receipts: Sendable, Encodable {
        /// Clean receipts submitted inside the window.
        public var in_window: Int
        /// Settled at upload (status 0 or 21006 and an active grant of the reported transaction): never sent.
        public var settled_at_upload: Int
        /// StoreKit 2 signed transactions: verified on this machine, no request.
        public var signed: Int
        /// App receipts that would go to Apple tonight (without a definitive answer yet, when the
        /// job schema is there to say so).
        public var to_verify: Int
        /// From the last published night that sent requests: requests per receipt, and per second.
        public var measured_requests_per_receipt: Double?
        public var measured_requests_per_second: Double?
        public var estimated_requests: Int?
        public var estimated_seconds: Int?
    }

    public struct History: Sendable, Encodable {
        /// The job schema is there at this build's version: the history checks ran.
        public var available: Bool
        public var note: String
        public var published_nights: Int
        public var last_published: String?
        /// The last published night's rows per report, and the median over the last 30.
        public var last_counts: [String: Int]
        public var median: [String: Double]
    }

    /// What tonight would list from what the job already knows (`CheckTonight`): rows per report
    /// by the night's rules, over every family (`exact`) or a sample of them scaled up.
    public struct Tonight: Sendable, Encodable {
        public var exact: Bool
        /// Apple original transaction ids and grants' transaction ids: about how many families there are.
        public var family_keys_about: Int
        public var keys_decided: Int
        public var families: Int
        public var reports: [String: Int]
    }

    public struct Outcome: Sendable, Encodable {
        public var as_of: String
        public var window: String
        public var source_schema: String
        public var relations: [Relation]
        public var grants_without_transaction_id: GrantsWithoutTransaction
        public var receipts: Receipts
        public var history: History
        /// Without a job schema at this build's version: nil (nothing known to decide from).
        public var tonight: Tonight?
        /// The expectations that failed (empty: exit 0).
        public var failed: [HoldReason]
        public var notes: [String]
    }

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
                throw JobError(.configuration, "DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                    + "fix it in the environment (see docs/contract.md, 'Environment variables')")
            }
        }
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
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

    /// `outcome.tonight`, and the night's hold rules on its lists (`findings_share`, `findings_median`).
    func tonight(_ outcome: inout Outcome, db: PGConnection) throws {
        let tonight = try SourceDatabase.reading(settings, job: db, retry: true, logger: .init(label: "iap-reconcile check")) { source in
            try CheckTonight(settings: settings, db: db, source: source, families: estimateFamilies).run()
        }
        outcome.tonight = tonight
        var figures: [String: NightFigures.Relation] = [:]
        for r in outcome.relations {
            figures[r.relation] = NightFigures.Relation(rows: r.rows, inputErrors: r.input_errors, inWindow: r.in_window,
                                                        keysCompared: r.keys_compared, keysChanged: r.keys_changed)
        }
        let published = try HeldNight(settings: settings, runID: 0).published(db)
        let how = tonight.exact ? "every family decided" : "estimated from \(tonight.keys_decided) sampled family keys"
        for var reason in NightHold.reasons(tonight: NightFigures(relations: figures, reports: tonight.reports), published: published,
                                            thresholds: settings.hold)
        where reason.check == "findings_share" || reason.check == "findings_median" {
            reason.text = "tonight, from what the job already knows (\(how)): " + reason.text
            outcome.failed.append(reason)
        }
    }

    func check(db: PGConnection, source: PGConnection) throws -> Outcome {
        _ = try SourceCheck.verify(source, schema: settings.sourceSchema)
        var notes: [String] = []
        // The job schema: read only when it is there at this build's version.
        let schema = try SchemaCheck.read(db, schema: settings.jobSchema)
        let current = schema.refusal == nil && schema.pending.isEmpty
        var history = History(available: current, note: "", published_nights: 0, last_published: nil, last_counts: [:], median: [:])
        if !current {
            let migrated = schema.rows.map(\.version).max() ?? 0
            history.note = migrated == 0
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
            history.last_published = try db.query("""
                SELECT to_char(max((as_of AT TIME ZONE 'UTC')::date), 'YYYY-MM-DD') FROM \(S).runs WHERE \(HeldNight.publishedSQL)
                """).value(0, 0)
            if published.count == 0 { history.note = "no night published yet"; notes.append(history.note) }
        } else {
            published = PublishedNights()
        }

        var relations: [Relation] = []
        var figures: [String: NightFigures.Relation] = [:]
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
            figures[relation.rawValue] = NightFigures.Relation(rows: r.rows, inputErrors: r.input_errors, inWindow: r.in_window,
                                                               keysCompared: r.keys_compared, keysChanged: r.keys_changed)
        }
        var failed = NightHold.reasons(tonight: NightFigures(relations: figures, reports: [:]), published: published,
                                       thresholds: settings.hold)
        // A relation with rows and nothing inside the window: a time column of the wrong meaning
        // or unit (the night sees no row to decide), said even without a night to compare with.
        for r in relations where r.rows >= settings.hold.minRows && r.in_window == 0
            && !failed.contains(where: { $0.check == "window_rows_shrank" && $0.subject == r.relation }) {
            failed.append(HoldReason(check: "window_empty", subject: r.relation, text: """
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
            failed.append(HoldReason(check: "grants_without_transaction_id", subject: SourceRelation.grants.rawValue, text: """
                iap_grants: \(grants.rows) grants have no transaction_id (\(products)\(byText.isEmpty ? "" : "; " + byText)): \
                each is an input error, and the purchase it delivered is listed to compensate every night; a grant made by \
                hand must carry the transaction_id of the purchase it makes good (docs/contract.md, "`check`: before the first night")
                """))
        }
        return Outcome(as_of: UTC.timestamp(settings.asOf), window: window, source_schema: settings.sourceSchema,
                       relations: relations, grants_without_transaction_id: grants,
                       receipts: try receipts(db: db, source: source, jobSchema: current, exactForms: exactForms),
                       history: history, tonight: nil, failed: failed, notes: notes)
    }

    var window: String { UTC.timestamp(settings.windowStart) + " to " + UTC.timestamp(settings.asOf) }

    var windowPredicate: (String) -> SQL {
        { column in
            "x.\(ident: column) >= to_timestamp(\(literal: .int(settings.windowStart)) / 1000.0) "
                + "AND x.\(ident: column) <= to_timestamp(\(literal: .int(settings.asOf)) / 1000.0)" as SQL
        }
    }

    /// The products' CTEs the product checks read (`known_products`, as the night makes it).
    var productsCTE: SQL {
        """
        p AS (SELECT DISTINCT ON (product_id) product_id, product_type FROM \(src).iap_products WHERE product_id IS NOT NULL
              ORDER BY product_id, \(SourceRelation.products.firstRowOrder)),
        known_products AS (SELECT DISTINCT k.product_id,
                                  (p.product_id IS NOT NULL AND p.product_type IN \(SourceRelation.productTypes)) AS valid
                           FROM \(src).iap_products k LEFT JOIN p ON p.product_id = k.product_id WHERE k.product_id IS NOT NULL)
        """
    }

    /// The problems of one relation's rows, as the night's checks say them (SourceRows.swift).
    func problems(_ relation: SourceRelation, exactForms: Bool) -> [SQL] {
        var checks = relation.checks(jobSchema: settings.jobSchema, dataFormLater: !exactForms).map(\.problem)
        if relation == .receipts && !exactForms {
            checks.append("""
                CASE WHEN x.receipt_data IS NOT NULL AND NOT (
                    x.receipt_data ~ '^[[:space:]]*[A-Za-z0-9+/]+[[:space:]A-Za-z0-9+/]*=?=?[[:space:]]*$'
                    OR x.receipt_data ~ '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$')
                THEN 'receipt_data is neither base64 (an app receipt) nor a JWS (a signed transaction)' END
                """)
        }
        return checks
    }

    /// A problem's text without the value it names, so that rows group by reason.
    static let reasonSQL: SQL = """
        CASE WHEN pr LIKE 'unknown product_id %' THEN 'unknown product_id'
             WHEN pr LIKE 'product_id % has no valid row in iap_products' THEN 'product_id has no valid row in iap_products'
             WHEN pr LIKE 'quantity % is below 1' THEN 'quantity is below 1'
             WHEN pr LIKE 'product_type % is not one of %' THEN 'product_type is not one of consumable, non_consumable, auto_renewable, non_renewing'
             ELSE pr END
        """

    func stats(_ relation: SourceRelation, time: String?, source: PGConnection, exactForms: Bool) throws -> Relation {
        let key = relation.keySQL
        let problems = problems(relation, exactForms: exactForms).joined(separator: ", ")
        // Each row numbered within its key as the night picks a key's first row (before the
        // products are joined, whose product_id would make the order's columns ambiguous).
        let numbered: SQL = """
            (SELECT *, row_number() OVER (PARTITION BY \(key) ORDER BY \(relation.firstRowOrder)) AS check_rn
             FROM \(src).\(relation.name))
            """
        let rowsCTE: SQL = """
            WITH \(productsCTE),
            rows AS (
                SELECT x.\(key)::text AS k, x.check_rn AS rn,
                       array_remove(ARRAY[\(problems)]::text[], NULL) AS problems,
                       \(time.map { "(\(windowPredicate($0)))" as SQL } ?? ("false" as SQL)) AS in_window
                FROM \(relation.from(numbered)))
            """
        let totals = try source.query("""
            \(rowsCTE)
            SELECT count(*),
                   count(*) FILTER (WHERE k IS NULL OR (rn > 1) OR cardinality(problems) > 0),
                   count(*) FILTER (WHERE k IS NOT NULL AND rn = 1 AND cardinality(problems) = 0 AND in_window)
            FROM rows
            """)
        let reasons = try source.query("""
            \(rowsCTE),
            reasons AS (
                SELECT k, 'duplicate key' AS reason FROM rows WHERE k IS NOT NULL AND rn > 1
                UNION ALL
                SELECT r.k, \(Self.reasonSQL) FROM rows r CROSS JOIN LATERAL unnest(r.problems) pr WHERE r.rn = 1 OR r.k IS NULL)
            SELECT reason, count(*), array_to_string(array_agg(coalesce(k, '(null)') ORDER BY k COLLATE "C") FILTER (WHERE n <= 5), E'\\x1f')
            FROM (SELECT reason, k, row_number() OVER (PARTITION BY reason ORDER BY k COLLATE "C") AS n FROM reasons) s
            GROUP BY reason ORDER BY count(*) DESC, reason COLLATE "C"
            """)
        let rows = Int(totals.value(0, 0) ?? "") ?? 0, errors = Int(totals.value(0, 1) ?? "") ?? 0
        return Relation(
            relation: relation.rawValue, rows: rows, input_errors: errors,
            input_errors_percent: rows == 0 ? "0.0" : NightHold.oneDecimal(Double(errors) * 100 / Double(rows)),
            reasons: (0..<reasons.rowCount).map { i in
                Reason(reason: reasons.value(i, 0) ?? "", rows: Int(reasons.value(i, 1) ?? "") ?? 0,
                       examples: (reasons.value(i, 2) ?? "").split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init))
            },
            in_window: time == nil ? nil : Int(totals.value(0, 2) ?? "") ?? 0)
    }

    /// The kept keys (`$1`, their digests `$2`) found in the source, and those whose row now digests otherwise.
    func keysSQL(_ relation: SourceRelation, keys: [String], digests: [String]) -> SQL {
        let digest = HeldNight.digestSQL(relation, submittedMs: SourceRelation.epochMilliseconds("c.submitted_at"))
        return """
            SELECT count(DISTINCT k.key), count(DISTINCT k.key) FILTER (WHERE k.digest <> \(digest))
            FROM unnest(\(keys)::text[], \(digests)::bigint[]) AS k(key, digest)
            JOIN \(src).\(relation.name) c ON c.\(relation.keySQL)::text = k.key
            """
    }

    func grantsWithoutTransaction(_ source: PGConnection) throws -> GrantsWithoutTransaction {
        func counts(_ column: String) throws -> [Count] {
            let r = try source.query("""
                SELECT v, n FROM (SELECT coalesce(\(ident: column)::text, '(null)') AS v, count(*) AS n FROM \(src).iap_grants
                                  WHERE transaction_id IS NULL GROUP BY 1) s
                ORDER BY n DESC, v COLLATE "C" LIMIT 20
                """)
            return (0..<r.rowCount).map { Count(value: r.value($0, 0) ?? "", rows: Int(r.value($0, 1) ?? "") ?? 0) }
        }
        let total = Int(try source.query("SELECT count(*) FROM \(src).iap_grants WHERE transaction_id IS NULL").value(0, 0) ?? "") ?? 0
        var result = GrantsWithoutTransaction(rows: total, by_product: [], by: [:])
        guard total > 0 else { return result }
        result.by_product = try counts("product_id")
        for column in by {
            let exists = try source.query("""
                SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = \(settings.sourceSchema) AND c.relname = 'iap_grants' AND a.attname = \(column)
                  AND a.attnum > 0 AND NOT a.attisdropped
                """).rowCount > 0
            guard exists else {
                throw JobError(.usage, "check: --by \(column): \(settings.sourceSchema).iap_grants has no such column")
            }
            result.by[column] = try counts(column)
        }
        return result
    }

    /// Tonight's receipts: settled at upload, signed, to verify; with the last published night's rates.
    /// Without a definitive answer yet, when the job schema is there and in the same database.
    func receipts(db: PGConnection, source: PGConnection, jobSchema: Bool, exactForms: Bool) throws -> Receipts {
        let clean = SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema, dataFormLater: !exactForms)
        let settledAtUpload: SQL = """
            (coalesce(x.verify_status, -1) IN (0, 21006) AND EXISTS (
                SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = x.transaction_id AND g.revoked_at IS NULL))
            """
        let answered = jobSchema && source === db
        let r = try source.query("""
            SELECT count(*), count(*) FILTER (WHERE \(settledAtUpload)),
                   count(*) FILTER (WHERE \(SourceRelation.hasDot("x.receipt_data"))),
                   count(*) FILTER (WHERE NOT \(SourceRelation.hasDot("x.receipt_data")) AND NOT \(settledAtUpload)
                                      \(answered ? "AND NOT coalesce(s.definitive, false)" as SQL : ""))
            FROM \(clean) x
            \(answered ? "LEFT JOIN \(S).receipt_state s ON s.receipt_id = x.receipt_id" as SQL : "")
            WHERE \(windowPredicate("submitted_at"))\(exactForms ? "" : " AND (\(problems(.receipts, exactForms: false).last!)) IS NULL" as SQL)
            """)
        let inWindow = Int(r.value(0, 0) ?? "") ?? 0, settled = Int(r.value(0, 1) ?? "") ?? 0, signed = Int(r.value(0, 2) ?? "") ?? 0
        let toVerify = Int(r.value(0, 3) ?? "") ?? 0
        var receipts = Receipts(in_window: inWindow, settled_at_upload: settled, signed: signed, to_verify: toVerify)
        if jobSchema {
            let rate = try db.query("""
                SELECT (summary->'verification'->>'requests')::numeric, (summary->'verification'->>'candidates')::numeric,
                       (summary->'seconds'->>'verify')::numeric
                FROM \(S).runs WHERE \(HeldNight.publishedSQL) AND (summary->'verification'->>'requests')::numeric > 0
                  AND (summary->'seconds'->>'verify')::numeric > 0
                ORDER BY run_id DESC LIMIT 1
                """)
            if rate.rowCount > 0, let requests = Double(rate.value(0, 0) ?? ""), let asked = Double(rate.value(0, 1) ?? ""),
               let seconds = Double(rate.value(0, 2) ?? ""), asked > 0 {
                receipts.measured_requests_per_receipt = (requests / asked * 100).rounded() / 100
                receipts.measured_requests_per_second = (requests / seconds * 10).rounded() / 10
                let estimated = Double(toVerify) * requests / asked
                receipts.estimated_requests = Int(estimated.rounded())
                receipts.estimated_seconds = Int((estimated / (requests / seconds)).rounded(.up))
            }
        }
        return receipts
    }

    /// The last published night's rows per report (summary.json `counts`).
    func lastCounts(_ db: PGConnection) throws -> [String: Int] {
        let r = try db.query("""
            SELECT c.key, c.value FROM (SELECT summary FROM \(S).runs WHERE \(HeldNight.publishedSQL) ORDER BY run_id DESC LIMIT 1) n,
                 jsonb_each_text(CASE WHEN jsonb_typeof(n.summary->'counts') = 'object' THEN n.summary->'counts' ELSE '{}' END) c
            """)
        var counts: [String: Int] = [:]
        for i in 0..<r.rowCount { if let k = r.value(i, 0), let v = r.value(i, 1).flatMap({ Int($0) }) { counts[k] = v } }
        return counts
    }
}

extension Check.Outcome {
    /// The answer for people: one block per relation, then the grants, the receipts, the history,
    /// and what failed.
    public var lines: [String] {
        var out = ["iap-reconcile check: as of \(as_of), window \(window), source schema \(source_schema)"]
        for r in relations {
            var line = "\(r.relation): \(r.rows) rows, \(r.input_errors) input errors (\(r.input_errors_percent)%)"
            if let w = r.in_window { line += ", \(w) clean rows inside the window" }
            if let c = r.keys_compared, let k = r.keys_changed { line += ", \(k) of \(c) kept keys now hold other content" }
            out.append(line)
            for reason in r.reasons {
                out.append("  \(reason.reason): \(reason.rows) (e.g. \(reason.examples.joined(separator: ", ")))")
            }
        }
        let g = grants_without_transaction_id
        out.append("grants without transaction_id: \(g.rows)")
        if g.rows > 0 {
            out.append("  by product_id: " + g.by_product.map { "\($0.value) \($0.rows)" }.joined(separator: ", "))
            for (column, counts) in g.by.sorted(by: { $0.key < $1.key }) {
                out.append("  by \(column): " + counts.map { "\($0.value) \($0.rows)" }.joined(separator: ", "))
            }
        }
        let r = receipts
        var verify = "receipts inside the window: \(r.in_window); settled at upload \(r.settled_at_upload), signed (verified here) "
            + "\(r.signed), to verify with Apple \(r.to_verify)"
        if let n = r.estimated_requests, let s = r.estimated_seconds, let rate = r.measured_requests_per_second {
            verify += ": about \(n) requests, \(s) s at the last night's \(rate) requests/s"
        }
        out.append(verify)
        if history.available {
            out.append("published nights: \(history.published_nights)" + (history.last_published.map { ", the last \($0)" } ?? ""))
            for report in NightHold.watchedReports {
                let last = history.last_counts[report].map(String.init) ?? "-"
                let median = history.median[report].map { NightHold.oneDecimal($0) } ?? "-"
                out.append("  \(report): \(last) rows on the last published night, median \(median)")
            }
        }
        if let t = tonight {
            out.append("tonight, from what the job already knows, by the night's rules ("
                + (t.exact ? "every family, \(t.families) with a finding or not" : "about, from \(t.keys_decided) of about \(t.family_keys_about) family keys")
                + "; refunds.csv not estimated):")
            for report in CheckTonight.reports {
                let median = history.median[report].map { ", median \(NightHold.oneDecimal($0))" } ?? ""
                out.append("  \(report): \(t.exact ? "" : "~")\(t.reports[report] ?? 0) rows\(median)")
            }
        }
        for note in notes { out.append("note: \(note)") }
        if failed.isEmpty {
            out.append("OK: every expectation holds")
        } else {
            for f in failed { out.append("FAILED \(f.check): \(f.text)") }
        }
        return out
    }
}
