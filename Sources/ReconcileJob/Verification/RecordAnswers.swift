/// The merge rule of a transaction learned again, as `learn_transactions` (LearnTransactions.sql,
/// which `lookup` runs on its own temporary table) says it. The functions that store answer records
/// (`record_answers`, `record_answers_each`) are frozen in the migrations that made them (migrations
/// 6 and 11): a change to them is a new migration (MigrationTests checks that this text is still
/// the one migration 6 installed).
enum RecordAnswers {
    /// How a transaction learned again merges with what the job already knows (the SET list of
    /// the upsert into `{S}.apple_transactions`), shared by `record_answers` and
    /// `learn_transactions`: Apple's current facts replace the old, a refund or revocation once
    /// seen stays, the most direct source is kept. Ends with a comma.
    static let mergeLearned = """
        original_transaction_id = EXCLUDED.original_transaction_id,
        product_id = EXCLUDED.product_id,
        quantity = EXCLUDED.quantity,
        purchase_date_ms = EXCLUDED.purchase_date_ms,
        original_purchase_date_ms = coalesce(EXCLUDED.original_purchase_date_ms, t.original_purchase_date_ms),
        expires_date_ms = coalesce(EXCLUDED.expires_date_ms, t.expires_date_ms),
        -- a refund, once seen, stays
        cancellation_date_ms = coalesce(EXCLUDED.cancellation_date_ms, t.cancellation_date_ms),
        cancellation_reason = coalesce(EXCLUDED.cancellation_reason, t.cancellation_reason),
        is_trial_period = coalesce(EXCLUDED.is_trial_period, t.is_trial_period),
        web_order_line_item_id = coalesce(EXCLUDED.web_order_line_item_id, t.web_order_line_item_id),
        bundle_id = coalesce(EXCLUDED.bundle_id, t.bundle_id),
        price_milliunits = coalesce(EXCLUDED.price_milliunits, t.price_milliunits),
        currency = coalesce(EXCLUDED.currency, t.currency),
        storefront = coalesce(EXCLUDED.storefront, t.storefront),
        app_account_token = coalesce(EXCLUDED.app_account_token, t.app_account_token),
        type = coalesce(EXCLUDED.type, t.type),
        in_app_ownership_type = coalesce(EXCLUDED.in_app_ownership_type, t.in_app_ownership_type),
        transaction_reason = coalesce(EXCLUDED.transaction_reason, t.transaction_reason),
        -- a revocation, once seen, stays (a reversal is kept beside it: reversed_date_ms)
        revocation_date_ms = coalesce(EXCLUDED.revocation_date_ms, t.revocation_date_ms),
        revocation_reason = coalesce(EXCLUDED.revocation_reason, t.revocation_reason),
        revocation_type = coalesce(EXCLUDED.revocation_type, t.revocation_type),
        revocation_percentage = coalesce(EXCLUDED.revocation_percentage, t.revocation_percentage),
        signed_date_ms = greatest(EXCLUDED.signed_date_ms, t.signed_date_ms),
        -- the most direct way the job learned it (source_rank, migration 6: every
        -- migration runs before a run records an answer)
        source = CASE WHEN {S}.source_rank(EXCLUDED.source) < {S}.source_rank(t.source)
                      THEN EXCLUDED.source ELSE t.source END,
        """
}
