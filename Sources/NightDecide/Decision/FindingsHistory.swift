// The findings history of the night (contract §6: first_seen, closed.csv's closed_on and its
// reason), run once the families are decided and refunds.csv's rows are in.

import Postgres
import Reconciliation

extension DecideStage {
    /// Why a finding of an earlier night is gone tonight (closed.csv), judged from the data as it
    /// is now: the purchase left the window (out_of_window), the goods were delivered (granted),
    /// the grant was taken back (revoked), Apple reversed the refund (refund_reversed), or else the
    /// source rows changed (input_changed). The key holds the id after its report's prefix.
    /// Part of `historySQL`, several statements in one text: its values are typed literals.
    var closedBecauseSQL: SQL {
        let refundStart = SQLLiteral.int(settings.refundWindowStart), windowStart = SQLLiteral.int(settings.windowStart)
        let id: SQL = "split_part(f.finding_key, '|', 2)"
        func apple(_ condition: SQL) -> SQL {
            "EXISTS (SELECT 1 FROM \(S).apple_transactions t WHERE t.transaction_id = \(id) AND \(condition))"
        }
        let grantRevoked: SQL = "EXISTS (SELECT 1 FROM g WHERE g.grant_id = \(id) AND g.revoked_ms IS NOT NULL)"
        let granted: SQL = "EXISTS (SELECT 1 FROM g WHERE g.transaction_id = \(id) AND g.revoked_ms IS NULL)"
        return """
            CASE f.report
                WHEN 'compensate.csv' THEN CASE
                    WHEN \(apple("t.purchase_date_ms < \(literal: windowStart)")) THEN 'out_of_window'
                    WHEN \(granted) THEN 'granted' ELSE 'input_changed' END
                WHEN 'unattributed.csv' THEN CASE
                    WHEN \(apple("t.purchase_date_ms < \(literal: windowStart)")) THEN 'out_of_window'
                    WHEN \(granted) THEN 'granted' ELSE 'input_changed' END
                WHEN 'duplicate_grants.csv' THEN CASE WHEN \(grantRevoked) THEN 'revoked' ELSE 'input_changed' END
                WHEN 'clawback.csv' THEN CASE
                    WHEN \(grantRevoked) THEN 'revoked'
                    WHEN EXISTS (SELECT 1 FROM g JOIN \(S).apple_transactions t ON t.transaction_id = g.transaction_id
                                 WHERE g.grant_id = \(id) AND \(TransactionColumn.reversed)) THEN 'refund_reversed'
                    ELSE 'input_changed' END
                WHEN 'refunds.csv' THEN CASE
                    WHEN \(apple("coalesce(t.cancellation_date_ms, t.revocation_date_ms) < \(literal: refundStart) AND coalesce(t.reversed_date_ms, 0) < \(literal: refundStart)")) THEN 'out_of_window'
                    ELSE 'input_changed' END
                ELSE 'input_changed'
            END
            """
    }

    /// The findings history of the night, once the families are decided and refunds.csv's rows
    /// are in `current_findings`. It runs on a session of its own while the CSV files are written:
    /// they do not wait for it, because each computes the `first_seen` this statement gives
    /// (`firstSeenSQL`); closed.csv, the workbook and the page, which read what it closes and
    /// reopens, come after it. One simple query is one transaction, so a kill leaves it undone
    /// or done. `first_seen` survives: a finding keeps the date it first appeared; one that
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
            UPDATE \(S).findings f SET closed_on = \(day), closed_because = \(closedBecauseSQL)
            WHERE closed_on IS NULL AND first_seen <= \(day)
              AND NOT EXISTS (SELECT 1 FROM \(S).current_findings c WHERE c.finding_key = f.finding_key)
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
