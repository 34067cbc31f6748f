--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: recon; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA recon;


--
-- Name: is_base64(text); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.is_base64(data text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT CASE WHEN data ~ '^[A-Za-z0-9+/]+={0,2}$' THEN octet_length(data) % 4 = 0
                ELSE coalesce(octet_length(translate(data, E' \n\r\t', '')) % 4 = 0
                              AND translate(data, E' \n\r\t', '') ~ '^[A-Za-z0-9+/]+={0,2}$', false) END
$_$;


--
-- Name: is_jws(text); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.is_jws(data text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT coalesce(data ~ '^[A-Za-z0-9_-]+[.][A-Za-z0-9_-]+[.][A-Za-z0-9_-]+$', false)
$_$;


--
-- Name: learn_transactions(jsonb); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.learn_transactions(p jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    a jsonb;
BEGIN
    FOR a IN SELECT * FROM jsonb_array_elements(p) LOOP
        INSERT INTO "recon".apple_transactions AS t
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
source = CASE WHEN "recon".source_rank(EXCLUDED.source) < "recon".source_rank(t.source)
              THEN EXCLUDED.source ELSE t.source END,
            history_user_id = coalesce(t.history_user_id, EXCLUDED.history_user_id),
            reversed_date_ms = greatest(t.reversed_date_ms, EXCLUDED.reversed_date_ms),
            updated_at = now();
    END LOOP;
END
$$;


--
-- Name: money_text(bigint); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.money_text(m bigint) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN m % 10 = 0 THEN round(m / 1000.0, 2)::text ELSE round(m / 1000.0, 3)::text END
$$;


--
-- Name: record_answers(jsonb); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.record_answers(p jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    repeated bigint[];
BEGIN
    WITH e AS (SELECT a, ord FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord)),
    tx AS (SELECT e.ord, x.tid, e.a->>'env' AS env FROM e, jsonb_to_recordset(coalesce(e.a->'txs', '[]'::jsonb)) AS x(tid text))
    SELECT coalesce(array_agg(DISTINCT ord), '{}') INTO repeated FROM (
        SELECT ord FROM e WHERE a->>'r' IN (SELECT a->>'r' FROM e GROUP BY 1 HAVING count(*) > 1)
        UNION ALL
        SELECT ord FROM tx WHERE (tid, env) IN (SELECT tid, env FROM tx GROUP BY 1, 2 HAVING count(*) > 1)
    ) r;

    INSERT INTO "recon".verify_attempts
        (receipt_id, attempt, run_id, at, environment, http_status, status, answer_class, problem, elapsed_ms, sweep)
    SELECT a->>'r', (a->>'n')::int, (a->>'run')::bigint, to_timestamp((a->>'at')::bigint / 1000.0),
                a->>'env', (a->>'http')::int, (a->>'st')::int, a->>'cls', a->>'err', (a->>'ms')::int,
                coalesce((a->>'sweep')::boolean, false)
    FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord) WHERE ord <> ALL (repeated)
    ON CONFLICT (receipt_id, attempt) DO NOTHING;

    INSERT INTO "recon".receipt_state AS s
        (receipt_id, attempts, failed_runs, runs_21002, last_run_id, last_class, last_status, last_error,
                 last_attempt_at, next_eligible_at, definitive, verdict, environment, bundle_id, last_swept_at,
                 start_environment, kind, rejection)
    SELECT a->>'r', (a->>'n')::int, coalesce((a->>'failed_runs')::int, 0),
                    coalesce((a->>'runs_21002')::int, 0), (a->>'run')::bigint, a->>'cls',
                    (a->>'st')::int, a->>'err', to_timestamp((a->>'at')::bigint / 1000.0),
                    to_timestamp((a->>'next')::bigint / 1000.0), coalesce((a->>'final')::boolean, false),
                    a->>'verdict', a->>'env', a->>'bundle',
                    CASE WHEN (a->>'sweep')::boolean THEN to_timestamp((a->>'at')::bigint / 1000.0) END,
                    a->>'start', coalesce(a->>'kind', 'receipt'), a->>'rej'
    FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord)
    WHERE ord <> ALL (repeated) AND (a->>'state')::boolean
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

    INSERT INTO "recon".apple_transactions AS t
        (transaction_id, environment, original_transaction_id, product_id, quantity, purchase_date_ms,
                 original_purchase_date_ms, expires_date_ms, cancellation_date_ms, cancellation_reason,
                 is_trial_period, web_order_line_item_id, bundle_id, price_milliunits, currency, storefront,
                 app_account_token, type, in_app_ownership_type, transaction_reason, revocation_date_ms,
                 revocation_reason, revocation_type, revocation_percentage, signed_date_ms, source)
    SELECT x.tid, a->>'env', x.otid, x.pid, x.q, x.pd, x.opd, x.exp, x.cd, x.cr, x.trial, x.wol, x.bundle,
                   x.price, x.cur, x.sf, x.aat, x.type, x.own, x.reason, x.rvd, x.rvr, x.rvt, x.rvp, x.sd,
                   coalesce(a->>'kind', 'receipt')
    FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord), jsonb_to_recordset(a->'txs') AS x(tid text, otid text, pid text, q int, pd bigint, opd bigint,
                 exp bigint, cd bigint, cr text, trial boolean, wol text, bundle text, price bigint, cur text,
                 sf text, aat text, type text, own text, reason text, rvd bigint, rvr int, rvt text, rvp int,
                 sd bigint)
    WHERE ord <> ALL (repeated)
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
source = CASE WHEN "recon".source_rank(EXCLUDED.source) < "recon".source_rank(t.source)
              THEN EXCLUDED.source ELSE t.source END,
        updated_at = now();
    INSERT INTO "recon".receipt_transactions (receipt_id, transaction_id, environment)
    SELECT a->>'r', x.tid, a->>'env'
    FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord), jsonb_to_recordset(a->'txs') AS x(tid text)
    WHERE ord <> ALL (repeated)
    ON CONFLICT DO NOTHING;

    IF cardinality(repeated) > 0 THEN
        PERFORM "recon".record_answers_each((SELECT jsonb_agg(a ORDER BY ord)
                                         FROM jsonb_array_elements(p) WITH ORDINALITY AS e(a, ord)
                                         WHERE ord = ANY (repeated)));
    END IF;
END
$$;


--
-- Name: record_answers_each(jsonb); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.record_answers_each(p jsonb) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    a jsonb;
BEGIN
    FOR a IN SELECT * FROM jsonb_array_elements(p) LOOP
        INSERT INTO "recon".verify_attempts
            (receipt_id, attempt, run_id, at, environment, http_status, status, answer_class, problem, elapsed_ms, sweep)
        VALUES (a->>'r', (a->>'n')::int, (a->>'run')::bigint, to_timestamp((a->>'at')::bigint / 1000.0),
                a->>'env', (a->>'http')::int, (a->>'st')::int, a->>'cls', a->>'err', (a->>'ms')::int,
                coalesce((a->>'sweep')::boolean, false))
        ON CONFLICT (receipt_id, attempt) DO NOTHING;

        IF (a->>'state')::boolean THEN
            INSERT INTO "recon".receipt_state AS s
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
            INSERT INTO "recon".apple_transactions AS t
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
source = CASE WHEN "recon".source_rank(EXCLUDED.source) < "recon".source_rank(t.source)
              THEN EXCLUDED.source ELSE t.source END,
                updated_at = now();
            INSERT INTO "recon".receipt_transactions (receipt_id, transaction_id, environment)
            SELECT a->>'r', x.tid, a->>'env' FROM jsonb_to_recordset(a->'txs') AS x(tid text)
            ON CONFLICT DO NOTHING;
        END IF;
    END LOOP;
END
$$;


--
-- Name: source_rank(text); Type: FUNCTION; Schema: recon; Owner: -
--

CREATE FUNCTION recon.source_rank(source text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE source WHEN 'receipt' THEN 1 WHEN 'signed_transaction' THEN 2
                       WHEN 'transaction_history' THEN 3 ELSE 4 END
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: apple_transactions; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.apple_transactions (
    transaction_id text NOT NULL,
    environment text NOT NULL,
    original_transaction_id text NOT NULL,
    product_id text NOT NULL,
    quantity integer NOT NULL,
    purchase_date_ms bigint NOT NULL,
    original_purchase_date_ms bigint,
    expires_date_ms bigint,
    cancellation_date_ms bigint,
    cancellation_reason text,
    is_trial_period boolean,
    web_order_line_item_id text,
    bundle_id text,
    first_learned_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    price_milliunits bigint,
    currency text,
    storefront text,
    app_account_token text,
    type text,
    in_app_ownership_type text,
    transaction_reason text,
    revocation_date_ms bigint,
    revocation_reason integer,
    revocation_type text,
    revocation_percentage integer,
    signed_date_ms bigint,
    source text DEFAULT 'receipt'::text NOT NULL,
    reversed_date_ms bigint,
    history_user_id text
);


--
-- Name: compensation_spool; Type: TABLE; Schema: recon; Owner: -
--

CREATE UNLOGGED TABLE recon.compensation_spool (
    kind text NOT NULL,
    user_id text,
    product_id text,
    purchase_ms bigint,
    transaction_id text,
    environment text,
    exact_order_id text,
    c1 text,
    c2 text,
    c3 text,
    c4 text,
    c5 text,
    c6 text,
    c7 text,
    c8 text,
    c9 text,
    c10 text,
    c11 text,
    c12 text,
    c13 text,
    c14 text,
    c15 text
)
WITH (autovacuum_enabled='false');


--
-- Name: current_findings; Type: TABLE; Schema: recon; Owner: -
--

CREATE UNLOGGED TABLE recon.current_findings (
    report text NOT NULL,
    finding_key text NOT NULL,
    c1 text,
    c2 text,
    c3 text,
    c4 text,
    c5 text,
    c6 text,
    c7 text,
    c8 text,
    c9 text,
    c10 text,
    c11 text,
    c12 text,
    c13 text,
    c14 text,
    c15 text
);


--
-- Name: findings; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.findings (
    finding_key text NOT NULL,
    report text NOT NULL,
    first_seen date NOT NULL,
    last_seen date NOT NULL,
    closed_on date,
    closed_because text
)
WITH (fillfactor='50');


--
-- Name: history_customers; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.history_customers (
    user_id text NOT NULL,
    transaction_id text NOT NULL,
    environment text NOT NULL,
    revision text,
    run_id bigint NOT NULL,
    asked_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: input_errors; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.input_errors (
    relation text NOT NULL,
    key text NOT NULL,
    column_name text NOT NULL,
    problem text NOT NULL,
    run_id bigint NOT NULL
);


--
-- Name: notification_sweeps; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.notification_sweeps (
    notification_type text NOT NULL,
    environment text NOT NULL,
    reached_ms bigint NOT NULL,
    run_id bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: notifications; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.notifications (
    notification_uuid text NOT NULL,
    notification_type text NOT NULL,
    subtype text,
    environment text NOT NULL,
    transaction_id text,
    signed_date_ms bigint NOT NULL,
    run_id bigint NOT NULL,
    learned_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: receipt_state; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.receipt_state (
    receipt_id text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    failed_runs integer DEFAULT 0 NOT NULL,
    runs_21002 integer DEFAULT 0 NOT NULL,
    last_run_id bigint,
    last_class text,
    last_status integer,
    last_error text,
    last_attempt_at timestamp with time zone,
    next_eligible_at timestamp with time zone,
    definitive boolean DEFAULT false NOT NULL,
    verdict text,
    environment text,
    bundle_id text,
    last_swept_at timestamp with time zone,
    start_environment text,
    kind text DEFAULT 'receipt'::text NOT NULL,
    rejection text,
    CONSTRAINT receipt_state_kind_check CHECK ((kind = ANY (ARRAY['receipt'::text, 'signed_transaction'::text]))),
    CONSTRAINT receipt_state_start_environment_check CHECK ((start_environment = ANY (ARRAY['production'::text, 'sandbox'::text]))),
    CONSTRAINT receipt_state_verdict_check CHECK ((verdict = ANY (ARRAY['valid'::text, 'invalid_receipt'::text, 'wrong_bundle'::text])))
);


--
-- Name: receipt_transactions; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.receipt_transactions (
    receipt_id text NOT NULL,
    transaction_id text NOT NULL,
    environment text NOT NULL
);


--
-- Name: runs; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.runs (
    run_id bigint NOT NULL,
    command text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    as_of timestamp with time zone NOT NULL,
    exit_code integer,
    summary jsonb
);


--
-- Name: runs_run_id_seq; Type: SEQUENCE; Schema: recon; Owner: -
--

CREATE SEQUENCE recon.runs_run_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: runs_run_id_seq; Type: SEQUENCE OWNED BY; Schema: recon; Owner: -
--

ALTER SEQUENCE recon.runs_run_id_seq OWNED BY recon.runs.run_id;


--
-- Name: schema_migrations; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: verify_attempts; Type: TABLE; Schema: recon; Owner: -
--

CREATE TABLE recon.verify_attempts (
    receipt_id text NOT NULL,
    attempt integer NOT NULL,
    run_id bigint NOT NULL,
    at timestamp with time zone NOT NULL,
    environment text NOT NULL,
    http_status integer,
    status integer,
    answer_class text NOT NULL,
    problem text,
    elapsed_ms integer,
    sweep boolean DEFAULT false NOT NULL
);


--
-- Name: runs run_id; Type: DEFAULT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.runs ALTER COLUMN run_id SET DEFAULT nextval('recon.runs_run_id_seq'::regclass);


--
-- Data for Name: apple_transactions; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.apple_transactions VALUES ('1000000000000340', 'production', '1000000000000340', 'com.example.game.coins500', 1, 1793479727661, 1793479727661, NULL, NULL, NULL, NULL, NULL, 'com.example.game', '2026-11-28 15:48:02.875183+00', '2026-11-28 15:48:02.875183+00', 5490, 'EUR', 'DEU', NULL, 'Consumable', 'PURCHASED', 'PURCHASE', NULL, NULL, NULL, NULL, 1793479749325, 'signed_transaction', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000020', 'production', '1000000000000020', 'com.example.game.gems_pack', 1, 1793534238760, 1793534238760, NULL, NULL, NULL, NULL, NULL, 'com.example.game', '2026-11-28 15:48:02.875183+00', '2026-11-28 15:48:02.875183+00', 1600000, 'JPY', 'JPN', NULL, 'Consumable', 'PURCHASED', 'PURCHASE', NULL, NULL, NULL, NULL, 1793534268083, 'signed_transaction', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000440', 'production', '1000000000000440', 'com.example.game.coins100', 1, 1794123950289, 1794123950289, NULL, NULL, NULL, NULL, NULL, 'com.example.game', '2026-11-28 15:48:02.875183+00', '2026-11-28 15:48:02.875183+00', 1090, 'EUR', 'DEU', NULL, 'Consumable', 'PURCHASED', 'PURCHASE', NULL, NULL, NULL, NULL, 1794123978539, 'signed_transaction', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001520', 'production', '1000000000001520', 'com.example.game.coins500', 1, 1793262625813, 1793262625813, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.886803+00', '2026-11-28 15:48:02.886803+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000460', 'production', '1000000000000460', 'com.example.game.coins100', 1, 1793047653408, 1793047653408, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.886803+00', '2026-11-28 15:48:02.886803+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000520', 'production', '1000000000000520', 'com.example.game.coins500', 1, 1794529873649, 1794529873649, NULL, NULL, NULL, NULL, NULL, 'com.example.game', '2026-11-28 15:48:02.892023+00', '2026-11-28 15:48:02.892023+00', 4990, 'USD', 'USA', NULL, 'Consumable', 'PURCHASED', 'PURCHASE', NULL, NULL, NULL, NULL, 1794529920019, 'signed_transaction', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001240', 'production', '1000000000001240', 'com.example.game.coins500', 1, 1794074124313, 1794074124313, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001400', 'production', '1000000000001400', 'com.example.game.coins500', 1, 1793647751531, 1793647751531, NULL, 1793735664952, '1', false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002320', 'production', '1000000000002320', 'com.example.game.coins100', 1, 1793829447281, 1793829447281, NULL, 1793974390603, '1', false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000500', 'production', '1000000000000500', 'com.example.game.gems_pack', 1, 1794390520050, 1794390520050, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001861', 'production', '1000000000001860', 'com.example.game.vip_month', 1, 1793720371232, 1793377155178, 1795969155178, NULL, NULL, false, '1000001000001860', 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001860', 'production', '1000000000001860', 'com.example.game.vip_month', 1, 1793377155178, 1793377155178, 1795969155178, NULL, NULL, false, '1000001000001860', 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002000', 'production', '1000000000002000', 'com.example.game.coins500', 1, 1793517834303, 1793517834303, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000960', 'production', '1000000000000960', 'com.example.game.coins500', 1, 1793548461648, 1793548461648, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.898475+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000800', 'production', '1000000000000800', 'com.example.game.gems_pack', 1, 1794395131892, 1794395131892, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001760', 'production', '1000000000001760', 'com.example.game.vip_week', 1, 1794498873821, 1794498873821, 1795103673821, NULL, NULL, false, '1000001000001760', 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001761', 'production', '1000000000001760', 'com.example.game.vip_week', 1, 1795103673821, 1794498873821, 1795708473821, NULL, NULL, false, '1000001000001761', 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000220', 'production', '1000000000000220', 'com.example.game.gems_pack', 1, 1794693853206, 1794693853206, NULL, 1794808637329, '0', false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000000', 'production', '1000000000000000', 'com.example.game.coins500', 1, 1793974785280, 1793974785280, NULL, 1794109753414, '0', false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000280', 'production', '1000000000000280', 'com.example.game.gems_pack', 1, 1795178911368, 1795178911368, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002160', 'production', '1000000000002160', 'com.example.game.coins100', 1, 1795192920355, 1795192920355, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002120', 'production', '1000000000002120', 'com.example.game.gems_pack', 1, 1795203009751, 1795203009751, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000840', 'production', '1000000000000840', 'com.example.game.no_ads', 1, 1794338129515, 1794338129515, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.903994+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000120', 'production', '1000000000000120', 'com.example.game.level_pack', 1, 1795089462253, 1795089462253, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.906079+00', '2026-11-28 15:48:02.906079+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001260', 'production', '1000000000001260', 'com.example.game.vip_week', 1, 1794495338421, 1794495338421, 1795100138421, NULL, NULL, false, '1000001000001260', 'com.example.game', '2026-11-28 15:48:02.906079+00', '2026-11-28 15:48:02.906079+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001261', 'production', '1000000000001260', 'com.example.game.vip_week', 1, 1795100138421, 1794495338421, 1795704938421, NULL, NULL, false, '1000001000001261', 'com.example.game', '2026-11-28 15:48:02.906079+00', '2026-11-28 15:48:02.906079+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000720', 'production', '1000000000000720', 'com.example.game.coins100', 1, 1794546629790, 1794546629790, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.906079+00', '2026-11-28 15:48:02.906079+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000000160', 'production', '1000000000000160', 'com.example.game.gems_pack', 1, 1794694716576, 1794694716576, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.90861+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002360', 'production', '1000000000002360', 'com.example.game.gems_pack', 1, 1794962212620, 1794962212620, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.90861+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001320', 'production', '1000000000001320', 'com.example.game.vip_month', 1, 1794952016080, 1794952016080, 1797544016080, NULL, NULL, false, '1000001000001320', 'com.example.game', '2026-11-28 15:48:02.90861+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001180', 'production', '1000000000001180', 'com.example.game.coins100', 1, 1794968041635, 1794968041635, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.903994+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002220', 'production', '1000000000002220', 'com.example.game.vip_month', 1, 1793500813596, 1793500813596, 1796092813596, NULL, NULL, false, '1000001000002220', 'com.example.game', '2026-11-28 15:48:02.898475+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000002221', 'production', '1000000000002220', 'com.example.game.vip_month', 1, 1793633818320, 1793500813596, 1796092813596, NULL, NULL, false, '1000001000002220', 'com.example.game', '2026-11-28 15:48:02.90861+00', '2026-11-28 15:48:02.90861+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001500', 'production', '1000000000001500', 'com.example.game.no_ads', 1, 1793519300840, 1793519300840, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.910924+00', '2026-11-28 15:48:02.910924+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001980', 'production', '1000000000001980', 'com.example.game.coins500', 2, 1793684734411, 1793684734411, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.910924+00', '2026-11-28 15:48:02.910924+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001560', 'production', '1000000000001560', 'com.example.game.coins500', 1, 1793775961409, 1793775961409, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.910924+00', '2026-11-28 15:48:02.910924+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);
INSERT INTO recon.apple_transactions VALUES ('1000000000001700', 'sandbox', '1000000000001700', 'com.example.game.gems_pack', 1, 1793971485895, 1793971485895, NULL, NULL, NULL, false, NULL, 'com.example.game', '2026-11-28 15:48:02.912249+00', '2026-11-28 15:48:02.912249+00', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'receipt', NULL, NULL);


--
-- Data for Name: compensation_spool; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000000800', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000001400', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000001700', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000002200', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('C', 'U000000023', 'com.example.game.coins100', 1793047653408, '1000000000000460', 'production', NULL, '', 'U000000023', 'com.example.game.coins100', 'consumable', '1', '1000000000000460', '1000000000000460', '2026-10-26T20:47:33Z', 'production', 'none', 'paid_not_granted', 'R00000002300', '0.99', 'USD', 'receipt');
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000002500', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000002600', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000003600', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('C', 'U000000040', 'com.example.game.gems_pack', 1794395131892, '1000000000000800', 'production', NULL, '', 'U000000040', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000800', '1000000000000800', '2026-11-11T11:05:31Z', 'production', 'none', 'paid_not_granted', 'R00000004000', '9.99', 'USD', 'receipt');
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000004800', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000005900', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000006200', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('C', 'U000000063', 'com.example.game.vip_week', 1795100138421, '1000000000001261', 'production', NULL, '', 'U000000063', 'com.example.game.vip_week', 'auto_renewable', '1', '1000000000001261', '1000000000001260', '2026-11-19T14:55:38Z', 'production', 'none', 'paid_not_granted', 'R00000006300', '2.49', 'USD', 'receipt');
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000007600', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000007800', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('C', 'U000000088', 'com.example.game.vip_week', 1795103673821, '1000000000001761', 'production', NULL, '', 'U000000088', 'com.example.game.vip_week', 'auto_renewable', '1', '1000000000001761', '1000000000001760', '2026-11-19T15:54:33Z', 'production', 'none', 'paid_not_granted', 'R00000008800', '2.49', 'USD', 'receipt');
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000009900', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000010000', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000010600', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000010800', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.compensation_spool VALUES ('E', NULL, NULL, NULL, NULL, NULL, 'O00000011800', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);


--
-- Data for Name: current_findings; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000000000', 'G00000000000', 'U000000000', 'O00000000000', 'com.example.game.coins500', 'consumable', '1', '1000000000000000', '1000000000000000', '2026-11-06T14:20:46Z', 'refunded', '2026-11-08T03:49:13Z', '0', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('duplicate_grants.csv', 'duplicate|G00000000101', 'G00000000101', 'U000000001', 'O00000000100', 'com.example.game.gems_pack', 'consumable', '1000000000000020', '1000000000000020', 'same_transaction', 'G00000000100', '2026-11-01T11:57:53Z', NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000160|production', 'O00000000800', 'U000000008', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000160', '1000000000000160', '2026-11-14T22:18:36Z', 'production', 'exact', 'paid_not_granted', 'R00000000800', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000000900', 'G00000000900', 'U000000009', 'O00000000900', 'com.example.game.coins100', 'consumable', '1', '1000000000000180', '1000000000000180', '2026-11-09T05:25:54Z', 'invalid_receipt', '', '', '0.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000001100', 'G00000001100', 'U000000011', 'O00000001100', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000220', '1000000000000220', '2026-11-14T22:04:54Z', 'refunded', '2026-11-16T05:57:17Z', '0', '9.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000001101', 'G00000001101', 'U000000011', '', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000220', '1000000000000220', '2026-11-14T22:10:26Z', 'refunded', '2026-11-16T05:57:17Z', '0', '9.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000280|production', 'O00000001400', 'U000000014', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000280', '1000000000000280', '2026-11-20T12:48:31Z', 'production', 'exact', 'paid_not_granted', 'R00000001400', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000001500', 'G00000001500', 'U000000015', 'O00000001500', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000300', '1000000000000300', '2026-11-07T04:42:36Z', 'invalid_receipt', '', '', '9.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000340|production', 'O00000001700', 'U000000017', 'com.example.game.coins500', 'consumable', '1', '1000000000000340', '1000000000000340', '2026-10-31T20:48:47Z', 'production', 'exact', 'paid_not_granted', 'R00000001700', '5.49', 'EUR', 'signed_transaction');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000440|production', 'O00000002200', 'U000000022', 'com.example.game.coins100', 'consumable', '1', '1000000000000440', '1000000000000440', '2026-11-08T07:45:50Z', 'production', 'exact', 'paid_not_granted', 'R00000002200', '1.09', 'EUR', 'signed_transaction');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000500|production', 'O00000002500', 'U000000025', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000500', '1000000000000500', '2026-11-11T09:48:40Z', 'production', 'exact', 'paid_not_granted', 'R00000002500', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000520|production', 'O00000002600', 'U000000026', 'com.example.game.coins500', 'consumable', '1', '1000000000000520', '1000000000000520', '2026-11-13T00:31:13Z', 'production', 'exact', 'paid_not_granted', 'R00000002600', '4.99', 'USD', 'signed_transaction');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000002900', 'G00000002900', 'U000000029', 'O00000002900', 'com.example.game.coins500', 'consumable', '1', '1000000000000580', '1000000000000580', '2026-11-07T02:29:31Z', 'invalid_receipt', '', '', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000720|production', 'O00000003600', 'U000000036', 'com.example.game.coins100', 'consumable', '1', '1000000000000720', '1000000000000720', '2026-11-13T05:10:29Z', 'production', 'exact', 'paid_not_granted', 'R00000003600', '0.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000004400', 'G00000004400', 'U000000044', 'O00000004400', 'com.example.game.coins500', 'consumable', '1', '1000000000000880', '1000000000000880', '2026-11-13T09:28:03Z', 'wrong_bundle', '', '', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000960|production', 'O00000004800', 'U000000048', 'com.example.game.coins500', 'consumable', '1', '1000000000000960', '1000000000000960', '2026-11-01T15:54:21Z', 'production', 'exact', 'paid_not_granted', 'R00000004801', '4.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001180|production', 'O00000005900', 'U000000059', 'com.example.game.coins100', 'consumable', '1', '1000000000001180', '1000000000001180', '2026-11-18T02:14:01Z', 'production', 'exact', 'paid_not_granted', 'R00000005901', '0.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001240|production', 'O00000006200', 'U000000062', 'com.example.game.coins500', 'consumable', '1', '1000000000001240', '1000000000001240', '2026-11-07T17:55:24Z', 'production', 'exact', 'revoked_not_refunded', 'R00000006200', '4.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000007000', 'G00000007000', 'U000000070', 'O00000007000', 'com.example.game.coins500', 'consumable', '1', '1000000000001400', '1000000000001400', '2026-11-02T19:29:45Z', 'refunded', '2026-11-03T19:54:24Z', '1', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000007001', 'G00000007001', 'U000000070', '', 'com.example.game.coins500', 'consumable', '1', '1000000000001400', '1000000000001400', '2026-11-02T19:30:32Z', 'refunded', '2026-11-03T19:54:24Z', '1', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001520|production', 'O00000007600', 'U000000076', 'com.example.game.coins500', 'consumable', '1', '1000000000001520', '1000000000001520', '2026-10-29T08:30:25Z', 'production', 'exact', 'paid_not_granted', 'R00000007600', '4.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001560|production', 'O00000007800', 'U000000078', 'com.example.game.coins500', 'consumable', '1', '1000000000001560', '1000000000001560', '2026-11-04T07:06:01Z', 'production', 'exact', 'paid_not_granted', 'R00000007800', '4.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000008500', 'G00000008500', 'U000000085', 'O00000008500', 'com.example.game.gems_pack', 'consumable', '1', '1000000000001700', '1000000000001700', '2026-11-06T13:25:43Z', 'sandbox_transaction', '', '', '9.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001980|production', 'O00000009900', 'U000000099', 'com.example.game.coins500', 'consumable', '2', '1000000000001980', '1000000000001980', '2026-11-03T05:45:34Z', 'production', 'exact', 'paid_not_granted', 'R00000009900', '9.98', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000002000|production', 'O00000010000', 'U000000100', 'com.example.game.coins500', 'consumable', '1', '1000000000002000', '1000000000002000', '2026-11-01T07:23:54Z', 'production', 'exact', 'paid_not_granted', 'R00000010001', '4.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000010100', 'G00000010100', 'U000000101', 'O00000010100', 'com.example.game.coins500', 'consumable', '1', '1000000000002020', '1000000000002020', '2026-11-17T10:52:26Z', 'invalid_receipt', '', '', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000002120|production', 'O00000010600', 'U000000106', 'com.example.game.gems_pack', 'consumable', '1', '1000000000002120', '1000000000002120', '2026-11-20T19:30:09Z', 'production', 'exact', 'paid_not_granted', 'R00000010600', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000002160|production', 'O00000010800', 'U000000108', 'com.example.game.coins100', 'consumable', '1', '1000000000002160', '1000000000002160', '2026-11-20T16:42:00Z', 'production', 'exact', 'paid_not_granted', 'R00000010800', '0.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000011000', 'G00000011000', 'U000000110', 'O00000011000', 'com.example.game.coins500', 'consumable', '1', '1000000000002200', '1000000000002200', '2026-11-15T18:44:35Z', 'wrong_bundle', '', '', '4.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('duplicate_grants.csv', 'duplicate|G00000011101', 'G00000011101', 'U000000111', 'O00000011101', 'com.example.game.vip_month', 'auto_renewable', '1000000000002221', '1000000000002220', 'restore_as_purchase', 'G00000011100', '2026-11-02T15:37:37Z', NULL, NULL, NULL, NULL, NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000011500', 'G00000011500', 'U000000115', 'O00000011500', 'com.example.game.coins100', 'consumable', '1', '1000000000002300', '1000000000002300', '2026-11-12T09:21:31Z', 'wrong_bundle', '', '', '0.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000011600', 'G00000011600', 'U000000116', 'O00000011600', 'com.example.game.coins100', 'consumable', '1', '1000000000002320', '1000000000002320', '2026-11-04T21:58:21Z', 'refunded', '2026-11-06T14:13:10Z', '1', '0.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('clawback.csv', 'clawback|G00000011601', 'G00000011601', 'U000000116', '', 'com.example.game.coins100', 'consumable', '1', '1000000000002320', '1000000000002320', '2026-11-04T21:58:47Z', 'refunded', '2026-11-06T14:13:10Z', '1', '0.99', 'USD', NULL);
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000002360|production', 'O00000011800', 'U000000118', 'com.example.game.gems_pack', 'consumable', '1', '1000000000002360', '1000000000002360', '2026-11-18T00:36:52Z', 'production', 'exact', 'paid_not_granted', 'R00000011800', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000460|production', '', 'U000000023', 'com.example.game.coins100', 'consumable', '1', '1000000000000460', '1000000000000460', '2026-10-26T20:47:33Z', 'production', 'none', 'paid_not_granted', 'R00000002300', '0.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000000800|production', '', 'U000000040', 'com.example.game.gems_pack', 'consumable', '1', '1000000000000800', '1000000000000800', '2026-11-11T11:05:31Z', 'production', 'none', 'paid_not_granted', 'R00000004000', '9.99', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001261|production', '', 'U000000063', 'com.example.game.vip_week', 'auto_renewable', '1', '1000000000001261', '1000000000001260', '2026-11-19T14:55:38Z', 'production', 'none', 'paid_not_granted', 'R00000006300', '2.49', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('compensate.csv', 'compensate|1000000000001761|production', '', 'U000000088', 'com.example.game.vip_week', 'auto_renewable', '1', '1000000000001761', '1000000000001760', '2026-11-19T15:54:33Z', 'production', 'none', 'paid_not_granted', 'R00000008800', '2.49', 'USD', 'receipt');
INSERT INTO recon.current_findings VALUES ('refunds.csv', 'refund|1000000000002320', '1000000000002320', '1000000000002320', 'U000000116', 'com.example.game.coins100', 'consumable', '2026-11-06T14:13:10Z', '1', NULL, NULL, '0.99', '0.99', 'USD', 'still_granted', 'G00000011600 G00000011601', NULL);
INSERT INTO recon.current_findings VALUES ('refunds.csv', 'refund|1000000000001400', '1000000000001400', '1000000000001400', 'U000000070', 'com.example.game.coins500', 'consumable', '2026-11-03T19:54:24Z', '1', NULL, NULL, '4.99', '4.99', 'USD', 'still_granted', 'G00000007000 G00000007001', NULL);
INSERT INTO recon.current_findings VALUES ('refunds.csv', 'refund|1000000000000000', '1000000000000000', '1000000000000000', 'U000000000', 'com.example.game.coins500', 'consumable', '2026-11-08T03:49:13Z', '0', NULL, NULL, '4.99', '4.99', 'USD', 'still_granted', 'G00000000000', NULL);
INSERT INTO recon.current_findings VALUES ('refunds.csv', 'refund|1000000000000220', '1000000000000220', '1000000000000220', 'U000000011', 'com.example.game.gems_pack', 'consumable', '2026-11-16T05:57:17Z', '0', NULL, NULL, '9.99', '9.99', 'USD', 'still_granted', 'G00000001100 G00000001101', NULL);


--
-- Data for Name: findings; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.findings VALUES ('clawback|G00000000000', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('duplicate|G00000000101', 'duplicate_grants.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000160|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000000900', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000001100', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000001101', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000280|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000001500', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000340|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000440|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000500|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000520|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000002900', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000720|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000004400', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000960|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001180|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001240|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000007000', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000007001', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001520|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001560|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000008500', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001980|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000002000|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000010100', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000002120|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000002160|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000011000', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('duplicate|G00000011101', 'duplicate_grants.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000011500', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000011600', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('clawback|G00000011601', 'clawback.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000002360|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000460|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000000800|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001261|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('compensate|1000000000001761|production', 'compensate.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('refund|1000000000002320', 'refunds.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('refund|1000000000001400', 'refunds.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('refund|1000000000000000', 'refunds.csv', '2026-11-21', '2026-11-21', NULL, NULL);
INSERT INTO recon.findings VALUES ('refund|1000000000000220', 'refunds.csv', '2026-11-21', '2026-11-21', NULL, NULL);


--
-- Data for Name: history_customers; Type: TABLE DATA; Schema: recon; Owner: -
--



--
-- Data for Name: input_errors; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.input_errors VALUES ('iap_products', 'com.example.game.legacy_bundle', 'product_type', 'product_type bundle is not one of consumable, non_consumable, auto_renewable, non_renewing', 1);
INSERT INTO recon.input_errors VALUES ('iap_orders', 'O00000012000', 'user_id', 'user_id is null', 1);
INSERT INTO recon.input_errors VALUES ('iap_orders', 'O00000012001', 'product_id', 'unknown product_id com.example.game.unknown_item', 1);
INSERT INTO recon.input_errors VALUES ('iap_orders', 'O00000012002', 'quantity', 'quantity 0 is below 1', 1);
INSERT INTO recon.input_errors VALUES ('iap_receipts', 'R00000012000', 'receipt_data', 'receipt_data is neither base64 (an app receipt) nor a JWS (a signed transaction)', 1);
INSERT INTO recon.input_errors VALUES ('iap_receipts', 'R00000012001', 'user_id', 'user_id is null', 1);
INSERT INTO recon.input_errors VALUES ('iap_grants', 'G00000012000', 'user_id', 'user_id is null', 1);
INSERT INTO recon.input_errors VALUES ('iap_grants', 'G00000012001', 'product_id', 'unknown product_id com.example.game.unknown_item', 1);
INSERT INTO recon.input_errors VALUES ('iap_grants', 'G00000012002', 'quantity', 'quantity 0 is below 1', 1);
INSERT INTO recon.input_errors VALUES ('iap_grants', 'G00000012100', 'grant_id', 'duplicate key (2 rows)', 1);


--
-- Data for Name: notification_sweeps; Type: TABLE DATA; Schema: recon; Owner: -
--



--
-- Data for Name: notifications; Type: TABLE DATA; Schema: recon; Owner: -
--



--
-- Data for Name: receipt_state; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.receipt_state VALUES ('R00000001700', 1, 0, 0, 1, 'ok', NULL, NULL, '2026-11-28 15:48:02.869+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'signed_transaction', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000000100', 1, 0, 0, 1, 'ok', NULL, NULL, '2026-11-28 15:48:02.871+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'signed_transaction', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000002200', 1, 0, 0, 1, 'ok', NULL, NULL, '2026-11-28 15:48:02.871+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'signed_transaction', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000000900', 1, 0, 0, 1, 'reject', NULL, 'signed transaction: unknown_root: the chain does not lead to a configured root certificate', '2026-11-28 15:48:02.881+00', NULL, true, 'invalid_receipt', 'production', NULL, NULL, NULL, 'signed_transaction', 'unknown_root');
INSERT INTO recon.receipt_state VALUES ('R00000011500', 1, 0, 0, 1, 'reject', NULL, 'signed transaction: wrong_bundle: bundle com.other.app is not allowed', '2026-11-28 15:48:02.882+00', NULL, true, 'wrong_bundle', 'production', NULL, NULL, NULL, 'signed_transaction', 'wrong_bundle');
INSERT INTO recon.receipt_state VALUES ('R00000007600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.885+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000002300', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.885+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000002900', 1, 0, 0, 1, 'reject', NULL, 'signed transaction: unknown_root: the chain does not lead to a configured root certificate', '2026-11-28 15:48:02.889+00', NULL, true, 'invalid_receipt', 'production', NULL, NULL, NULL, 'signed_transaction', 'unknown_root');
INSERT INTO recon.receipt_state VALUES ('R00000004400', 1, 0, 0, 1, 'reject', NULL, 'signed transaction: wrong_bundle: bundle com.other.app is not allowed', '2026-11-28 15:48:02.889+00', NULL, true, 'wrong_bundle', 'production', NULL, NULL, NULL, 'signed_transaction', 'wrong_bundle');
INSERT INTO recon.receipt_state VALUES ('R00000001500', 1, 0, 0, 1, 'reject', 21010, 'status 21010 (account not found or deleted)', '2026-11-28 15:48:02.89+00', NULL, true, 'invalid_receipt', 'production', NULL, NULL, NULL, 'receipt', 'status 21010');
INSERT INTO recon.receipt_state VALUES ('R00000002600', 1, 0, 0, 1, 'ok', NULL, NULL, '2026-11-28 15:48:02.891+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'signed_transaction', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000011100', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000006200', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000007000', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000011600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000002500', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000010000', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000004800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000009301', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000009300', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000010001', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000004801', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.897+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000004000', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.9+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000008800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.9+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000001100', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.9+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000011000', 1, 0, 0, 1, 'reject', 0, 'bundle com.other.app is not allowed', '2026-11-28 15:48:02.9+00', NULL, true, 'wrong_bundle', 'production', 'com.other.app', NULL, NULL, 'receipt', 'wrong_bundle');
INSERT INTO recon.receipt_state VALUES ('R00000000000', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.9+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000001400', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.901+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000005900', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.902+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000010800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.902+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000010600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.902+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000004200', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.903+00', NULL, true, 'valid', 'production', 'com.example.game', '2026-11-28 15:48:02.903+00', NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000000600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.905+00', NULL, true, 'valid', 'production', 'com.example.game', '2026-11-28 15:48:02.905+00', NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000006300', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.905+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000003600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.905+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000000800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.906+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000010100', 1, 0, 0, 1, 'reject', 21003, 'status 21003 (receipt could not be authenticated)', '2026-11-28 15:48:02.906+00', NULL, true, 'invalid_receipt', 'production', NULL, NULL, NULL, 'receipt', 'status 21003');
INSERT INTO recon.receipt_state VALUES ('R00000011800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.907+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000006600', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.907+00', NULL, true, 'valid', 'production', 'com.example.game', '2026-11-28 15:48:02.907+00', NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000003100', 4, 1, 1, 1, 'retry', 21002, 'status 21002 (receipt data malformed or service unavailable)', '2026-11-28 15:48:02.954+00', '2026-11-28 15:58:02.954+00', false, NULL, 'production', NULL, NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000005901', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.907+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000011101', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.908+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000007500', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.908+00', NULL, true, 'valid', 'production', 'com.example.game', '2026-11-28 15:48:02.908+00', NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000009900', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.909+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000007800', 1, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.91+00', NULL, true, 'valid', 'production', 'com.example.game', NULL, NULL, 'receipt', NULL);
INSERT INTO recon.receipt_state VALUES ('R00000008500', 2, 0, 0, 1, 'ok', 0, NULL, '2026-11-28 15:48:02.911+00', NULL, true, 'valid', 'sandbox', 'com.example.game', NULL, NULL, 'receipt', NULL);


--
-- Data for Name: receipt_transactions; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.receipt_transactions VALUES ('R00000001700', '1000000000000340', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000000100', '1000000000000020', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000002200', '1000000000000440', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000007600', '1000000000001520', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000002300', '1000000000000460', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000002600', '1000000000000520', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000011100', '1000000000002220', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000006200', '1000000000001240', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000007000', '1000000000001400', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000011600', '1000000000002320', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000002500', '1000000000000500', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000010000', '1000000000002000', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000004800', '1000000000000960', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000009301', '1000000000001860', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000009301', '1000000000001861', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000009300', '1000000000001860', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000010001', '1000000000002000', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000004801', '1000000000000960', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000004000', '1000000000000800', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000008800', '1000000000001760', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000008800', '1000000000001761', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000001100', '1000000000000220', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000000000', '1000000000000000', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000001400', '1000000000000280', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000005900', '1000000000001180', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000010800', '1000000000002160', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000010600', '1000000000002120', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000004200', '1000000000000840', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000000600', '1000000000000120', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000006300', '1000000000001260', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000006300', '1000000000001261', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000003600', '1000000000000720', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000000800', '1000000000000160', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000011800', '1000000000002360', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000006600', '1000000000001320', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000005901', '1000000000001180', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000011101', '1000000000002220', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000011101', '1000000000002221', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000007500', '1000000000001500', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000009900', '1000000000001980', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000007800', '1000000000001560', 'production');
INSERT INTO recon.receipt_transactions VALUES ('R00000008500', '1000000000001700', 'sandbox');


--
-- Data for Name: runs; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.runs VALUES (1, 'run', '2026-11-28 15:48:02.841352+00', '2026-11-28 15:48:03.076365+00', '2026-11-21 03:00:00+00', 0, '{"as_of": "2026-11-21T03:00:00Z", "money": {"EUR": {"owed": "6.58"}, "USD": {"owed": "108.80", "refunded": "20.96", "claw_back": "78.85", "refunded_still_granted": "20.96"}}, "tally": {"iap_grants": {"kept": 175, "rows": 196, "duplicate": 2, "unverified": 0, "clawed_back": 15, "input_error": 4}, "iap_orders": {"rows": 208, "delivered": 194, "open_other": 1, "input_error": 3, "open_matched": 0, "open_reported": 10, "outside_window": 0}, "iap_products": {"ok": 8, "rows": 9, "input_error": 1}, "iap_receipts": {"rows": 212, "valid": 38, "rejected": 7, "unresolved": 1, "input_error": 2, "outside_window": 0, "settled_at_upload": 164}}, "counts": {"closed": 0, "refunds": 4, "clawback": 15, "compensate": 21, "unresolved": 1, "input_errors": 10, "unattributed": 0, "duplicate_grants": 2}, "run_id": 1, "window": {"to": "2026-11-21T03:00:00Z", "days": 30, "from": "2026-10-22T03:00:00Z"}, "reasons": {"clawback": {"refunded": 7, "wrong_bundle": 3, "invalid_receipt": 4, "sandbox_transaction": 1}, "compensate": {"paid_not_granted": 20, "revoked_not_refunded": 1}, "duplicate_grants": {"same_transaction": 1, "restore_as_purchase": 1}}, "seconds": {"tally": 0, "write": 0.036, "decide": 0.08, "verify": 0.12, "migrate": 0.026}, "exit_code": 0, "written_at": "2026-11-28T15:48:03Z", "verification": {"ok": 34, "retry": 3, "sweep": 4, "config": 0, "reject": 3, "switch": 1, "requests": 42, "signed_ok": 4, "candidates": 42, "unresolved": 1, "signed_reject": 4}, "skipped_checks": ["refunds_app_wide (consumable refunds from notification history)", "purchases_never_uploaded (ONE_TIME_CHARGE notifications, transaction history)", "signed_transaction_refunds (Get Transaction Info)"]}');


--
-- Data for Name: schema_migrations; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.schema_migrations VALUES (1, 'verification state, learned transactions, findings, runs', '2026-11-28 15:48:02.818106+00');
INSERT INTO recon.schema_migrations VALUES (2, 'is_base64: one pass over receipt_data', '2026-11-28 15:48:02.826458+00');
INSERT INTO recon.schema_migrations VALUES (3, 'receipts the environments disagree on stay in the environment that last answered', '2026-11-28 15:48:02.827291+00');
INSERT INTO recon.schema_migrations VALUES (4, 'is_base64 as an inlined SQL expression', '2026-11-28 15:48:02.828659+00');
INSERT INTO recon.schema_migrations VALUES (5, 'signed transactions (StoreKit 2): every field Apple signs, the kind of upload, the specific rejection', '2026-11-28 15:48:02.829343+00');
INSERT INTO recon.schema_migrations VALUES (6, 'the App Store Server API sweeps: notifications, their positions, customers'' history, reversals', '2026-11-28 15:48:02.831337+00');
INSERT INTO recon.schema_migrations VALUES (7, 'why a finding closed (closed.csv)', '2026-11-28 15:48:02.835213+00');
INSERT INTO recon.schema_migrations VALUES (8, 'is_base64 counts bytes, not characters', '2026-11-28 15:48:02.835849+00');
INSERT INTO recon.schema_migrations VALUES (9, 'room on each page of findings for the nightly update of last_seen', '2026-11-28 15:48:02.836416+00');
INSERT INTO recon.schema_migrations VALUES (10, 'the decide stage''s findings and compensation spool, made here', '2026-11-28 15:48:02.836946+00');
INSERT INTO recon.schema_migrations VALUES (11, 'answers recorded as sets (record_answers; the per-answer function kept as record_answers_each)', '2026-11-28 15:48:02.838687+00');


--
-- Data for Name: verify_attempts; Type: TABLE DATA; Schema: recon; Owner: -
--

INSERT INTO recon.verify_attempts VALUES ('R00000001700', 1, 1, '2026-11-28 15:48:02.869+00', 'production', NULL, NULL, 'ok', NULL, 11, false);
INSERT INTO recon.verify_attempts VALUES ('R00000000100', 1, 1, '2026-11-28 15:48:02.871+00', 'production', NULL, NULL, 'ok', NULL, 9, false);
INSERT INTO recon.verify_attempts VALUES ('R00000002200', 1, 1, '2026-11-28 15:48:02.871+00', 'production', NULL, NULL, 'ok', NULL, 0, false);
INSERT INTO recon.verify_attempts VALUES ('R00000000900', 1, 1, '2026-11-28 15:48:02.881+00', 'production', NULL, NULL, 'reject', 'signed transaction: unknown_root: the chain does not lead to a configured root certificate', 9, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011500', 1, 1, '2026-11-28 15:48:02.882+00', 'production', NULL, NULL, 'reject', 'signed transaction: wrong_bundle: bundle com.other.app is not allowed', 0, false);
INSERT INTO recon.verify_attempts VALUES ('R00000007600', 1, 1, '2026-11-28 15:48:02.885+00', 'production', 200, 0, 'ok', NULL, 25, false);
INSERT INTO recon.verify_attempts VALUES ('R00000002300', 1, 1, '2026-11-28 15:48:02.885+00', 'production', 200, 0, 'ok', NULL, 27, false);
INSERT INTO recon.verify_attempts VALUES ('R00000002900', 1, 1, '2026-11-28 15:48:02.889+00', 'production', NULL, NULL, 'reject', 'signed transaction: unknown_root: the chain does not lead to a configured root certificate', 19, false);
INSERT INTO recon.verify_attempts VALUES ('R00000004400', 1, 1, '2026-11-28 15:48:02.889+00', 'production', NULL, NULL, 'reject', 'signed transaction: wrong_bundle: bundle com.other.app is not allowed', 0, false);
INSERT INTO recon.verify_attempts VALUES ('R00000001500', 1, 1, '2026-11-28 15:48:02.89+00', 'production', 200, 21010, 'reject', 'status 21010 (account not found or deleted)', 5, false);
INSERT INTO recon.verify_attempts VALUES ('R00000002600', 1, 1, '2026-11-28 15:48:02.891+00', 'production', NULL, NULL, 'ok', NULL, 8, false);
INSERT INTO recon.verify_attempts VALUES ('R00000003100', 1, 1, '2026-11-28 15:48:02.891+00', 'production', 200, 21002, 'retry', 'status 21002 (receipt data malformed or service unavailable)', 0, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011100', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000006200', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 11, false);
INSERT INTO recon.verify_attempts VALUES ('R00000007000', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011600', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000002500', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 5, false);
INSERT INTO recon.verify_attempts VALUES ('R00000010000', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000004800', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000009301', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000009300', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000010001', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000004801', 1, 1, '2026-11-28 15:48:02.897+00', 'production', 200, 0, 'ok', NULL, 37, false);
INSERT INTO recon.verify_attempts VALUES ('R00000004000', 1, 1, '2026-11-28 15:48:02.9+00', 'production', 200, 0, 'ok', NULL, 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000008800', 1, 1, '2026-11-28 15:48:02.9+00', 'production', 200, 0, 'ok', NULL, 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000001100', 1, 1, '2026-11-28 15:48:02.9+00', 'production', 200, 0, 'ok', NULL, 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011000', 1, 1, '2026-11-28 15:48:02.9+00', 'production', 200, 0, 'reject', 'bundle com.other.app is not allowed', 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000000000', 1, 1, '2026-11-28 15:48:02.9+00', 'production', 200, 0, 'ok', NULL, 41, false);
INSERT INTO recon.verify_attempts VALUES ('R00000001400', 1, 1, '2026-11-28 15:48:02.901+00', 'production', 200, 0, 'ok', NULL, 1, false);
INSERT INTO recon.verify_attempts VALUES ('R00000005900', 1, 1, '2026-11-28 15:48:02.902+00', 'production', 200, 0, 'ok', NULL, 4, false);
INSERT INTO recon.verify_attempts VALUES ('R00000010800', 1, 1, '2026-11-28 15:48:02.902+00', 'production', 200, 0, 'ok', NULL, 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000010600', 1, 1, '2026-11-28 15:48:02.902+00', 'production', 200, 0, 'ok', NULL, 2, false);
INSERT INTO recon.verify_attempts VALUES ('R00000004200', 1, 1, '2026-11-28 15:48:02.903+00', 'production', 200, 0, 'ok', NULL, 3, true);
INSERT INTO recon.verify_attempts VALUES ('R00000000600', 1, 1, '2026-11-28 15:48:02.905+00', 'production', 200, 0, 'ok', NULL, 5, true);
INSERT INTO recon.verify_attempts VALUES ('R00000006300', 1, 1, '2026-11-28 15:48:02.905+00', 'production', 200, 0, 'ok', NULL, 8, false);
INSERT INTO recon.verify_attempts VALUES ('R00000003600', 1, 1, '2026-11-28 15:48:02.905+00', 'production', 200, 0, 'ok', NULL, 8, false);
INSERT INTO recon.verify_attempts VALUES ('R00000000800', 1, 1, '2026-11-28 15:48:02.906+00', 'production', 200, 0, 'ok', NULL, 9, false);
INSERT INTO recon.verify_attempts VALUES ('R00000010100', 1, 1, '2026-11-28 15:48:02.906+00', 'production', 200, 21003, 'reject', 'status 21003 (receipt could not be authenticated)', 9, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011800', 1, 1, '2026-11-28 15:48:02.907+00', 'production', 200, 0, 'ok', NULL, 9, false);
INSERT INTO recon.verify_attempts VALUES ('R00000006600', 1, 1, '2026-11-28 15:48:02.907+00', 'production', 200, 0, 'ok', NULL, 6, true);
INSERT INTO recon.verify_attempts VALUES ('R00000003100', 2, 1, '2026-11-28 15:48:02.907+00', 'production', 200, 21002, 'retry', 'status 21002 (receipt data malformed or service unavailable)', 4, false);
INSERT INTO recon.verify_attempts VALUES ('R00000005901', 1, 1, '2026-11-28 15:48:02.907+00', 'production', 200, 0, 'ok', NULL, 10, false);
INSERT INTO recon.verify_attempts VALUES ('R00000011101', 1, 1, '2026-11-28 15:48:02.908+00', 'production', 200, 0, 'ok', NULL, 49, false);
INSERT INTO recon.verify_attempts VALUES ('R00000007500', 1, 1, '2026-11-28 15:48:02.908+00', 'production', 200, 0, 'ok', NULL, 7, true);
INSERT INTO recon.verify_attempts VALUES ('R00000009900', 1, 1, '2026-11-28 15:48:02.909+00', 'production', 200, 0, 'ok', NULL, 50, false);
INSERT INTO recon.verify_attempts VALUES ('R00000007800', 1, 1, '2026-11-28 15:48:02.91+00', 'production', 200, 0, 'ok', NULL, 51, false);
INSERT INTO recon.verify_attempts VALUES ('R00000008500', 1, 1, '2026-11-28 15:48:02.91+00', 'production', 200, 21007, 'switch', 'status 21007 (sandbox receipt sent to production)', 51, false);
INSERT INTO recon.verify_attempts VALUES ('R00000008500', 2, 1, '2026-11-28 15:48:02.911+00', 'sandbox', 200, 0, 'ok', NULL, 1, false);
INSERT INTO recon.verify_attempts VALUES ('R00000003100', 3, 1, '2026-11-28 15:48:02.947+00', 'production', 200, 21002, 'retry', 'status 21002 (receipt data malformed or service unavailable)', 1, false);
INSERT INTO recon.verify_attempts VALUES ('R00000003100', 4, 1, '2026-11-28 15:48:02.954+00', 'production', 200, 21002, 'retry', 'status 21002 (receipt data malformed or service unavailable)', 1, false);


--
-- Name: runs_run_id_seq; Type: SEQUENCE SET; Schema: recon; Owner: -
--

SELECT pg_catalog.setval('recon.runs_run_id_seq', 1, true);


--
-- Name: apple_transactions apple_transactions_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.apple_transactions
    ADD CONSTRAINT apple_transactions_pkey PRIMARY KEY (transaction_id, environment);


--
-- Name: findings findings_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.findings
    ADD CONSTRAINT findings_pkey PRIMARY KEY (finding_key);


--
-- Name: history_customers history_customers_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.history_customers
    ADD CONSTRAINT history_customers_pkey PRIMARY KEY (user_id);


--
-- Name: notification_sweeps notification_sweeps_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.notification_sweeps
    ADD CONSTRAINT notification_sweeps_pkey PRIMARY KEY (notification_type, environment);


--
-- Name: notifications notifications_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.notifications
    ADD CONSTRAINT notifications_pkey PRIMARY KEY (notification_uuid);


--
-- Name: receipt_state receipt_state_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.receipt_state
    ADD CONSTRAINT receipt_state_pkey PRIMARY KEY (receipt_id);


--
-- Name: receipt_transactions receipt_transactions_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.receipt_transactions
    ADD CONSTRAINT receipt_transactions_pkey PRIMARY KEY (receipt_id, transaction_id, environment);


--
-- Name: runs runs_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (run_id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: verify_attempts verify_attempts_pkey; Type: CONSTRAINT; Schema: recon; Owner: -
--

ALTER TABLE ONLY recon.verify_attempts
    ADD CONSTRAINT verify_attempts_pkey PRIMARY KEY (receipt_id, attempt);


--
-- Name: apple_transactions_original_transaction_id_idx; Type: INDEX; Schema: recon; Owner: -
--

CREATE INDEX apple_transactions_original_transaction_id_idx ON recon.apple_transactions USING btree (original_transaction_id);


--
-- Name: receipt_transactions_transaction_id_idx; Type: INDEX; Schema: recon; Owner: -
--

CREATE INDEX receipt_transactions_transaction_id_idx ON recon.receipt_transactions USING btree (transaction_id);


--
-- PostgreSQL database dump complete
--


