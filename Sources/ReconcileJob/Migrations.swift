import Postgres

/// The job's own schema, created by numbered migrations. `{S}` is the job schema's quoted name.
/// Applied in order, each in its own transaction, recorded in `{S}.schema_migrations`;
/// an advisory transaction lock keeps two processes from migrating at once.
enum Migrations {
    static let all: [(version: Int, name: String, sql: String)] = [
        (1, "verification state, learned transactions, findings, runs", """
        CREATE TABLE {S}.runs (
            run_id          bigserial PRIMARY KEY,
            command         text NOT NULL,
            started_at      timestamptz NOT NULL DEFAULT now(),
            finished_at     timestamptz,
            as_of           timestamptz NOT NULL,
            exit_code       int,
            summary         jsonb
        );

        -- Every answer (or transport failure) for every request sent to the App Store.
        CREATE TABLE {S}.verify_attempts (
            receipt_id      text NOT NULL,
            attempt         int NOT NULL,
            run_id          bigint NOT NULL,
            at              timestamptz NOT NULL,
            environment     text NOT NULL,
            http_status     int,
            status          int,
            answer_class    text NOT NULL,
            problem         text,
            elapsed_ms      int,
            sweep           boolean NOT NULL DEFAULT false,
            PRIMARY KEY (receipt_id, attempt)
        );

        -- Per receipt: where verification stands.
        CREATE TABLE {S}.receipt_state (
            receipt_id      text PRIMARY KEY,
            attempts        int NOT NULL DEFAULT 0,
            failed_runs     int NOT NULL DEFAULT 0,
            runs_21002      int NOT NULL DEFAULT 0,
            last_run_id     bigint,
            last_class      text,
            last_status     int,
            last_error      text,
            last_attempt_at timestamptz,
            next_eligible_at timestamptz,
            definitive      boolean NOT NULL DEFAULT false,
            verdict         text CHECK (verdict IN ('valid', 'invalid_receipt', 'wrong_bundle')),
            environment     text,
            bundle_id       text,
            last_swept_at   timestamptz
        );

        -- Every Apple transaction learned from a valid answer, one row per id and environment.
        CREATE TABLE {S}.apple_transactions (
            transaction_id          text NOT NULL,
            environment             text NOT NULL,
            original_transaction_id text NOT NULL,
            product_id              text NOT NULL,
            quantity                int NOT NULL,
            purchase_date_ms        bigint NOT NULL,
            original_purchase_date_ms bigint,
            expires_date_ms         bigint,
            cancellation_date_ms    bigint,
            cancellation_reason     text,
            is_trial_period         boolean,
            web_order_line_item_id  text,
            bundle_id               text,
            first_learned_at        timestamptz NOT NULL DEFAULT now(),
            updated_at              timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (transaction_id, environment)
        );
        CREATE INDEX ON {S}.apple_transactions (original_transaction_id);

        -- Which receipt showed which transaction.
        CREATE TABLE {S}.receipt_transactions (
            receipt_id      text NOT NULL,
            transaction_id  text NOT NULL,
            environment     text NOT NULL,
            PRIMARY KEY (receipt_id, transaction_id, environment)
        );
        CREATE INDEX ON {S}.receipt_transactions (transaction_id);

        -- The input errors of the latest run (replaced whole by each run).
        CREATE TABLE {S}.input_errors (
            relation        text NOT NULL,
            key             text NOT NULL,
            column_name     text NOT NULL,
            problem         text NOT NULL,
            run_id          bigint NOT NULL
        );

        -- Findings history: when each finding first appeared, and whether it is open now.
        CREATE TABLE {S}.findings (
            finding_key     text PRIMARY KEY,
            report          text NOT NULL,
            first_seen      date NOT NULL,
            last_seen       date NOT NULL,
            closed_on       date
        );

        \(RecordAnswers.sql)
        """),
        (2, "is_base64: one pass over receipt_data", """
        -- True when the text decodes as standard base64 once the whitespace clients add is gone.
        -- plpgsql: the whitespace is stripped once per row, and the call is cheap (a SQL function
        -- with a FROM clause would go through the slow SQL-function executor on every row).
        CREATE FUNCTION {S}.is_base64(data text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
        DECLARE
            b text := translate(data, E' \\n\\r\\t', '');
        BEGIN
            RETURN length(b) > 0 AND length(b) % 4 = 0 AND b ~ '^[A-Za-z0-9+/]*={0,2}$';
        END
        $fn$;
        """),
        (3, "receipts the environments disagree on stay in the environment that last answered", """
        ALTER TABLE {S}.receipt_state ADD COLUMN start_environment text
            CHECK (start_environment IN ('production', 'sandbox'));
        \(RecordAnswers.sql)
        """),
        (4, "is_base64 as an inlined SQL expression", """
        -- The planner inlines a SQL function of one expression: no function call per row. Text
        -- without whitespace (nearly all) takes one regular expression; only the rest is
        -- stripped first. Same answers as the plpgsql version (checked on every generated row
        -- and the edge cases: empty, padding only, whitespace inside). 6x faster on 250k receipts.
        CREATE OR REPLACE FUNCTION {S}.is_base64(data text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT CASE WHEN data ~ '^[A-Za-z0-9+/]+={0,2}$' THEN length(data) % 4 = 0
                        ELSE coalesce(length(translate(data, E' \\n\\r\\t', '')) % 4 = 0
                                      AND translate(data, E' \\n\\r\\t', '') ~ '^[A-Za-z0-9+/]+={0,2}$', false) END
        $fn$;
        """),
        (5, "signed transactions (StoreKit 2): every field Apple signs, the kind of upload, the specific rejection", """
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
        \(RecordAnswers.sql)
        """),
        (6, "the App Store Server API sweeps: notifications, their positions, customers' history, reversals", """
        -- reversed_date_ms: a REFUND_REVERSED notification's signedDate (the refund stands only when
        -- its revocation is later). history_user_id: the user on whose behalf transaction history
        -- returned the transaction (docs/rules.md "Whose purchase").
        ALTER TABLE {S}.apple_transactions
            ADD COLUMN reversed_date_ms bigint,
            ADD COLUMN history_user_id  text;
        -- One row per notificationUUID: Apple repeats notifications and sweeps overlap.
        CREATE TABLE {S}.notifications (
            notification_uuid   text PRIMARY KEY,
            notification_type   text NOT NULL,
            subtype             text,
            environment         text NOT NULL,
            transaction_id      text,
            signed_date_ms      bigint NOT NULL,
            run_id              bigint NOT NULL,
            learned_at          timestamptz NOT NULL DEFAULT now()
        );
        -- Where each sweep stands: the end of its last finished window (UNIX ms).
        CREATE TABLE {S}.notification_sweeps (
            notification_type   text NOT NULL,
            environment         text NOT NULL,
            reached_ms          bigint NOT NULL,
            run_id              bigint NOT NULL,
            updated_at          timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (notification_type, environment)
        );
        -- Customers whose transaction history was asked: the id asked with and the revision of the
        -- last page, so the next night asks only for what changed.
        CREATE TABLE {S}.history_customers (
            user_id             text PRIMARY KEY,
            transaction_id      text NOT NULL,
            environment         text NOT NULL,
            revision            text,
            run_id              bigint NOT NULL,
            asked_at            timestamptz NOT NULL DEFAULT now()
        );
        -- How directly a transaction was learned: a transaction learned several ways keeps the
        -- most direct source (contract §6 compensate.csv `source`).
        CREATE FUNCTION {S}.source_rank(source text) RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT CASE source WHEN 'receipt' THEN 1 WHEN 'signed_transaction' THEN 2
                               WHEN 'transaction_history' THEN 3 ELSE 4 END
        $fn$;
        -- Milliunits as the reports print money: 2 decimals when whole hundredths, else 3.
        CREATE FUNCTION {S}.money_text(m bigint) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT CASE WHEN m % 10 = 0 THEN round(m / 1000.0, 2)::text ELSE round(m / 1000.0, 3)::text END
        $fn$;
        \(RecordAnswers.sql)
        \(LearnTransactions.sql)
        """),
        (7, "why a finding closed (closed.csv)", """
        -- Set when a night closes the finding, from what the data then shows: granted, revoked,
        -- refund_reversed, out_of_window, input_changed (contract §6 closed.csv).
        ALTER TABLE {S}.findings ADD COLUMN closed_because text;
        """),
        (8, "is_base64 counts bytes, not characters", """
        -- Where the pattern matched, the text is ASCII, so octet_length equals length; length()
        -- walks the UTF-8 of every receipt (0.9 s of the receipts' copy at 1M rows). Where it did
        -- not match the answer is false either way. Same answers as version 4.
        CREATE OR REPLACE FUNCTION {S}.is_base64(data text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT CASE WHEN data ~ '^[A-Za-z0-9+/]+={0,2}$' THEN octet_length(data) % 4 = 0
                        ELSE coalesce(octet_length(translate(data, E' \\n\\r\\t', '')) % 4 = 0
                                      AND translate(data, E' \\n\\r\\t', '') ~ '^[A-Za-z0-9+/]+={0,2}$', false) END
        $fn$;
        """),
        (9, "room on each page of findings for the nightly update of last_seen", """
        -- Every night updates every open finding (last_seen); with half of each page free the new
        -- version stays on its page and the key's index is not touched (a HOT update): the
        -- history's upsert 2.0-2.7 -> 0.7-1.3 s at 177k open findings. Pages written from now
        -- on keep the room; older ones gain it as vacuum frees their old versions.
        ALTER TABLE {S}.findings SET (fillfactor = 50);
        """),
        (10, "the decide stage's findings and compensation spool, made here", """
        -- The night's findings before the history takes them, and the compensation candidates
        -- waiting for the inferred order match: one row each, the report's cells in c1... in the
        -- order of its columns without first_seen (ReportFile.layout; the widest findings report,
        -- compensate.csv, has 15). Unlogged: each night empties them. Until this version the
        -- decide stage made them at run time; IF NOT EXISTS keeps those, and the columns added
        -- here are the ones they may lack. A report with more cells needs a migration that adds
        -- them (RuleBookTests compares this table with the descriptions).
        CREATE UNLOGGED TABLE IF NOT EXISTS {S}.current_findings (
            report text NOT NULL, finding_key text NOT NULL,
            c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text,
            c11 text, c12 text, c13 text);
        ALTER TABLE {S}.current_findings ADD COLUMN IF NOT EXISTS c14 text, ADD COLUMN IF NOT EXISTS c15 text;
        CREATE UNLOGGED TABLE IF NOT EXISTS {S}.compensation_spool (
            kind text NOT NULL, user_id text, product_id text, purchase_ms bigint, transaction_id text,
            environment text, exact_order_id text,
            c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text,
            c11 text, c12 text, c13 text, c14 text, c15 text);
        ALTER TABLE {S}.compensation_spool SET (autovacuum_enabled = false);
        """),
        (11, "answers recorded as sets (record_answers; the per-answer function kept as record_answers_each)", """
        \(RecordAnswers.setSQL)
        """),
        (12, "answers staged with COPY and merged as sets (record_staged_answers)", """
        -- Issue 33: the answer writer copies each group of answers into two temporary tables
        -- (answer_staging() makes them in its session), merges them with one statement per
        -- table, the merges of record_answers (migrations 1-11) over columns instead of JSON. The
        -- writer never puts two answers for one receipt, or two for one transaction, in a group
        -- (StagedAnswers.groups), so applying a group as sets is applying it in order.
        CREATE FUNCTION {S}.answer_staging() RETURNS void LANGUAGE plpgsql AS $fn$
        BEGIN
            CREATE TEMP TABLE IF NOT EXISTS staged_answers (
                r text NOT NULL, n int NOT NULL, run bigint NOT NULL, at bigint NOT NULL, env text NOT NULL,
                http int, st int, cls text NOT NULL, err text, ms int, sweep boolean NOT NULL,
                state boolean NOT NULL, failed_runs int NOT NULL, runs_21002 int NOT NULL, next bigint,
                final boolean NOT NULL, verdict text, bundle text, start text, kind text, rej text
            );
            CREATE TEMP TABLE IF NOT EXISTS staged_transactions (
                r text NOT NULL, env text NOT NULL, kind text,
                tid text NOT NULL, otid text NOT NULL, pid text NOT NULL, q int NOT NULL, pd bigint NOT NULL,
                opd bigint, exp bigint, cd bigint, cr text, trial boolean, wol text, bundle text,
                price bigint, cur text, sf text, aat text, type text, own text, reason text,
                rvd bigint, rvr int, rvt text, rvp int, sd bigint
            );
        END
        $fn$;

        CREATE FUNCTION {S}.record_staged_answers() RETURNS void LANGUAGE plpgsql AS $fn$
        BEGIN
            INSERT INTO {S}.verify_attempts
                (receipt_id, attempt, run_id, at, environment, http_status, status, answer_class, problem, elapsed_ms, sweep)
            SELECT a.r, a.n, a.run, to_timestamp(a.at / 1000.0), a.env, a.http, a.st, a.cls, a.err, a.ms, a.sweep
            FROM pg_temp.staged_answers a
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
            ON CONFLICT DO NOTHING;

            -- Emptied with DELETE: ON COMMIT DELETE ROWS truncated the tables, their TOAST
            -- tables and indexes at every commit, new files each time (a third of the writer's CPU).
            -- The writer vacuums them now and then, so their space is used again.
            DELETE FROM pg_temp.staged_answers;
            DELETE FROM pg_temp.staged_transactions;
        END
        $fn$;
        """),
    ]

    /// Creates the schema if needed and applies what is missing. Returns the versions applied.
    @discardableResult
    static func apply(_ db: PGConnection, schema: JobSchema) throws -> [Int] {
        // CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema is there:
        // ask first, so a nightly role without it works once the schema exists.
        let exists = try db.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema.name]).rowCount > 0
        if !exists { try db.execute("CREATE SCHEMA \(schema.quoted)") }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS \(schema.quoted).schema_migrations (
                version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
            """)
        var applied: [Int] = []
        for migration in all {
            try db.transaction {
                _ = try db.query("SELECT pg_advisory_xact_lock(hashtext($1))", ["iap-reconcile migrate " + schema.name])
                let present = try db.query("SELECT 1 FROM \(schema.quoted).schema_migrations WHERE version = $1",
                                           [String(migration.version)])
                guard present.rowCount == 0 else { return }
                try db.execute(migration.sql.replacingSchema(schema.quoted))
                try db.query("INSERT INTO \(schema.quoted).schema_migrations (version, name) VALUES ($1, $2)",
                             [String(migration.version), migration.name])
                applied.append(migration.version)
            }
        }
        return applied
    }
}

/// A schema name the job may splice into SQL: checked to be a plain identifier, then quoted.
public struct JobSchema: Sendable {
    public let name: String
    public var quoted: String { "\"\(name)\"" }

    public init(_ name: String) throws {
        let ok = !name.isEmpty && name.count <= 63 && name.utf8.allSatisfy { c in
            (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c == 95
        } && !(name.utf8.first! >= 48 && name.utf8.first! <= 57)
        guard ok else {
            throw JobError(.usage, "schema name '\(name)' is not a plain identifier (lower-case letters, digits, _)")
        }
        self.name = name
    }
}

extension String {
    func replacingSchema(_ quoted: String) -> String {
        var out = ""
        var rest = Substring(self)
        while let r = rest.firstRange(of: "{S}") {
            out += rest[..<r.lowerBound]
            out += quoted
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
