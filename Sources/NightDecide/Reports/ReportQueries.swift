import Foundation
import Logging
import NightLearn
import PlayNight
import Postgres
import Reconciliation

/// The statement of each report file, the rows sorted as the file holds them.
extension ReportWriter {
    /// Read by `COPY (…) TO STDOUT`, which takes no parameters: its values are typed literals.
    func query(for file: ReportFile) -> SQL {
        switch file {
        case .closed:
            if let heldRunID { return HeldNight(settings: settings, runID: heldRunID).heldClosedSQL }
            return """
                SELECT report, finding_key, to_char(first_seen, 'YYYY-MM-DD'), to_char(closed_on, 'YYYY-MM-DD'),
                       coalesce(closed_because, 'input_changed')
                FROM \(S).findings WHERE closed_on = \(literal: .date(UTC.date(settings.asOf)))
                  -- of earlier nights: a finding seen and gone within tonight's reruns is no work done
                  AND first_seen < closed_on
                ORDER BY report COLLATE "C", finding_key COLLATE "C"
                """
        case .compensate, .duplicateGrants, .clawback, .refunds, .unattributed:
            let layout = file.layout
            let cells = (1...layout.cells).map { "c.\(ident: "c\($0)")" as SQL }
            let proceeds = Proceeds(settings: settings).cells(for: file)
            let select: [SQL] = file.layout(store: settings.playReports).names.map { name in
                switch name {
                // first_seen as tonight's findings history leaves it, which may be running meanwhile.
                case "first_seen": return "to_char(\(DecideStage.firstSeenSQL(asOf: settings.asOf)), 'YYYY-MM-DD')"
                case "proceeds": return proceeds.amount
                case "proceeds_currency": return proceeds.currency
                case "store":
                    return
                        "CASE WHEN starts_with(c.finding_key, \(literal: .text(PlayDecide.keyPrefix))) THEN 'google_play' ELSE 'app_store' END"
                default: return layout.cellColumn(name).map { "c.\(ident: $0)" } ?? "NULL::text"
                }
            }
            return """
                SELECT \(select.joined(separator: ", "))
                FROM \(S).current_findings c LEFT JOIN \(S).findings f ON f.finding_key = c.finding_key
                \(proceeds.join)
                WHERE c.report = \(literal: .text(file.rawValue))
                ORDER BY \(cells.map { "\($0) COLLATE \"C\"" as SQL }.joined(separator: ", "))
                """
        case .unresolved:
            // The receipts the tally placed in `unresolved` (Conservation.unresolvedTable): contract
            // §2's definition, as ReceiptSelection.unresolvedReceiptsSQL says it for the receipts
            // sent, without the wait between runs (a test holds the two equal). So the receipts
            // and their states are joined once a night, in the tally, not again here.
            return """
                SELECT r.receipt_id, r.user_id, r.order_id, r.transaction_id, coalesce(s.attempts, 0)::text,
                       s.last_status::text, s.last_error,
                       to_char(s.last_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                FROM r JOIN \(ident: Conservation.unresolvedTable) u ON u.receipt_id = r.receipt_id
                LEFT JOIN \(S).receipt_state s ON s.receipt_id = r.receipt_id
                ORDER BY r.receipt_id COLLATE "C"
                """
        case .consumptionRequests:
            return consumptionRequestsQuery
        case .coverage:
            return Coverage(settings: settings).csvSQL
        case .acknowledge:
            return PlayDecide.acknowledgeCSV(S)
        case .inputErrors:
            return """
                SELECT relation, key, column_name, problem FROM \(S).input_errors
                ORDER BY relation COLLATE "C", key COLLATE "C", column_name COLLATE "C", problem COLLATE "C"
                """
        }
    }

    /// How long after a request the night waits for Apple's outcome before `no_outcome`.
    static let outcomeWaitMs: EpochMillis = 30 * 86_400_000

    /// consumption_requests.csv: the requests of the refund window (by their signed date), what
    /// `respond` answered, and Apple's outcome for the transaction after the request: `refunded`
    /// (a REFUND notification, or the transaction's refund, dated after the request), `declined`
    /// (REFUND_DECLINED: Apple sends it for refunds asked in the app, so it is a lower bound),
    /// `pending`, or `no_outcome` 30 days on.
    private var consumptionRequestsQuery: SQL {
        let asOf = settings.asOf, start = settings.refundWindowStart
        let time: (SQL) -> SQL = { "to_char(\($0) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')" }
        let ms: (SQL) -> SQL = { time("to_timestamp(\($0) / 1000.0)") }
        let apple: SQL = """
            SELECT \(ms("c.requested_ms")), c.environment, c.transaction_id, c.original_transaction_id, c.user_id, c.product_id,
                   c.quantity::text, \(S).money_in_units(c.price_milli, c.currency), CASE WHEN c.price_milli IS NOT NULL THEN c.currency END,
                   c.reason, c.state, c.detail, c.delivery_status, c.consumption_percentage::text, c.refund_preference,
                   \(time("c.sent_at")), c.error_code::text,
                   CASE WHEN o.refunded_ms IS NOT NULL THEN 'refunded'
                        WHEN o.declined_ms IS NOT NULL THEN 'declined'
                        WHEN c.requested_ms + \(literal: .int(Int(Self.outcomeWaitMs))) > \(literal: .int(Int(asOf))) THEN 'pending'
                        ELSE 'no_outcome' END,
                   \(ms("coalesce(o.refunded_ms, o.declined_ms)")), c.notification_uuid
            FROM \(S).consumption_requests c
            CROSS JOIN LATERAL (
                SELECT least(min(n.signed_date_ms) FILTER (WHERE n.notification_type = 'REFUND'),
                             (SELECT min(t.cancellation_date_ms) FROM \(S).apple_transactions t
                              WHERE t.transaction_id = c.transaction_id AND t.environment = c.environment
                                AND t.cancellation_date_ms >= c.requested_ms
                                AND t.cancellation_date_ms <= \(literal: .int(Int(asOf))))) AS refunded_ms,
                       min(n.signed_date_ms) FILTER (WHERE n.notification_type = 'REFUND_DECLINED') AS declined_ms
                FROM \(S).notifications n
                WHERE n.transaction_id = c.transaction_id AND n.environment = c.environment
                  AND n.signed_date_ms >= c.requested_ms AND n.signed_date_ms <= \(literal: .int(Int(asOf)))
            ) o
            WHERE c.requested_ms >= \(literal: .int(Int(start))) AND c.requested_ms <= \(literal: .int(Int(asOf)))
            """
        guard settings.playReports else { return "\(apple) ORDER BY c.requested_ms, c.notification_uuid COLLATE \"C\"" }
        let names = (1...20).map { "\(ident: "c\($0)")" as SQL }.joined()
        return
            "SELECT * FROM (\(apple) UNION ALL \(PlayReviewRows.sql(S, asOf: asOf, from: start, outcomeWaitMs: Self.outcomeWaitMs))) u (\(names)) ORDER BY c1, c20 COLLATE \"C\""
    }
}
