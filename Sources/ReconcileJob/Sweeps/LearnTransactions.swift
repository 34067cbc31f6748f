import AppStore
import Foundation
import Postgres
import Reconciliation

/// Stores what the App Store Server API sweeps learned: the signed transactions of notifications
/// and of transaction history (verified before they get here), merged into
/// `{S}.apple_transactions` with the rules of `record_answers` (a refund, once seen, stays) plus
/// the sweeps' own: the first history user is kept, a reversal date only grows.
enum LearnTransactions {
    /// One transaction to learn: the answer writer's fields plus where it came from.
    struct Item: Encodable {
        var tx: AnswerRecord.Transaction
        var env: String
        var src: String
        /// The user on whose behalf transaction history returned it.
        var hu: String?
        /// A REFUND_REVERSED notification's signedDate.
        var rvsd: Int64?

        init(_ signed: SignedTransaction, source: TransactionSource, historyUser: String? = nil, reversedAt: Int64? = nil) {
            tx = AnswerRecord.Transaction(signed)
            env = signed.transaction.environment.rawValue
            src = source.rawValue
            hu = historyUser
            rvsd = reversedAt
        }

        func encode(to encoder: Encoder) throws {
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
        try db.query("SELECT \(schema.quoted).learn_transactions($1::jsonb)", [String(decoding: json, as: UTF8.self)])
    }

    /// `learn_transactions(jsonb)`: one element at a time, so that the same transaction twice in
    /// a batch (a repeated notification) merges instead of failing the upsert.
    static let sql = """
        CREATE OR REPLACE FUNCTION {S}.learn_transactions(p jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
        DECLARE
            a jsonb;
        BEGIN
            FOR a IN SELECT * FROM jsonb_array_elements(p) LOOP
                INSERT INTO {S}.apple_transactions AS t
                    (transaction_id, environment, original_transaction_id, product_id, quantity, purchase_date_ms,
                     original_purchase_date_ms, expires_date_ms, cancellation_date_ms, cancellation_reason,
                     is_trial_period, web_order_line_item_id, bundle_id, price_milliunits, currency, storefront,
                     app_account_token, type, in_app_ownership_type, transaction_reason, revocation_date_ms,
                     revocation_reason, revocation_type, revocation_percentage, signed_date_ms, source,
                     history_user_id, reversed_date_ms)
                SELECT x.tid, a->>'env', x.otid, x.pid, x.q, x.pd, x.opd, x.exp, x.cd, x.cr, x.trial, x.wol, x.bundle,
                       x.price, x.cur, x.sf, lower(x.aat), x.type, x.own, x.reason, x.rvd, x.rvr, x.rvt, x.rvp, x.sd,
                       a->>'src', a->>'hu', (a->>'rvsd')::bigint
                FROM jsonb_to_record(a) AS x(tid text, otid text, pid text, q int, pd bigint, opd bigint,
                     exp bigint, cd bigint, cr text, trial boolean, wol text, bundle text, price bigint, cur text,
                     sf text, aat text, type text, own text, reason text, rvd bigint, rvr int, rvt text, rvp int,
                     sd bigint)
                ON CONFLICT (transaction_id, environment) DO UPDATE SET
                    \(RecordAnswers.mergeLearned)
                    history_user_id = coalesce(t.history_user_id, EXCLUDED.history_user_id),
                    reversed_date_ms = greatest(t.reversed_date_ms, EXCLUDED.reversed_date_ms),
                    updated_at = now();
            END LOOP;
        END
        $fn$;
        """
}
