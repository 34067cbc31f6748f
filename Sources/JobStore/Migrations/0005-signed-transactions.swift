// Migration 5, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v5 = Migration(5, "signed transactions (StoreKit 2): every field Apple signs, the kind of upload, the specific rejection", sql: #"""
        -- What a signed transaction carries beyond verifyReceipt's fields (contract §2). Money is
        -- Apple's: price in milliunits of currency, for the whole transaction (quantity included).
        ALTER TABLE {S}.apple_transactions
            ADD COLUMN price_milliunits      bigint,
            ADD COLUMN currency              text,
            ADD COLUMN storefront            text,
            ADD COLUMN app_account_token     text,
            ADD COLUMN type                  text,
            ADD COLUMN in_app_ownership_type text,
            ADD COLUMN transaction_reason    text,
            ADD COLUMN revocation_date_ms    bigint,
            ADD COLUMN revocation_reason     int,
            ADD COLUMN revocation_type       text,
            ADD COLUMN revocation_percentage int,
            ADD COLUMN signed_date_ms        bigint,
            -- how the job learned it: receipt (verifyReceipt), signed_transaction (an upload)
            ADD COLUMN source                text NOT NULL DEFAULT 'receipt';
        -- receipt: an app receipt asked of verifyReceipt; signed_transaction: a StoreKit 2 upload
        -- verified offline. rejection: the specific reason of a definitive rejection
        -- (unknown_root, broken_chain, bad_signature, expired, wrong_bundle, malformed; 21003…).
        ALTER TABLE {S}.receipt_state
            ADD COLUMN kind      text NOT NULL DEFAULT 'receipt' CHECK (kind IN ('receipt', 'signed_transaction')),
            ADD COLUMN rejection text;
        -- JWS compact form: three base64url segments. Disjoint from is_base64 (base64 has no dot).
        CREATE FUNCTION {S}.is_jws(data text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT coalesce(data ~ '^[A-Za-z0-9_-]+[.][A-Za-z0-9_-]+[.][A-Za-z0-9_-]+$', false)
        $fn$;
        CREATE OR REPLACE FUNCTION {S}.record_answers(p jsonb) RETURNS void LANGUAGE plpgsql AS $fn$
        DECLARE
            a jsonb;
        BEGIN
            FOR a IN SELECT * FROM jsonb_array_elements(p) LOOP
                INSERT INTO {S}.verify_attempts
                    (receipt_id, attempt, run_id, at, environment, http_status, status, answer_class, problem, elapsed_ms, sweep)
                VALUES (a->>'r', (a->>'n')::int, (a->>'run')::bigint, to_timestamp((a->>'at')::bigint / 1000.0),
                        a->>'env', (a->>'http')::int, (a->>'st')::int, a->>'cls', a->>'err', (a->>'ms')::int,
                        coalesce((a->>'sweep')::boolean, false))
                ON CONFLICT (receipt_id, attempt) DO NOTHING;

                IF (a->>'state')::boolean THEN
                    INSERT INTO {S}.receipt_state AS s
                        (receipt_id, attempts, failed_runs, runs_21002, last_run_id, last_class, last_status, last_error,
                         last_attempt_at, next_eligible_at, definitive, verdict, environment, bundle_id, last_swept_at,
                         start_environment, kind, rejection)
                    VALUES (a->>'r', (a->>'n')::int, coalesce((a->>'failed_runs')::int, 0),
                            coalesce((a->>'runs_21002')::int, 0), (a->>'run')::bigint, a->>'cls',
                            (a->>'st')::int, a->>'err', to_timestamp((a->>'at')::bigint / 1000.0),
                            to_timestamp((a->>'next')::bigint / 1000.0), coalesce((a->>'final')::boolean, false),
                            a->>'verdict', a->>'env', a->>'bundle',
                            CASE WHEN (a->>'sweep')::boolean THEN to_timestamp((a->>'at')::bigint / 1000.0) END,
                            a->>'start', coalesce(a->>'kind', 'receipt'), a->>'rej')
                    ON CONFLICT (receipt_id) DO UPDATE SET
                        attempts = greatest(s.attempts, EXCLUDED.attempts),
                        failed_runs = greatest(s.failed_runs, EXCLUDED.failed_runs),
                        runs_21002 = greatest(s.runs_21002, EXCLUDED.runs_21002),
                        last_run_id = EXCLUDED.last_run_id,
                        last_class = EXCLUDED.last_class,
                        last_status = EXCLUDED.last_status,
                        last_error = EXCLUDED.last_error,
                        last_attempt_at = EXCLUDED.last_attempt_at,
                        next_eligible_at = EXCLUDED.next_eligible_at,
                        -- once definitive, always definitive; a sweep never downgrades a verdict
                        definitive = s.definitive OR EXCLUDED.definitive,
                        verdict = CASE WHEN s.definitive THEN s.verdict ELSE EXCLUDED.verdict END,
                        environment = coalesce(EXCLUDED.environment, s.environment),
                        bundle_id = coalesce(EXCLUDED.bundle_id, s.bundle_id),
                        last_swept_at = coalesce(EXCLUDED.last_swept_at, s.last_swept_at),
                        -- once the environments disagreed, later runs start where the last answer came from
                        start_environment = coalesce(EXCLUDED.start_environment, s.start_environment),
                        kind = EXCLUDED.kind,
                        rejection = CASE WHEN s.definitive THEN s.rejection ELSE EXCLUDED.rejection END;
                END IF;

                IF jsonb_array_length(coalesce(a->'txs', '[]'::jsonb)) > 0 THEN
                    INSERT INTO {S}.apple_transactions AS t
                        (transaction_id, environment, original_transaction_id, product_id, quantity, purchase_date_ms,
                         original_purchase_date_ms, expires_date_ms, cancellation_date_ms, cancellation_reason,
                         is_trial_period, web_order_line_item_id, bundle_id, price_milliunits, currency, storefront,
                         app_account_token, type, in_app_ownership_type, transaction_reason, revocation_date_ms,
                         revocation_reason, revocation_type, revocation_percentage, signed_date_ms, source)
                    SELECT x.tid, a->>'env', x.otid, x.pid, x.q, x.pd, x.opd, x.exp, x.cd, x.cr, x.trial, x.wol, x.bundle,
                           x.price, x.cur, x.sf, x.aat, x.type, x.own, x.reason, x.rvd, x.rvr, x.rvt, x.rvp, x.sd,
                           coalesce(a->>'kind', 'receipt')
                    FROM jsonb_to_recordset(a->'txs') AS x(tid text, otid text, pid text, q int, pd bigint, opd bigint,
                         exp bigint, cd bigint, cr text, trial boolean, wol text, bundle text, price bigint, cur text,
                         sf text, aat text, type text, own text, reason text, rvd bigint, rvr int, rvt text, rvp int,
                         sd bigint)
                    ON CONFLICT (transaction_id, environment) DO UPDATE SET
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
                        updated_at = now();
                    INSERT INTO {S}.receipt_transactions (receipt_id, transaction_id, environment)
                    SELECT a->>'r', x.tid, a->>'env' FROM jsonb_to_recordset(a->'txs') AS x(tid text)
                    ON CONFLICT DO NOTHING;
                END IF;
            END LOOP;
        END
        $fn$;
        """#)
}
