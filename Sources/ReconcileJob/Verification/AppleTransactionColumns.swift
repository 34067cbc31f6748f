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
enum AppleTransactionColumns {
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

    /// Names and types are the code's own fixed text (SQL literals), never values.
    struct Column: Sendable {
        let name: SQL
        /// As `format_type` says it.
        let type: SQL
        /// The field of `AnswerRecord.Transaction` that fills it; nil when the column is not one of
        /// a learned transaction's fields (the key's environment, the source, the times).
        let field: SQL?
        let merge: Merge
    }

    static let all: [Column] = [
        Column(name: "transaction_id", type: "text", field: "tid", merge: .key),
        Column(name: "environment", type: "text", field: nil, merge: .key),
        Column(name: "original_transaction_id", type: "text", field: "otid", merge: .replace),
        Column(name: "product_id", type: "text", field: "pid", merge: .replace),
        Column(name: "quantity", type: "integer", field: "q", merge: .replace),
        Column(name: "purchase_date_ms", type: "bigint", field: "pd", merge: .replace),
        Column(name: "original_purchase_date_ms", type: "bigint", field: "opd", merge: .keepSeen),
        Column(name: "expires_date_ms", type: "bigint", field: "exp", merge: .keepSeen),
        Column(name: "cancellation_date_ms", type: "bigint", field: "cd", merge: .keepSeen),
        Column(name: "cancellation_reason", type: "text", field: "cr", merge: .keepSeen),
        Column(name: "is_trial_period", type: "boolean", field: "trial", merge: .keepSeen),
        Column(name: "web_order_line_item_id", type: "text", field: "wol", merge: .keepSeen),
        Column(name: "bundle_id", type: "text", field: "bundle", merge: .keepSeen),
        Column(name: "first_learned_at", type: "timestamp with time zone", field: nil, merge: .madeAt),
        Column(name: "updated_at", type: "timestamp with time zone", field: nil, merge: .touchedAt),
        Column(name: "price_milliunits", type: "bigint", field: "price", merge: .keepSeen),
        Column(name: "currency", type: "text", field: "cur", merge: .keepSeen),
        Column(name: "storefront", type: "text", field: "sf", merge: .keepSeen),
        Column(name: "app_account_token", type: "text", field: "aat", merge: .keepSeen),
        Column(name: "type", type: "text", field: "type", merge: .keepSeen),
        Column(name: "in_app_ownership_type", type: "text", field: "own", merge: .keepSeen),
        Column(name: "transaction_reason", type: "text", field: "reason", merge: .keepSeen),
        Column(name: "revocation_date_ms", type: "bigint", field: "rvd", merge: .keepSeen),
        Column(name: "revocation_reason", type: "integer", field: "rvr", merge: .keepSeen),
        Column(name: "revocation_type", type: "text", field: "rvt", merge: .keepSeen),
        Column(name: "revocation_percentage", type: "integer", field: "rvp", merge: .keepSeen),
        Column(name: "signed_date_ms", type: "bigint", field: "sd", merge: .greatest),
        Column(name: "source", type: "text", field: nil, merge: .mostDirectSource),
        Column(name: "reversed_date_ms", type: "bigint", field: nil,
               merge: .sweepsOnly("greatest(t.reversed_date_ms, EXCLUDED.reversed_date_ms)")),
        Column(name: "history_user_id", type: "text", field: nil,
               merge: .sweepsOnly("coalesce(t.history_user_id, EXCLUDED.history_user_id)")),
    ]

    /// The columns an answer fills (`record_staged_answers`' INSERT list): key, fields, source.
    static var answerColumns: [Column] {
        all.filter { $0.merge == .key || $0.field != nil || $0.merge == .mostDirectSource }
    }

    /// `transaction_id, environment, original_transaction_id, …, source`: what an answer inserts.
    static var insertList: SQL {
        answerColumns.map(\.name).joined()
    }

    /// `tid text, otid text, …, sd bigint`: a learned transaction's fields as a record (the
    /// columns of `staged_transactions` after its receipt, environment and kind; `jsonb_to_record`).
    static var recordList: SQL {
        all.compactMap { c in c.field.map { "\($0) \(c.type)" as SQL } }.joined()
    }

    /// The fields in the record's order (`AnswerRecord.Transaction`, the staging COPY).
    static var fields: [SQL] { all.compactMap(\.field) }

    /// `original_transaction_id = EXCLUDED.original_transaction_id, …, updated_at = now()`: how an
    /// answer merges into the row already there (`t`), the columns in `insertList`'s order.
    static func mergeList(schema: JobSchema) -> SQL {
        let set: [SQL] = (answerColumns + all.filter { $0.merge == .touchedAt }).compactMap { c in
            let n = c.name
            switch c.merge {
            case .key, .madeAt, .sweepsOnly: return nil
            case .replace: return "\(n) = EXCLUDED.\(n)"
            case .keepSeen: return "\(n) = coalesce(EXCLUDED.\(n), t.\(n))"
            case .greatest: return "\(n) = greatest(EXCLUDED.\(n), t.\(n))"
            case .mostDirectSource:
                return "\(n) = CASE WHEN \(schema.sql).source_rank(EXCLUDED.\(n)) < \(schema.sql).source_rank(t.\(n)) THEN EXCLUDED.\(n) ELSE t.\(n) END"
            case .touchedAt: return "\(n) = now()"
            }
        }
        return set.joined()
    }

    /// `COPY pg_temp.staged_transactions (r, env, kind, tid, …) FROM STDIN`: the answer's receipt,
    /// environment and kind, then the transaction's fields (`StagedAnswers.encode`).
    static let stagedCopy: SQL = "COPY pg_temp.staged_transactions (r, env, kind, \(fields.joined())) FROM STDIN"
}
