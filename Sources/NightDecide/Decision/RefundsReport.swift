// refunds.csv (docs/rules.md "refunds.csv"): Postgres gathers the facts of every production
// transaction Apple may have refunded in the window, a small set; the rules decide which are
// listed (`Refunds.isListed`), with which date (`Revocation.refundDate`) and state
// (`Refunds.state`), so the rule runs in the form the unit tests check.

import Postgres
import Reconciliation

extension DecideStage {
    /// The facts of refunds.csv's candidates: every production transaction with a date of Apple
    /// taking it back, or of a reversal, on or after the refund window's start (more than the
    /// rules list: they pick), with whose purchase it is (the first uploader of its receipts, else
    /// `who`, else its first grantee), its product, its amount (Apple's price, else the list price)
    /// and its grants. Columns: 0 transaction_id, 1 original_transaction_id, 2 user, 3 product_id,
    /// 4 product_type, 5 cancellation_date_ms, 6 revocation_date_ms, 7 revocation_type,
    /// 8 reversed_date_ms, 9 reason, 10 revocation_percentage, 11 amount, 12 refunded amount,
    /// 13 currency, 14 grants, 15 active grants, 16 grant ids. Read by COPY: typed literals.
    var refundFactsSQL: SQL {
        """
        WITH sel AS (
            SELECT t.*, CASE WHEN t.price_milliunits IS NOT NULL THEN t.price_milliunits END AS apple_milli
            FROM \(S).apple_transactions t
            WHERE t.environment = 'production'
              AND greatest(t.cancellation_date_ms, t.revocation_date_ms, t.reversed_date_ms)
                  >= \(literal: .int(settings.refundWindowStart))
        ), uploader AS (
            SELECT DISTINCT ON (rt.transaction_id) rt.transaction_id, r.user_id
            FROM sel JOIN \(S).receipt_transactions rt
                 ON rt.transaction_id = sel.transaction_id AND rt.environment = 'production'
            JOIN r ON r.receipt_id = rt.receipt_id
            ORDER BY rt.transaction_id, r.submitted_ms, r.receipt_id COLLATE "C"
        ), granted AS (
            SELECT g.transaction_id, string_agg(g.grant_id, ' ' ORDER BY g.grant_id COLLATE "C") AS ids, count(*) AS n,
                   count(*) FILTER (WHERE g.revoked_ms IS NULL) AS active,
                   (array_agg(g.user_id ORDER BY g.granted_ms, g.grant_id COLLATE "C"))[1] AS first_user
            -- a semi-join, so that Postgres hashes the few refunds and scans the grants, not the
            -- other way round (sel is one row per transaction id: production only)
            FROM g WHERE g.transaction_id IN (SELECT transaction_id FROM sel) GROUP BY g.transaction_id
        ), priced AS (
            SELECT sel.*, coalesce(sel.apple_milli, p.list_milli * sel.quantity) AS amount_milli,
                   CASE WHEN sel.apple_milli IS NOT NULL THEN sel.currency ELSE p.list_currency END AS amount_currency,
                   p.product_type, u.user_id AS uploader, w.user_id AS attributed,
                   gr.ids, gr.n, gr.active, gr.first_user
            FROM sel LEFT JOIN p ON p.product_id = sel.product_id
            LEFT JOIN uploader u ON u.transaction_id = sel.transaction_id
            LEFT JOIN who w ON w.transaction_id = sel.transaction_id AND w.environment = 'production'
            LEFT JOIN granted gr ON gr.transaction_id = sel.transaction_id
        )
        SELECT transaction_id, original_transaction_id, coalesce(uploader, attributed, first_user), product_id,
               product_type,
               cancellation_date_ms::text, revocation_date_ms::text, revocation_type, reversed_date_ms::text,
               coalesce(revocation_reason::text, cancellation_reason), revocation_percentage::text,
               \(S).money_in_units(amount_milli, amount_currency),
               -- prorated: amount × percentage, exact, rounded once to the currency's minor unit
               \(S).money_in_units(CASE WHEN revocation_percentage IS NULL THEN amount_milli
                                         ELSE amount_milli::numeric * revocation_percentage / 100000 END, amount_currency),
               CASE WHEN amount_milli IS NOT NULL THEN amount_currency END,
               coalesce(n, 0)::text, coalesce(active, 0)::text, ids
        FROM priced
        """
    }

    /// refunds.csv's rows, decided by the rules from `refundFactsSQL`'s facts, a batch at a time
    /// through a cursor (inside the caller's transaction): each listed refund's finding key and
    /// cells (`c1`…`c14`: nil where the facts hold none), in no order (the file sorts them). Between
    /// batches the session is free for the caller's writes.
    func refundRows(_ db: PGConnection, _ onBatch: (_ rows: [(key: String, cells: [String?])]) throws -> Void) throws {
        let decision = settings.decisionSettings
        // Every row is read: plan for all of them (a cursor's plan favours its first rows).
        try db.execute(
            "SET LOCAL cursor_tuple_fraction = 1; DECLARE refund_facts NO SCROLL CURSOR FOR \(refundFactsSQL)")
        while true {
            let facts = try db.query("FETCH 2000 FROM refund_facts")  // FETCH takes a number, not an expression
            guard facts.rowCount > 0 else { break }
            var rows: [(key: String, cells: [String?])] = []
            for i in 0..<facts.rowCount {
                func text(_ j: Int) -> String? { facts.value(i, j) }
                func ms(_ j: Int) -> EpochMillis? { text(j).flatMap { EpochMillis($0) } }
                let revocation = Revocation(
                    cancellationDate: ms(5), revocationDate: ms(6), revocationType: text(7), reversedDate: ms(8))
                guard let id = text(0), Refunds.isListed(revocation, environment: .production, settings: decision),
                    let refunded = revocation.refundDate
                else { continue }
                let state = Refunds.state(
                    revocation, grants: text(14).flatMap { Int($0) } ?? 0,
                    activeGrants: text(15).flatMap { Int($0) } ?? 0)
                rows.append(
                    (
                        "refund|" + id,
                        [
                            id, text(1), text(2), text(3), text(4), UTC.timestamp(refunded), text(9), text(7),
                            text(10), text(11), text(12), text(13), state.rawValue, text(16),
                        ]
                    ))
            }
            try onBatch(rows)
        }
        try db.execute("CLOSE refund_facts")
    }

    /// refunds.csv into `{S}.current_findings`, on the step's session, in one transaction.
    func writeRefunds(_ db: PGConnection) throws {
        try db.transaction {
            try refundRows(db) { rows in
                guard !rows.isEmpty else { return }
                try db.copyIn("COPY \(S).current_findings FROM STDIN") { w in
                    for row in rows {
                        var fields: [String?] = [ReportFile.refunds.rawValue, row.key] + row.cells
                        while fields.count < 2 + FindingSink.maxCells { fields.append(nil) }
                        try w.row(fields)
                    }
                }
            }
        }
    }
}
