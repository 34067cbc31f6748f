// The report files of contract §6: names and columns, exactly as the contract lists them.

public enum ReportFile: String, CaseIterable, Sendable {
    case compensate = "compensate.csv"
    case duplicateGrants = "duplicate_grants.csv"
    case clawback = "clawback.csv"
    case refunds = "refunds.csv"
    case unattributed = "unattributed.csv"
    case closed = "closed.csv"
    case unresolved = "unresolved.csv"
    case inputErrors = "input_errors.csv"

    /// The file's name without `.csv`: its key in summary.json's `counts` and `reasons`, and its
    /// sheet's name in the workbook.
    public var name: String { String(rawValue.dropLast(4)) }

    public var columns: [String] {
        switch self {
        case .compensate:
            return ["order_id", "user_id", "product_id", "product_type", "quantity", "transaction_id",
                    "original_transaction_id", "purchase_date", "environment", "match", "reason", "receipt_id",
                    "first_seen", "amount", "currency", "source"]
        case .duplicateGrants:
            return ["grant_id", "user_id", "order_id", "product_id", "product_type", "transaction_id",
                    "original_transaction_id", "kind", "kept_grant_id", "granted_at", "first_seen"]
        case .clawback:
            return ["grant_id", "user_id", "order_id", "product_id", "product_type", "quantity", "transaction_id",
                    "original_transaction_id", "granted_at", "reason", "cancellation_date", "cancellation_reason",
                    "first_seen", "amount", "currency"]
        case .unresolved:
            return ["receipt_id", "user_id", "order_id", "transaction_id", "attempts", "last_status", "last_error",
                    "last_attempt_at"]
        case .inputErrors:
            return ["relation", "key", "column", "problem"]
        case .refunds:
            return ["transaction_id", "original_transaction_id", "user_id", "product_id", "product_type", "revocation_date",
                    "revocation_reason", "revocation_type", "revocation_percentage", "amount", "refunded_amount", "currency",
                    "state", "grant_ids", "first_seen"]
        case .unattributed:
            return ["transaction_id", "product_id", "purchase_date", "amount", "currency", "storefront", "first_seen"]
        case .closed:
            return ["report", "finding_key", "first_seen", "closed_on", "closed_because"]
        }
    }

    /// Where `first_seen` stands among the columns of a findings report (nil: the report has none).
    public var firstSeenIndex: Int? { isFindings ? columns.firstIndex(of: "first_seen") : nil }

    /// The reports whose rows are findings, remembered night over night (`first_seen`, closed.csv).
    public var isFindings: Bool {
        switch self {
        case .compensate, .duplicateGrants, .clawback, .refunds, .unattributed: return true
        case .unresolved, .inputErrors, .closed: return false
        }
    }
}
