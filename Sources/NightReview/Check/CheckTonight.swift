import Foundation
import Logging
import NightDecide
import NightLearn
import Postgres
import Reconciliation

/// `check`'s "what tonight would list": the rows of each report the night's own rules give from
/// what the job already knows (the answers and transactions the nights stored; nothing is asked
/// of Apple), decided through `lookup`'s path (`LookupFamilies`: temporary tables of one session,
/// rolled back) on the families of a sample of family keys, and scaled up by the sample's share.
/// A family key is an Apple original transaction id, or the transaction id of a grant whose
/// transaction Apple never showed the job; a key is in the sample when its hash falls in a fixed
/// share, the same rule on both databases. With no more keys than `families`, every family is
/// decided and the counts are exact. Memory holds the sample, never the whole night.
struct CheckTonight {
    let settings: JobSettings
    let db: PGConnection
    let source: PGConnection
    /// `check --estimate-families`: about how many family keys to decide.
    let families: Int
    var S: SQL { settings.jobSchema.sql }
    var src: SQL { "\(ident: settings.sourceSchema)" }

    /// The reports the rules decide per family (refunds.csv and the states are not estimated).
    static let reports = ["compensate", "duplicate_grants", "clawback", "unattributed"]

    func run() throws -> Check.Tonight {
        let apple =
            Int(
                try db.query("SELECT count(DISTINCT original_transaction_id) FROM \(S).apple_transactions")
                    .value(0, 0) ?? "") ?? 0
        let grants =
            Int(
                try source.query(
                    """
                    SELECT count(DISTINCT transaction_id) FROM \(src).iap_grants WHERE transaction_id IS NOT NULL
                    """
                ).value(0, 0) ?? "") ?? 0
        // Keys per 1,000 in the sample (1,000: all of them).
        let total = apple + grants
        let share =
            total <= families
            ? 1000
            : max(1, min(1000, Int((Double(families) * 1000 / Double(max(total, 1))).rounded(.up))))
        let sampled: (SQL) -> SQL = { key in
            share >= 1000 ? "true" : "abs(hashtext(\(key))::bigint) % 1000 < \(literal: .int(share))"
        }
        var keys = Set(
            try column(
                db,
                """
                SELECT DISTINCT original_transaction_id FROM \(S).apple_transactions
                WHERE \(sampled("original_transaction_id"))
                """))
        let grantKeys = try column(
            source,
            """
            SELECT DISTINCT transaction_id FROM \(src).iap_grants
            WHERE transaction_id IS NOT NULL AND \(sampled("transaction_id"))
            """)
        // A grant's transaction Apple showed the job is decided in its Apple family, with that
        // family's key.
        let known = Set(
            try column(
                db,
                """
                SELECT transaction_id FROM \(S).apple_transactions WHERE transaction_id = ANY(\(grantKeys)::text[])
                """))
        keys.formUnion(grantKeys.filter { !known.contains($0) })

        var settings = self.settings
        settings.listPriceColumns = try SourceCheck.verify(source, schema: settings.storeRows ?? settings.sourceSchema).listPrices
        let families = LookupFamilies(db: db, source: source === db ? nil : source, settings: settings)
        let decided = try families.decideOnce(keys: keys)
        var rows = Dictionary(uniqueKeysWithValues: Self.reports.map { ($0, 0) })
        for d in decided.decisions.values {
            rows["compensate", default: 0] += d.compensations.count
            rows["duplicate_grants", default: 0] += d.duplicates.count
            rows["clawback", default: 0] += d.clawbacks.count
            rows["unattributed", default: 0] += d.unattributed.count
        }
        let scale = 1000.0 / Double(share)
        return Check.Tonight(
            exact: share >= 1000, family_keys_about: total, keys_decided: keys.count,
            families: decided.decisions.count,
            reports: rows.mapValues { Int((Double($0) * scale).rounded()) })
    }

    private func column(_ session: PGConnection, _ sql: SQL) throws -> [String] {
        try session.query(sql).rows.compactMap { $0[0] }
    }
}
