// The findings history of the night (contract §6: first_seen, closed.csv's closed_on and its
// reason), run once the families are decided and refunds.csv's rows are in. Why a finding is
// gone is the rules' (`Closing.reason`), over facts Postgres gathers for the findings that close.

import PlayNight
import Postgres
import Reconciliation

extension DecideStage {
    /// The findings tonight closes: open, seen by tonight, not listed tonight (`f`).
    var closingSQL: SQL {
        let day: SQL = "\(literal: .date(UTC.date(settings.asOf)))"
        return """
            SELECT f.finding_key, f.report FROM \(S).findings f
            WHERE f.closed_on IS NULL AND f.first_seen <= \(day)
              AND NOT EXISTS (SELECT 1 FROM \(S).current_findings c WHERE c.finding_key = f.finding_key)
            """
    }

    /// What the data shows now of each finding of `findings` (`finding_key`, `report`), for
    /// `Closing.Facts`, one row per Apple row of it, sorted by key: the key, the report, whether
    /// an active grant of its transaction exists, whether its grant is revoked, then (nulls when
    /// Apple shows nothing) whether the Apple row is of the finding's own transaction or of its
    /// grant's, and its purchase, cancellation, revocation, revocation type and reversal. The key
    /// holds the id after its report's prefix. The grants and Apple's rows are read once each,
    /// for the findings' ids only. Read by COPY: typed literals.
    func closingFactsSQL(findings: SQL) -> SQL {
        """
        WITH closing AS MATERIALIZED (
            SELECT x.finding_key, x.report, split_part(x.finding_key, '|', 2) AS id FROM (\(findings)) x
        ), gf AS MATERIALIZED (
            SELECT g.grant_id, g.transaction_id, g.revoked_ms FROM g
            WHERE g.transaction_id IN (SELECT id FROM closing) OR g.grant_id IN (SELECT id FROM closing)
        ), apple AS MATERIALIZED (
            SELECT t.transaction_id, t.purchase_date_ms, t.cancellation_date_ms, t.revocation_date_ms,
                   t.revocation_type, t.reversed_date_ms
            FROM \(S).apple_transactions t
            WHERE t.transaction_id IN (SELECT id FROM closing UNION ALL SELECT transaction_id FROM gf)
        ), rows AS (
            SELECT a.transaction_id AS id, true AS own, a.* FROM apple a
            UNION ALL
            SELECT gf.grant_id, false, a.* FROM gf JOIN apple a ON a.transaction_id = gf.transaction_id
        )
        SELECT c.finding_key, c.report, ac.id IS NOT NULL, rv.id IS NOT NULL,
               x.own, x.purchase_date_ms::text, x.cancellation_date_ms::text, x.revocation_date_ms::text,
               x.revocation_type, x.reversed_date_ms::text
        FROM closing c
        LEFT JOIN (SELECT DISTINCT transaction_id AS id FROM gf WHERE revoked_ms IS NULL) ac ON ac.id = c.id
        LEFT JOIN (SELECT DISTINCT grant_id AS id FROM gf WHERE revoked_ms IS NOT NULL) rv ON rv.id = c.id
        LEFT JOIN rows x ON x.id = c.id
        ORDER BY c.finding_key COLLATE "C"
        """
    }

    /// Why each finding of `findings` (default: those tonight closes) is gone, judged by the
    /// rules (`Closing.reason`) from the facts Postgres gathers (`closingFactsSQL`), read a batch
    /// at a time through a cursor (inside the caller's transaction), in key order; between
    /// batches the session is free for the caller's writes.
    func closingReasons(
        _ db: PGConnection, findings: SQL? = nil,
        _ onBatch: (_ reasons: [(key: String, reason: Closing.Reason)]) throws -> Void
    ) throws {
        let decision = settings.decisionSettings
        var key: String?, report: ReportFile?, facts = Closing.Facts()
        var reasons: [(key: String, reason: Closing.Reason)] = []
        func decide() {
            guard let key else { return }
            reasons.append((key, report.map { Closing.reason(report: $0, facts, settings: decision) } ?? .inputChanged))
        }
        // Every row is read: plan for all of them (a cursor's plan favours its first rows).
        try db.execute(
            """
            SET LOCAL cursor_tuple_fraction = 1;
            DECLARE closing_facts NO SCROLL CURSOR FOR \(closingFactsSQL(findings: findings ?? closingSQL))
            """)
        while true {
            let rows = try db.query("FETCH 2000 FROM closing_facts")  // FETCH takes a number, not an expression
            guard rows.rowCount > 0 else { break }
            for i in 0..<rows.rowCount {
                func ms(_ j: Int) -> EpochMillis? { rows.value(i, j).flatMap { EpochMillis($0) } }
                guard let k = rows.value(i, 0) else { continue }
                if k != key {
                    decide()
                    (key, report, facts) = (k, rows.value(i, 1).flatMap(ReportFile.init(rawValue:)), Closing.Facts())
                    facts.grantedNow = rows.value(i, 2) == "t"
                    facts.grantRevoked = rows.value(i, 3) == "t"
                }
                guard let own = rows.value(i, 4), let purchase = ms(5) else { continue }
                let revocation = Revocation(
                    cancellationDate: ms(6), revocationDate: ms(7), revocationType: rows.value(i, 8),
                    reversedDate: ms(9))
                if own == "t" {
                    facts.apple.append((purchase, revocation))
                } else if revocation.isReversed {
                    facts.grantRefundReversed = true
                }
            }
            if !reasons.isEmpty { try onBatch(reasons) }
            reasons.removeAll(keepingCapacity: true)
        }
        decide()
        if !reasons.isEmpty { try onBatch(reasons) }
        try db.execute("CLOSE closing_facts")
    }

    /// The working table of the findings tonight closes (`finding_key`, `report`) and why
    /// (`reason`), made by `writeClosingReasons`, read by the history's statement.
    var closingTable: SQL { "\(S).closing_reasons" }

    /// The findings tonight closes and why, into `closingTable`, inside the caller's transaction
    /// on the same session: the set first (the one pass over the findings against tonight's), then
    /// the reasons, a batch at a time.
    func writeClosingReasons(_ db: PGConnection) throws {
        try db.execute(
            """
            DROP TABLE IF EXISTS \(closingTable);
            CREATE \(newTable(closingTable, " (finding_key text PRIMARY KEY, report text NOT NULL, reason text)"))
            """)
        let closing = try db.query(
            """
            WITH c AS (
                INSERT INTO \(closingTable) (finding_key, report)
                SELECT finding_key, report FROM (\(closingSQL)) x RETURNING 1
            )
            SELECT count(*) FROM c
            """)
        // Most nights close nothing: then neither the grants nor Apple's rows are read.
        guard closing.value(0, 0) != "0" else { return }
        try closingReasons(db, findings: "SELECT finding_key, report FROM \(closingTable)") { batch in
            try db.query(
                """
                UPDATE \(closingTable) cr SET reason = u.reason
                FROM unnest(\(batch.map(\.key))::text[], \(batch.map(\.reason.rawValue))::text[]) AS u(k, reason)
                WHERE cr.finding_key = u.k
                """)
        }
        // Google Play's findings, judged from Play's facts (their keys name no App Store row).
        if settings.playReports { try PlayClosing(settings: settings).write(db, closing: closingTable) }
    }

    /// The findings history of the night, once the families are decided and refunds.csv's rows
    /// are in `current_findings`. It runs on a session of its own while the CSV files are written:
    /// they do not wait for it, because each computes the `first_seen` this statement gives
    /// (`firstSeenSQL`); closed.csv, the workbook and the page, which read what it closes and
    /// reopens, come after it. The plan's step runs it in one transaction after
    /// `writeClosingReasons` (the findings it closes, and why), so a kill leaves both undone or
    /// done. `first_seen` survives: a finding keeps the date it first appeared; one that
    /// disappears is closed, and reopens with its old first_seen if it comes back.
    var historySQL: SQL {
        let day: SQL = "\(literal: .date(UTC.date(settings.asOf)))"
        return """
            INSERT INTO \(S).findings AS f (finding_key, report, first_seen, last_seen, closed_on)
            SELECT finding_key, report, \(day), \(day), NULL FROM \(S).current_findings
            ON CONFLICT (finding_key) DO UPDATE SET
                first_seen = \(Self.firstSeenSQL(asOf: settings.asOf)),  -- what the CSV files compute
                last_seen = greatest(f.last_seen, EXCLUDED.last_seen),
                closed_on = NULL;
            UPDATE \(S).findings f SET closed_on = \(day), closed_because = coalesce(cr.reason, 'input_changed')
            FROM \(closingTable) cr WHERE cr.finding_key = f.finding_key AND f.closed_on IS NULL
            """
    }

    /// A current finding's `first_seen` as `historySQL` sets it (one definition for both), over
    /// `f`, its row of `findings` before or after tonight's history (NULL when it has none): the
    /// CSV files read it without waiting for the history.
    /// A typed literal, not a parameter: it is part of `historySQL` and of the CSV files' COPY.
    static func firstSeenSQL(asOf: EpochMillis) -> SQL {
        "least(f.first_seen, \(literal: .date(UTC.date(asOf))))"  // LEAST ignores a NULL
    }
}
