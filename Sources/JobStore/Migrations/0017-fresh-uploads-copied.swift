// Migration 17 (issue 33). Never edit this text: its sha256 is what schema_migrations.checksum
// records, and a database that got another text stops the job (exit 78). A change to what it
// made is a new migration.
extension Migrations {
    static let v17 = Migration(17, "fresh StoreKit 2 uploads copied straight into receipt_state and receipt_transactions", sql: #"""
        -- Issue 33: a StoreKit 2 upload verified offline whose receipt had no state row when the
        -- reader read it (a "fresh" one, nearly every upload) is stored by COPY straight into
        -- receipt_state and receipt_transactions, in the group's transaction: no staging row and no
        -- conflict check for those two tables (a unique violation makes the writer roll the group
        -- back and store it the staged way). Its transaction is still staged and merged into
        -- apple_transactions here (a notification or another receipt may have stored it), marked
        -- linked, so that its link to the receipt is not inserted a second time. Otherwise the
        -- functions are migration 12's.
        CREATE OR REPLACE FUNCTION {S}.answer_staging() RETURNS void LANGUAGE plpgsql AS $fn$
        BEGIN
            CREATE TEMP TABLE IF NOT EXISTS staged_answers (
                r text NOT NULL, asked boolean NOT NULL, n int NOT NULL, run bigint NOT NULL, at bigint NOT NULL, env text NOT NULL,
                http int, st int, cls text NOT NULL, err text, ms int, sweep boolean NOT NULL,
                state boolean NOT NULL, failed_runs int NOT NULL, runs_21002 int NOT NULL, next bigint,
                final boolean NOT NULL, verdict text, bundle text, start text, kind text, rej text
            );
            CREATE TEMP TABLE IF NOT EXISTS staged_transactions (
                r text NOT NULL, env text NOT NULL, kind text,
                tid text NOT NULL, otid text NOT NULL, pid text NOT NULL, q int NOT NULL, pd bigint NOT NULL,
                opd bigint, exp bigint, cd bigint, cr text, trial boolean, wol text, bundle text,
                price bigint, cur text, sf text, aat text, type text, own text, reason text,
                rvd bigint, rvr int, rvt text, rvp int, sd bigint,
                -- its receipt's link is already stored (a fresh upload's, copied straight in)
                linked boolean NOT NULL DEFAULT false
            );
        END
        $fn$;

        CREATE OR REPLACE FUNCTION {S}.record_staged_answers() RETURNS void LANGUAGE plpgsql AS $fn$
        BEGIN
            INSERT INTO {S}.verify_attempts
                (receipt_id, attempt, run_id, at, environment, http_status, status, answer_class, problem, elapsed_ms, sweep)
            SELECT a.r, a.n, a.run, to_timestamp(a.at / 1000.0), a.env, a.http, a.st, a.cls, a.err, a.ms, a.sweep
            FROM pg_temp.staged_answers a
            -- requests only: a StoreKit 2 upload verified offline sent none (its verdict is in receipt_state)
            WHERE a.asked
            ON CONFLICT (receipt_id, attempt) DO NOTHING;

            INSERT INTO {S}.receipt_state AS s
                (receipt_id, attempts, failed_runs, runs_21002, last_run_id, last_class, last_status, last_error,
                 last_attempt_at, next_eligible_at, definitive, verdict, environment, bundle_id, last_swept_at,
                 start_environment, kind, rejection)
            SELECT a.r, a.n, a.failed_runs, a.runs_21002, a.run, a.cls, a.st, a.err, to_timestamp(a.at / 1000.0),
                   to_timestamp(a.next / 1000.0), a.final, a.verdict, a.env, a.bundle,
                   CASE WHEN a.sweep THEN to_timestamp(a.at / 1000.0) END, a.start, coalesce(a.kind, 'receipt'), a.rej
            FROM pg_temp.staged_answers a
            WHERE a.state
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

            INSERT INTO {S}.apple_transactions AS t
                (transaction_id, environment, original_transaction_id, product_id, quantity, purchase_date_ms,
                 original_purchase_date_ms, expires_date_ms, cancellation_date_ms, cancellation_reason,
                 is_trial_period, web_order_line_item_id, bundle_id, price_milliunits, currency, storefront,
                 app_account_token, type, in_app_ownership_type, transaction_reason, revocation_date_ms,
                 revocation_reason, revocation_type, revocation_percentage, signed_date_ms, source)
            SELECT x.tid, x.env, x.otid, x.pid, x.q, x.pd, x.opd, x.exp, x.cd, x.cr, x.trial, x.wol, x.bundle,
                   x.price, x.cur, x.sf, x.aat, x.type, x.own, x.reason, x.rvd, x.rvr, x.rvt, x.rvp, x.sd,
                   coalesce(x.kind, 'receipt')
            FROM pg_temp.staged_transactions x
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
            source = CASE WHEN {S}.source_rank(EXCLUDED.source) < {S}.source_rank(t.source)
                          THEN EXCLUDED.source ELSE t.source END,
            updated_at = now();

            INSERT INTO {S}.receipt_transactions (receipt_id, transaction_id, environment)
            SELECT x.r, x.tid, x.env FROM pg_temp.staged_transactions x
            WHERE NOT x.linked
            ON CONFLICT DO NOTHING;

            -- Emptied with DELETE: ON COMMIT DELETE ROWS truncated the tables, their TOAST
            -- tables and indexes at every commit, new files each time (a third of the writer's CPU).
            -- The writer vacuums them now and then, so their space is used again.
            DELETE FROM pg_temp.staged_answers;
            DELETE FROM pg_temp.staged_transactions;
        END
        $fn$;
        """#)
}
