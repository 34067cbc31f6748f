// consumption_requests.csv's Google Play rows: the pending refund reviews `respond` answered
// (`play_refund_reviews`), in the columns of Apple's requests.

import Postgres
import Reconciliation

/// The statement of Play's rows of consumption_requests.csv (the night's report statement joins
/// them to Apple's requests).
package enum PlayReviewRows {
    /// Google Play's pending refund reviews of the refund window in consumption_requests.csv's
    /// columns, after Apple's requests (the whole sorted by time, then id): the order id as the
    /// transaction, the purchase's products and units, the order's total; `reason` Google's
    /// `refundReason`; the preference and consumption as sent (`body`); `apple_error_code` the
    /// HTTP status of a refusal; `outcome` `refunded` when a voided record of the order came at or
    /// after the review (Google sends no decline: otherwise `pending`, then `no_outcome`).
    package static func sql(_ S: SQL, asOf: EpochMillis, from start: EpochMillis, outcomeWaitMs: EpochMillis) -> SQL {
        let time: (SQL) -> SQL = { "to_char(\($0) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')" }
        let requested: SQL = "(extract(epoch FROM r.requested_at) * 1000)::bigint"
        return """
            SELECT \(time("r.requested_at")), 'production', r.order_id, r.order_id, NULL, p.products, p.units::text,
                   \(S).money_in_units(m.milli, m.currency), CASE WHEN m.milli IS NOT NULL THEN m.currency END,
                   r.refund_reason::text, r.state, r.detail, NULL, r.body::jsonb ->> 'consumptionPercentageMilliunits',
                   r.body::jsonb ->> 'refundPreference', CASE WHEN r.state = 'sent' THEN \(time("r.answered_at")) END,
                   CASE WHEN r.state IN ('rejected', 'not_found') THEN r.http_status::text END,
                   CASE WHEN v.voided_ms IS NOT NULL THEN 'refunded'
                        WHEN \(requested) + \(literal: .int(Int(outcomeWaitMs))) > \(literal: .int(Int(asOf))) THEN 'pending'
                        ELSE 'no_outcome' END,
                   \(time("to_timestamp(v.voided_ms / 1000.0)")), r.message_id
            FROM \(S).play_refund_reviews r
            LEFT JOIN LATERAL (
                SELECT string_agg(l.product_id, ' ' ORDER BY l.line) AS products, sum(l.quantity) AS units
                FROM \(S).play_purchases pp JOIN \(S).play_purchase_lines l ON l.token = pp.token
                WHERE pp.order_id = r.order_id
            ) p ON true
            LEFT JOIN LATERAL (
                SELECT o.total_currency AS currency, o.total_units * 1000 + round(o.total_nanos::numeric / 1000000) AS milli
                FROM \(S).play_orders o WHERE o.order_id = r.order_id AND NOT o.unknown AND o.total_currency IS NOT NULL
            ) m ON true
            LEFT JOIN LATERAL (
                SELECT min(pv.voided_ms) AS voided_ms FROM \(S).play_voided pv
                WHERE pv.order_id = r.order_id AND pv.voided_ms >= \(requested) AND pv.voided_ms <= \(literal: .int(Int(asOf)))
            ) v ON true
            WHERE \(requested) >= \(literal: .int(Int(start))) AND \(requested) <= \(literal: .int(Int(asOf)))
            """
    }
}
