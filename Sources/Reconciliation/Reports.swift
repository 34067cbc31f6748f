// The report files of contract §6: names and columns, exactly as the contract lists them.

public enum ReportFile: String, CaseIterable, Sendable {
    case compensate = "compensate.csv"
    case duplicateGrants = "duplicate_grants.csv"
    case clawback = "clawback.csv"
    case unresolved = "unresolved.csv"
    case inputErrors = "input_errors.csv"

    public var columns: [String] {
        switch self {
        case .compensate:
            return ["order_id", "user_id", "product_id", "product_type", "quantity", "transaction_id",
                    "original_transaction_id", "purchase_date", "environment", "match", "reason", "receipt_id",
                    "first_seen"]
        case .duplicateGrants:
            return ["grant_id", "user_id", "order_id", "product_id", "product_type", "transaction_id",
                    "original_transaction_id", "kind", "kept_grant_id", "granted_at", "first_seen"]
        case .clawback:
            return ["grant_id", "user_id", "order_id", "product_id", "product_type", "quantity", "transaction_id",
                    "original_transaction_id", "granted_at", "reason", "cancellation_date", "cancellation_reason",
                    "first_seen"]
        case .unresolved:
            return ["receipt_id", "user_id", "order_id", "transaction_id", "attempts", "last_status", "last_error",
                    "last_attempt_at"]
        case .inputErrors:
            return ["relation", "key", "column", "problem"]
        }
    }
}
