// Why a Google Play finding of an earlier night is gone tonight (closed.csv `closed_because`),
// judged by the rule book (`Closing.reason`) from what the data shows now of its purchase or
// grant: the same reasons as the App Store's findings.

import JobStore
import NightLearn
import Postgres
import Reconciliation

/// The closing reasons of Play's findings among those tonight closes.
package struct PlayClosing: Sendable {
    let settings: JobSettings
    var S: SQL { settings.jobSchema.sql }

    /// With the night's settings; its working tables (`play_g`) made tonight.
    package init(settings: JobSettings) { self.settings = settings }

    /// Sets `reason` in `closing` (`finding_key`, `report`, `reason`) for its Play findings, inside
    /// the caller's transaction. Tonight's Play rows unread (Play not configured): left as they are.
    package func write(_ db: PGConnection, closing: SQL) throws {
        let exists = try db.query("SELECT to_regclass(\(literal: .text(S.text + ".play_g"))) IS NOT NULL")
        guard exists.value(0, 0) == "t" else { return }
        let prefix: SQL = "\(literal: .text(PlayDecide.keyPrefix))"
        // Each key's id (a transaction id or a grant id, after its kind), the purchase it names
        // (by order id or token), its completion and latest void, and the grants it names.
        let r = try db.query(
            """
            WITH k AS (
                SELECT c.finding_key, c.report, split_part(substr(c.finding_key, length(\(prefix)) + 1), '|', 2) AS id
                FROM \(closing) c WHERE starts_with(c.finding_key, \(prefix))
            )
            SELECT k.finding_key, k.report,
                   (SELECT \(SourceRelation.epochMilliseconds("p.completed_at")) FROM \(S).play_purchases p
                    WHERE p.order_id = k.id OR p.token = k.id ORDER BY p.token LIMIT 1),
                   (SELECT max(v.voided_ms) FROM \(S).play_voided v JOIN \(S).play_purchases p ON p.token = v.token
                    WHERE p.order_id = k.id OR p.token = k.id),
                   EXISTS (SELECT 1 FROM \(S).play_g g JOIN \(S).play_purchases p ON g.transaction_id IN (p.order_id, p.token)
                           WHERE (p.order_id = k.id OR p.token = k.id) AND g.revoked_ms IS NULL),
                   EXISTS (SELECT 1 FROM \(S).play_g g WHERE g.grant_id = k.id AND g.revoked_ms IS NOT NULL)
            FROM k
            """)
        guard r.rowCount > 0 else { return }
        let decision = settings.decisionSettings
        var keys: [String] = [], reasons: [String] = []
        for row in r.rows {
            guard let key = row[0], let report = row[1].flatMap(ReportFile.init(rawValue:)) else { continue }
            var facts = Closing.Facts(grantedNow: row[4] == "t", grantRevoked: row[5] == "t")
            if let completed = row[2].flatMap({ EpochMillis($0) }) {
                facts.apple = [(completed, Revocation(cancellationDate: row[3].flatMap { EpochMillis($0) }))]
            }
            keys.append(key)
            reasons.append(Closing.reason(report: report, facts, settings: decision).rawValue)
        }
        try db.query(
            """
            UPDATE \(closing) c SET reason = u.reason FROM unnest(\(keys)::text[], \(reasons)::text[]) AS u(k, reason)
            WHERE c.finding_key = u.k
            """)
    }
}
