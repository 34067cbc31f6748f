import JobStore
import Postgres

/// Contract §1: the four source relations, their columns and the kinds of their types.
public enum SourceCheck {
    enum Kind: String {
        case text, integer = "an integer (integer, bigint, smallint)", timestamp = "timestamp with time zone"
        case number = "a number (numeric, integer, bigint, smallint)"
    }

    /// Optional columns: absent is fine, present must have the kind shown (contract §1).
    static let optional: [(relation: String, columns: [(String, Kind)])] = [
        ("iap_products", [("price", .number), ("currency", .text), ("store", .text)]),
        ("iap_orders", [("store", .text)]), ("iap_receipts", [("store", .text)]), ("iap_grants", [("store", .text)]),
    ]

    /// What the check found beyond the required columns.
    public struct Shape: Sendable {
        /// `iap_products` has both `price` and `currency`.
        public var listPrices = false
        /// The relations with the optional `store` column (contract §1, "Two stores in one shop"):
        /// when there is one, the App Store's rows are read through `StoreViews`.
        package var storeColumns: Set<SourceRelation> = []
    }

    static let relations: [(name: String, columns: [(String, Kind)])] = [
        ("iap_products", [("product_id", .text), ("product_type", .text), ("bundle_id", .text)]),
        (
            "iap_orders",
            [
                ("order_id", .text), ("user_id", .text), ("product_id", .text), ("quantity", .integer),
                ("status", .text), ("transaction_id", .text), ("created_at", .timestamp),
            ]
        ),
        (
            "iap_receipts",
            [
                ("receipt_id", .text), ("user_id", .text), ("order_id", .text), ("transaction_id", .text),
                ("receipt_data", .text), ("submitted_at", .timestamp), ("verify_status", .integer),
            ]
        ),
        (
            "iap_grants",
            [
                ("grant_id", .text), ("user_id", .text), ("order_id", .text), ("product_id", .text),
                ("transaction_id", .text), ("original_transaction_id", .text), ("quantity", .integer),
                ("granted_at", .timestamp), ("revoked_at", .timestamp),
            ]
        ),
    ]

    /// Throws exit 65 naming every missing relation or column, or a column of the wrong kind.
    @discardableResult
    public static func verify(_ db: PGConnection, schema: String) throws -> Shape {
        let result = try db.query(
            """
            SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod)
            FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            WHERE n.nspname = \(schema) AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
              AND c.relname IN ('iap_products', 'iap_orders', 'iap_receipts', 'iap_grants')
            """)
        var found: [String: [String: String]] = [:]
        for row in 0..<result.rowCount {
            let relation = result.value(row, 0)!
            var columns = found[relation] ?? [:]
            if let column = result.value(row, 1) { columns[column] = result.value(row, 2) ?? "" }
            found[relation] = columns
        }
        var problems: [String] = []
        for relation in relations {
            guard let columns = found[relation.name] else {
                problems.append("relation \(schema).\(relation.name) is missing")
                continue
            }
            for (column, kind) in relation.columns {
                guard let type = columns[column] else {
                    problems.append("\(schema).\(relation.name) has no column \(column)")
                    continue
                }
                if !matches(type, kind) {
                    problems.append("\(schema).\(relation.name).\(column) is \(type), expected \(kind.rawValue)")
                }
            }
        }
        var shape = Shape()
        for relation in optional {
            guard let columns = found[relation.relation] else { continue }
            for (column, kind) in relation.columns {
                if let type = columns[column], !matches(type, kind) {
                    problems.append("\(schema).\(relation.relation).\(column) is \(type), expected \(kind.rawValue)")
                }
            }
        }
        let products = found["iap_products"] ?? [:]
        shape.listPrices = products["price"] != nil && products["currency"] != nil
        shape.storeColumns = Set(SourceRelation.allCases.filter { found[$0.rawValue]?["store"] != nil })
        if (products["price"] != nil) != (products["currency"] != nil) {
            problems.append(
                "\(schema).iap_products has " + (products["price"] != nil ? "price without currency" : "currency without price")
                    + " (the optional list price needs both)")
        }
        if !problems.isEmpty {
            throw JobError(
                .sourceMismatch,
                "source relations do not match the contract: "
                    + problems.joined(separator: "; ") + " (see docs/contract.md, 'Source relations')")
        }
        try checkPrivileges(db, schema: schema)
        return shape
    }

    /// Every source relation must be readable by the job's role: one line naming each missing
    /// privilege (exit 78), before any row is read, rather than a failure halfway through.
    static func checkPrivileges(_ db: PGConnection, schema: String) throws {
        let result = try db.query(
            """
            SELECT r.name, has_schema_privilege(current_user, s.name, 'USAGE')
                   AND has_table_privilege(current_user, format('%I.%I', s.name, r.name), 'SELECT'),
                   current_user
            FROM (SELECT \(schema)::text AS name) s,
                 unnest(ARRAY['iap_products', 'iap_orders', 'iap_receipts', 'iap_grants']) AS r(name)
            """)
        var missing: [String] = []
        var role = ""
        for row in 0..<result.rowCount {
            role = result.value(row, 2) ?? ""
            if result.value(row, 1) != "t" { missing.append("SELECT on \(schema).\(result.value(row, 0) ?? "")") }
        }
        if !missing.isEmpty {
            throw JobError(
                .configuration,
                "the database role \(role) lacks a privilege: " + missing.joined(separator: ", ")
                    + " (grant it, see docs/contract.md, 'Database privileges')")
        }
    }

    static func matches(_ type: String, _ kind: Kind) -> Bool {
        switch kind {
        case .text: return type == "text" || type.hasPrefix("character") || type == "name" || type == "citext"
        // numeric would print as 1.00 and a timestamp without time zone would shift with the
        // session's zone: both are refused; a view can cast them (quantity::int, ts AT TIME ZONE 'UTC').
        case .integer: return ["integer", "bigint", "smallint"].contains(type)
        case .timestamp: return type == "timestamp with time zone"
        case .number: return type.hasPrefix("numeric") || ["integer", "bigint", "smallint"].contains(type)
        }
    }
}
