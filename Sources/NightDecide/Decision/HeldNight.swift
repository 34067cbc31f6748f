// A night that looks wrong is held, not published (docs/contract.md, "Held nights"). The night
// counts what it read and decided, compares it with the last published nights (NightHold's
// rules), and when it holds: its reports go to <out>/held/<date>/, and the findings history it
// would have written waits in held_findings until `iap-reconcile release` applies it. So a held
// night changes nothing people rely on: first_seen, closed_on, closed.csv, the median of later
// nights, what lookup and respond call "listed since".

import Foundation
import JobStore
import NightLearn
import PlayNight
import Postgres
import Reconciliation

/// The night's expectations and what a night compares with them (`check` builds one too).
package struct HeldNight {
    let settings: JobSettings
    let runID: Int64

    /// The hold check of run `runID` (`check` uses run 0: none).
    package init(settings: JobSettings, runID: Int64) { (self.settings, self.runID) = (settings, runID) }
    var S: SQL { settings.jobSchema.sql }
    var day: String { UTC.date(settings.asOf) }

    /// The relations copied for the decide stage, with their copy and time column.
    static let copies: [(SourceRelation, copy: String, time: String)] = [
        (.orders, "o", "created_at"), (.receipts, "r", "submitted_at"), (.grants, "g", "granted_at"),
    ]

    /// Tonight's figures of the relations, from the decide stage's copies alone (so they are counted
    /// beside the tally and the decisions, not after them): each relation's rows and input errors
    /// as the tally counts them (the clean copy, its `bad_` rows, every further row of a duplicated
    /// key), its clean rows inside the window; tonight's sample of keys, written to
    /// `held_key_digests` under this run (one pass that hashes each key, digesting only the kept
    /// ones) and compared with the last published night's. `products`: the products' tally.
    func relationFigures(_ db: PGConnection, products: RelationTally?) throws -> [String: NightFigures.Relation] {
        var relations: [String: NightFigures.Relation] = [:]
        try db.query("DELETE FROM \(S).held_key_digests WHERE run_id = \(runID)")
        for (relation, copy, time) in Self.copies {
            let ms: SQL = "c.\(ident: String(time.dropLast(3)) + "_ms")"
            // One scan of the copy for both of its counts.
            let r = try db.query(
                """
                SELECT count(*), count(*) FILTER (WHERE \(ms) >= \(settings.windowStart) AND \(ms) <= \(settings.asOf)),
                       (SELECT count(*) FROM \(ident: "bad_" + copy)) + (SELECT coalesce(sum(n - 1), 0) FROM \(ident: "dk_" + copy))
                FROM \(ident: copy) c
                """)
            let clean = Int(r.value(0, 0) ?? "") ?? 0, errors = Int(r.value(0, 2) ?? "") ?? 0
            let share = Self.share(cleanRows: clean)
            let key: SQL = "c.\(ident: relation.key)"
            try db.query(
                """
                INSERT INTO \(S).held_key_digests (run_id, relation, key, digest)
                SELECT \(runID), \(relation.rawValue), \(key)::text, \(Self.digestSQL(relation))
                FROM \(ident: copy) c
                WHERE \(key) IS NOT NULL\(share == 1 ? "" : " AND (hashtextextended(\(key)::text, 0) & \(literal: .int(share - 1))) = 0" as SQL)
                """)
            let k = try db.query(
                """
                SELECT count(*), count(*) FILTER (WHERE h.digest <> k.digest)
                FROM \(S).held_key_digests h JOIN \(S).key_digests k ON k.relation = h.relation AND k.key = h.key
                WHERE h.run_id = \(runID) AND h.relation = \(relation.rawValue)
                """)
            let compared = Int(k.value(0, 0) ?? "") ?? 0
            let other = try otherStoreRows(db, relation, time: time)
            if let play = other.play { relations[NightHold.playPrefix + relation.rawValue] = play }
            relations[relation.rawValue] = NightFigures.Relation(
                rows: clean + errors + other.elsewhere, inputErrors: errors + other.inputErrors,
                inWindow: (Int(r.value(0, 1) ?? "") ?? 0) + (other.play?.inWindow ?? 0),
                keysCompared: compared == 0 ? nil : compared, keysChanged: compared == 0 ? nil : Int(k.value(0, 1) ?? "") ?? 0)
        }
        if let products {
            relations[SourceRelation.products.rawValue] = NightFigures.Relation(
                rows: products.rows, inputErrors: products.buckets["input_error"] ?? 0)
        }
        return relations
    }

    /// Each report's rows tonight (every finding written), and with two stores Google Play's part.
    func reportRows(_ db: PGConnection) throws -> [String: Int] {
        var reports: [String: Int] = [:]
        let r = try db.query(
            """
            SELECT report, count(*), count(*) FILTER (WHERE starts_with(finding_key, \(literal: .text(PlayDecide.keyPrefix))))
            FROM \(S).current_findings GROUP BY report
            """)
        for i in 0..<r.rowCount {
            guard let file = r.value(i, 0).flatMap(ReportFile.init(rawValue:)) else { continue }
            reports[file.name] = Int(r.value(i, 1) ?? "") ?? 0
            if settings.storeRows != nil { reports[NightHold.playPrefix + file.name] = Int(r.value(i, 2) ?? "") ?? 0 }
        }
        for file in ReportFile.allCases where file.findingsReport && reports[file.name] == nil { reports[file.name] = 0 }
        return reports
    }

    /// With two stores (contract §1, "Two stores in one shop") the copies hold the App Store's rows,
    /// while the tally, which the published nights' figures come from, counts each relation whole:
    /// tonight's figures count the same rows, from the night's tables of the rows the views leave
    /// out (OtherStoreRows.swift). `elsewhere`: those rows (0 with one store, and for a relation
    /// without the `store` column, the App Store's whole); `inputErrors`: those that are input
    /// errors (Play's, and those of no store), as the tally counts them (Conservation.otherStoreRows);
    /// `play`: Play's rows alone (their rows, input errors, clean rows inside the window: from their
    /// copy, as the App Store's), held to
    /// the same thresholds (`NightHold.playPrefix`). So a shop selling mostly on Play is compared
    /// with itself, and a Play mapping that loses or breaks its rows is held even beside many App
    /// Store rows.
    func otherStoreRows(_ db: PGConnection, _ relation: SourceRelation, time: String) throws
        -> (elsewhere: Int, inputErrors: Int, play: NightFigures.Relation?)
    {
        guard let query = Conservation.otherStoreRows(relation, settings: settings, counted: true) else { return (0, 0, nil) }
        var elsewhere = 0, errors = 0
        for row in try db.query(query).rows {
            let n = row[1].flatMap { Int($0) } ?? 0
            if row[0] == "#elsewhere" { elsewhere += n } else if row[0] == "input_error" { errors += n }
        }
        guard let copy = relation.copy(.googlePlay) else { return (elsewhere, errors, nil) }
        let ms: SQL = "c.\(ident: String(time.dropLast(3)) + "_ms")"
        let w = try db.query(
            """
            SELECT (SELECT count(*) FROM \(S).\(ident: relation.playRowsTable)), count(*),
                   count(*) FILTER (WHERE \(ms) >= \(settings.windowStart) AND \(ms) <= \(settings.asOf))
            FROM \(S).\(ident: copy) c
            """)
        let rows = Int(w.value(0, 0) ?? "") ?? 0, clean = Int(w.value(0, 1) ?? "") ?? 0
        return (elsewhere, errors, NightFigures.Relation(rows: rows, inputErrors: rows - clean, inWindow: Int(w.value(0, 2) ?? "") ?? 0))
    }

    /// What a key holds, whose change means the key now names another row: an order's user and
    /// product, a receipt upload's user and time, a grant's user and product (a status, a
    /// quantity, a revocation may change; these may not).
    /// Over the row `c`; `submittedMs`: the receipt's `submitted_at` in epoch milliseconds (the
    /// copy's column; `check` computes it from the source's).
    package static func digestSQL(_ relation: SourceRelation, submittedMs: SQL = "c.submitted_ms") -> SQL {
        switch relation {
        case .orders, .grants: return "hashtextextended(row(c.user_id, c.product_id)::text, 0)"
        case .receipts: return "hashtextextended(row(c.user_id, \(submittedMs))::text, 0)"
        case .products: return "0"
        }
    }

    /// The keys kept per relation: all of them up to this many rows, else those whose hash falls
    /// in a share (a power of two) that keeps about as many. The estimate of a share of changed
    /// keys needs no more, and the night writes no table as large as its sources.
    static let keptKeys = 20_000

    /// Tonight's sample of keys (kept aside by `figures`) becomes the one the next night compares
    /// with when the night is published, replacing the last published night's; every held
    /// night's sample goes (none of them can be released after a later published night). A held
    /// night leaves its own for its release.
    var publishKeysSQL: SQL {
        let run: SQL = "\(literal: .int(Int(runID)))"
        return """
            DELETE FROM \(S).key_digests WHERE relation IN (SELECT DISTINCT relation FROM \(S).held_key_digests WHERE run_id = \(run));
            INSERT INTO \(S).key_digests (relation, key, digest)
            SELECT relation, key, digest FROM \(S).held_key_digests WHERE run_id = \(run);
            DELETE FROM \(S).held_key_digests
            """
    }

    /// The power of two of keys per kept key: 1 up to `keptKeys` rows, else the least that keeps
    /// about `keptKeys` (a key is kept when the low bits of its hash are zero). A later night's
    /// share may differ: the two samples then meet on the keys both kept, a sample still.
    static func share(cleanRows: Int) -> Int {
        var share = 1
        while cleanRows > keptKeys * share { share *= 2 }
        return share
    }

    /// A run is published when it ended 0 or was released (`release`).
    package static let publishedSQL: SQL = "command = 'run' AND summary IS NOT NULL AND (exit_code = 0 OR released_at IS NOT NULL)"

    /// The published nights before tonight's run, one per day (its last run), newest first: the
    /// last one's figures (from its summary.json: `tally` and `window_rows`), and the rows of each
    /// watched report over the last `HoldThresholds.medianOver`.
    package func published(_ db: PGConnection) throws -> PublishedNights {
        let nights: SQL = """
            SELECT DISTINCT ON ((as_of AT TIME ZONE 'UTC')::date) (as_of AT TIME ZONE 'UTC')::date AS d, summary
            FROM \(S).runs WHERE \(Self.publishedSQL) AND run_id <> \(runID)
              AND (as_of AT TIME ZONE 'UTC')::date <= \(literal: .date(day))
            ORDER BY (as_of AT TIME ZONE 'UTC')::date DESC, run_id DESC
            """
        var result = PublishedNights()
        let count = try db.query("SELECT count(*) FROM \(S).runs WHERE \(Self.publishedSQL) AND run_id <> \(runID)")
        result.count = Int(count.value(0, 0) ?? "") ?? 0
        // The last one's relations: rows and input errors from its tally, rows in the window when it kept them.
        let last = try db.query(
            """
            WITH n AS (\(nights) LIMIT 1)
            SELECT t.key, t.value->>'rows', t.value->>'input_error', n.summary->'window_rows'->>t.key
            FROM n, jsonb_each(CASE WHEN jsonb_typeof(n.summary->'tally') = 'object' THEN n.summary->'tally' ELSE '{}' END) t
            """)
        if last.rowCount > 0 {
            var relations: [String: NightFigures.Relation] = [:]
            for i in 0..<last.rowCount {
                guard let name = last.value(i, 0), let rows = last.value(i, 1).flatMap({ Int($0) }) else { continue }
                relations[name] = NightFigures.Relation(
                    rows: rows, inputErrors: last.value(i, 2).flatMap { Int($0) } ?? 0,
                    inWindow: last.value(i, 3).flatMap { Int($0) })
            }
            result.last = NightFigures(relations: relations, reports: [:])
        }
        let reports = NightHold.watchedReports
        let history = try db.query(
            """
            WITH n AS (\(nights) LIMIT \(literal: .int(HoldThresholds.medianOver)))
            SELECT \(reports.map { "n.summary->'counts'->>\(literal: .text($0))" as SQL }.joined(separator: ", ")) FROM n ORDER BY n.d DESC
            """)
        for i in 0..<history.rowCount {
            for (j, report) in reports.enumerated() {
                if let n = history.value(i, j).flatMap({ Int($0) }) { result.reportRows[report, default: []].append(n) }
            }
        }
        return result
    }

    /// What the findings history would write tonight (`DecideStage.historySQL`), kept for the
    /// release: every finding listed tonight, and every open finding tonight closes, with why.
    /// Run instead of the history when the night is held; `findings` is not touched.
    /// `closingReasons`: the findings tonight closes and why (`DecideStage.writeClosingReasons`).
    func heldHistorySQL(closingReasons: SQL) -> SQL {
        let d: SQL = "\(literal: .date(day))", run: SQL = "\(literal: .int(runID))"
        return """
            DELETE FROM \(S).held_findings WHERE run_id = \(run);
            INSERT INTO \(S).held_findings (run_id, finding_key, report, night, closed_on, closed_because)
            SELECT \(run), finding_key, report, \(d), NULL, NULL FROM \(S).current_findings;
            INSERT INTO \(S).held_findings (run_id, finding_key, report, night, closed_on, closed_because)
            SELECT \(run), cr.finding_key, cr.report, \(d), \(d), coalesce(cr.reason, 'input_changed')
            FROM \(closingReasons) cr
            """
    }

    /// closed.csv of a held night: the findings it would close, with their first_seen (typed
    /// literals: it is read by COPY).
    var heldClosedSQL: SQL {
        """
        SELECT h.report, h.finding_key, to_char(f.first_seen, 'YYYY-MM-DD'), to_char(h.closed_on, 'YYYY-MM-DD'),
               coalesce(h.closed_because, 'input_changed')
        FROM \(S).held_findings h JOIN \(S).findings f ON f.finding_key = h.finding_key
        WHERE h.run_id = \(literal: .int(Int(runID))) AND h.closed_on IS NOT NULL AND f.first_seen < h.closed_on
        ORDER BY h.report COLLATE "C", h.finding_key COLLATE "C"
        """
    }

    /// The release of a held run, inside the caller's transaction: its findings history applied
    /// as `historySQL` would have written it that night, then the run marked released.
    static func applyRelease(_ db: PGConnection, schema: JobSchema, runID: Int64, by: String, note: String) throws {
        let S = schema.sql
        try db.query(
            """
            INSERT INTO \(S).findings AS f (finding_key, report, first_seen, last_seen, closed_on)
            SELECT finding_key, report, night, night, NULL FROM \(S).held_findings WHERE run_id = \(runID) AND closed_on IS NULL
            ON CONFLICT (finding_key) DO UPDATE SET
                first_seen = least(f.first_seen, EXCLUDED.first_seen),
                last_seen = greatest(f.last_seen, EXCLUDED.last_seen),
                closed_on = NULL
            """)
        try db.query(
            """
            UPDATE \(S).findings f SET closed_on = h.closed_on, closed_because = h.closed_because
            FROM \(S).held_findings h
            WHERE h.run_id = \(runID) AND h.closed_on IS NOT NULL AND f.finding_key = h.finding_key AND f.closed_on IS NULL
            """)
        try db.query("DELETE FROM \(S).held_findings WHERE run_id = \(runID)")
        // Its keys become the ones the next night compares with (the released night is the last published).
        try db.query(
            """
            DELETE FROM \(S).key_digests WHERE relation IN (SELECT relation FROM \(S).held_key_digests WHERE run_id = \(runID))
            """)
        try db.query(
            """
            INSERT INTO \(S).key_digests (relation, key, digest)
            SELECT relation, key, digest FROM \(S).held_key_digests WHERE run_id = \(runID)
            """)
        try db.query("DELETE FROM \(S).held_key_digests")
        try db.query(
            """
            UPDATE \(S).runs SET released_at = now(), released_by = \(by), release_note = \(note) WHERE run_id = \(runID)
            """)
    }
}
