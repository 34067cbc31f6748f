import Postgres

/// `{S}.apple_transactions`, said once: each column's name and type, the field of a learned
/// transaction that fills it (`AnswerRecord.Transaction`, whose fields are also the columns of
/// `pg_temp.staged_transactions` and the keys `learn_transactions` reads), and how a transaction
/// learned again merges into the row already there.
///
/// The migrations that made the table and its merges are frozen texts (Migrations.swift); the
/// SQL the job writes itself takes its column lists from here (the staging COPY, lookup's copy of
/// the table), and tests hold the description to the migrated table, to the staging table and to
/// the merge the latest migration runs (AppleTransactionColumnsTests). A new column or a changed
/// rule is a line here and a new migration written from `insertList`, `recordList` and `mergeList`.
package enum AppleTransactionColumns {
    /// How a transaction learned again merges into the row already there (`t`; `EXCLUDED` the new one).
    enum Merge: Sendable, Equatable {
        /// Part of the key `(transaction_id, environment)`: never updated.
        case key
        /// Apple's latest answer replaces it.
        case replace
        /// Once seen, it stays: `coalesce(EXCLUDED.c, t.c)` (a refund or a revocation is never forgotten).
        case keepSeen
        /// Only grows: `greatest(EXCLUDED.c, t.c)`.
        case greatest
        /// The most direct way the job learned it (`source_rank`, migration 6).
        case mostDirectSource
        /// Set when the row is made, never merged.
        case madeAt
        /// `now()` at every merge.
        case touchedAt
        /// Learned only from the Server API sweeps (`learn_transactions`), merged by their own rule.
        case sweepsOnly(SQL)
    }

    /// A column's type, as `format_type` says it.
    enum ColumnType: String, Sendable {
        case text, integer, bigint, boolean
        case timestamptz = "timestamp with time zone"

        var sql: SQL {
            switch self {
            case .text: "text"
            case .integer: "integer"
            case .bigint: "bigint"
            case .boolean: "boolean"
            case .timestamptz: "timestamptz"
            }
        }
    }

    struct Column: Sendable {
        let name: String
        let type: ColumnType
        /// The field of `AnswerRecord.Transaction` that fills it; nil when the column is not one of
        /// a learned transaction's fields (the key's environment, the source, the times).
        let field: String?
        let merge: Merge
    }

    /// Columns that merge by one rule, each `(name, type, field)`.
    private static func merged(_ merge: Merge, _ columns: (String, ColumnType, String?)...) -> [Column] {
        columns.map { Column(name: $0.0, type: $0.1, field: $0.2, merge: merge) }
    }

    /// In the table's order (migrations 1, 5 and 6 added them in this order).
    static let all: [Column] = [
        merged(.key, ("transaction_id", .text, "tid"), ("environment", .text, nil)),
        merged(
            .replace, ("original_transaction_id", .text, "otid"), ("product_id", .text, "pid"), ("quantity", .integer, "q"),
            ("purchase_date_ms", .bigint, "pd")),
        merged(
            .keepSeen, ("original_purchase_date_ms", .bigint, "opd"), ("expires_date_ms", .bigint, "exp"),
            ("cancellation_date_ms", .bigint, "cd"), ("cancellation_reason", .text, "cr"), ("is_trial_period", .boolean, "trial"),
            ("web_order_line_item_id", .text, "wol"), ("bundle_id", .text, "bundle")),
        merged(.madeAt, ("first_learned_at", .timestamptz, nil)),
        merged(.touchedAt, ("updated_at", .timestamptz, nil)),
        // What a signed transaction carries beyond verifyReceipt's fields (migration 5).
        merged(
            .keepSeen, ("price_milliunits", .bigint, "price"), ("currency", .text, "cur"), ("storefront", .text, "sf"),
            ("app_account_token", .text, "aat"), ("type", .text, "type"), ("in_app_ownership_type", .text, "own"),
            ("transaction_reason", .text, "reason"), ("revocation_date_ms", .bigint, "rvd"),
            ("revocation_reason", .integer, "rvr"), ("revocation_type", .text, "rvt"), ("revocation_percentage", .integer, "rvp")),
        merged(.greatest, ("signed_date_ms", .bigint, "sd")),
        merged(.mostDirectSource, ("source", .text, nil)),
        // The sweeps' own (migration 6).
        merged(.sweepsOnly("greatest(t.reversed_date_ms, EXCLUDED.reversed_date_ms)"), ("reversed_date_ms", .bigint, nil)),
        merged(.sweepsOnly("coalesce(t.history_user_id, EXCLUDED.history_user_id)"), ("history_user_id", .text, nil)),
    ].flatMap { $0 }

    /// The columns an answer fills (`record_staged_answers`' INSERT list): key, fields, source.
    static var answerColumns: [Column] {
        all.filter { $0.merge == .key || $0.field != nil || $0.merge == .mostDirectSource }
    }

    /// `transaction_id, environment, original_transaction_id, …, source`: what an answer inserts.
    static var insertList: SQL {
        answerColumns.map { "\(ident: $0.name)" as SQL }.joined()
    }

    /// `tid text, otid text, …, sd bigint`: a learned transaction's fields as a record (the
    /// columns of `staged_transactions` after its receipt, environment and kind; `jsonb_to_record`).
    static var recordList: SQL {
        all.compactMap { c in c.field.map { "\(ident: $0) \(c.type.sql)" as SQL } }.joined()
    }

    /// The fields in the record's order (`AnswerRecord.Transaction`, the staging COPY).
    static var fields: [String] { all.compactMap(\.field) }

    /// `original_transaction_id = EXCLUDED.original_transaction_id, …, updated_at = now()`: how an
    /// answer merges into the row already there (`t`), the columns in `insertList`'s order.
    static func mergeList(schema: JobSchema) -> SQL {
        let set: [SQL] = (answerColumns + all.filter { $0.merge == .touchedAt }).compactMap { c in
            let n: SQL = "\(ident: c.name)"
            switch c.merge {
            case .key, .madeAt, .sweepsOnly: return nil
            case .replace: return "\(n) = EXCLUDED.\(n)"
            case .keepSeen: return "\(n) = coalesce(EXCLUDED.\(n), t.\(n))"
            case .greatest: return "\(n) = greatest(EXCLUDED.\(n), t.\(n))"
            case .mostDirectSource:
                return
                    "\(n) = CASE WHEN \(schema.sql).source_rank(EXCLUDED.\(n)) < \(schema.sql).source_rank(t.\(n)) THEN EXCLUDED.\(n) ELSE t.\(n) END"
            case .touchedAt: return "\(n) = now()"
            }
        }
        return set.joined()
    }

    /// What `learn_transactions(jsonb)` (migration 6) does with one element `a` of its array, said
    /// from this description: the transaction inserted into `table` (`t`) or merged into the row
    /// there, by the answers' rules (`mergeList`) and the sweeps' own. The element is a learned
    /// transaction's fields (`recordList`) with `env`, `src`, `hu` (the history user) and `rvsd`
    /// (a reversal's date); its app account token is kept lowercase, as the function keeps it.
    /// `lookup` runs it, element by element, on its temporary copy of the table, so that it merges
    /// as the nights do without a copy of the migration's text (a test holds the two to the same rows).
    package static func learnSQL(into table: SQL, element a: SQL, schema: JobSchema) -> SQL {
        let sweeps = all.filter { if case .sweepsOnly = $0.merge { return true } else { return false } }
        let fromElement: [String: SQL] = [
            "environment": "a->>'env'", "source": "a->>'src'", "history_user_id": "a->>'hu'",
            "reversed_date_ms": "(a->>'rvsd')::bigint",
        ]
        let values: [SQL] = (answerColumns + sweeps).map { c in
            if let field = c.field {
                return c.name == "app_account_token" ? "lower(x.\(ident: field))" : "x.\(ident: field)"
            }
            return fromElement[c.name]!
        }
        let sweepsSet: [SQL] = sweeps.compactMap { c in
            if case .sweepsOnly(let rule) = c.merge { return "\(ident: c.name) = \(rule)" }
            return nil
        }
        return """
            INSERT INTO \(table) AS t (\(insertList), \((sweeps.map { "\(ident: $0.name)" as SQL }).joined()))
            SELECT \(values.joined())
            FROM (SELECT \(a) AS a) e, jsonb_to_record(e.a) AS x(\(recordList))
            ON CONFLICT (transaction_id, environment) DO UPDATE SET \(mergeList(schema: schema)), \(sweepsSet.joined())
            """
    }

    /// `COPY pg_temp.staged_transactions (r, env, kind, tid, …, linked) FROM STDIN`: the answer's
    /// receipt, environment and kind, the transaction's fields, and whether the link to the receipt
    /// is stored already (`StagedAnswers.encode`, migration 17).
    package static let stagedCopy: SQL =
        "COPY pg_temp.staged_transactions (r, env, kind, \(fields.map { "\(ident: $0)" as SQL }.joined()), linked) FROM STDIN"
}
