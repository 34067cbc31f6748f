import AppStore
import Foundation
import JobStore
import Postgres
import Reconciliation

/// Stores what the App Store Server API sweeps learned: the signed transactions of notifications
/// and of transaction history (verified before they get here), merged into
/// `{S}.apple_transactions` by `learn_transactions(jsonb)` (migration 6): the rules of
/// `record_answers` (a refund, once seen, stays) plus the sweeps' own: the first history user is
/// kept, a reversal date only grows. One element at a time, so that the same transaction twice in
/// a batch (a repeated notification) merges instead of failing the upsert.
package enum LearnTransactions {
    /// One transaction to learn: the answer writer's fields plus where it came from.
    package struct Item: Encodable {
        var tx: AnswerRecord.Transaction
        var env: String
        var src: String
        /// The user on whose behalf transaction history returned it.
        var hu: String?
        /// A REFUND_REVERSED notification's signedDate.
        var rvsd: Int64?

        /// `signed`, learned from `source`.
        package init(_ signed: SignedTransaction, source: TransactionSource, historyUser: String? = nil, reversedAt: Int64? = nil) {
            tx = AnswerRecord.Transaction(signed)
            env = signed.transaction.environment.rawValue
            src = source.rawValue
            hu = historyUser
            rvsd = reversedAt
        }

        /// The element `learn_transactions(jsonb)` reads.
        package func encode(to encoder: Encoder) throws {
            try tx.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(env, forKey: .env)
            try c.encode(src, forKey: .src)
            try c.encodeIfPresent(hu, forKey: .hu)
            try c.encodeIfPresent(rvsd, forKey: .rvsd)
        }

        enum Keys: String, CodingKey { case env, src, hu, rvsd }
    }

    static func store(_ items: [Item], db: PGConnection, schema: JobSchema) throws {
        guard !items.isEmpty else { return }
        let json = try JSONEncoder().encode(items)
        try db.query("SELECT \(schema.sql).learn_transactions(\(String(decoding: json, as: UTF8.self))::jsonb)")
    }
}
