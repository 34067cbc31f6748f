// Migration 13 (issue 35). Never edit this text: its sha256 is what schema_migrations.checksum
// records, and a database that got another text stops the job (exit 78). A change to what it
// made is a new migration.
extension Migrations {
    static let v13 = Migration(13, "refund defense: Apple's consumption requests and what respond answered", sql: #"""
        -- Issue 35: `iap-reconcile respond` answers Apple's refund requests (CONSUMPTION_REQUEST
        -- notifications). One row per request, keyed by notificationUUID (Apple repeats a
        -- notification with the same UUID). signed_transaction is data.signedTransactionInfo as
        -- signed: verified again before each decision. state: new (found, not decided yet),
        -- would_send (decided; sending is off), sending (stored before the call to Apple: a kill
        -- before the answer is stored leaves it here, and the next run sends it again, the one
        -- documented repeat), sent (Apple answered 202), rejected (Apple answered 4xx: error_code),
        -- expired (older than 12 hours when first decidable), no_consent, not_judged (detail: why).
        CREATE TABLE {S}.consumption_requests (
            notification_uuid       text PRIMARY KEY,
            environment             text NOT NULL,
            transaction_id          text NOT NULL,
            original_transaction_id text NOT NULL,
            product_id              text NOT NULL,
            apple_type              text,
            quantity                int NOT NULL,
            price_milli             bigint,
            currency                text,
            reason                  text,
            requested_ms            bigint NOT NULL,
            source                  text NOT NULL,
            signed_transaction      text NOT NULL,
            found_at                timestamptz NOT NULL DEFAULT now(),
            state                   text NOT NULL DEFAULT 'new',
            detail                  text,
            user_id                 text,
            delivery_status         text,
            consumption_percentage  int,
            sample_content_provided boolean,
            refund_preference       text,
            decided_at              timestamptz,
            sent_at                 timestamptz,
            sends                   int NOT NULL DEFAULT 0,
            http_status             int,
            error_code              bigint
        );
        CREATE INDEX ON {S}.consumption_requests (transaction_id);
        CREATE INDEX ON {S}.consumption_requests (requested_ms) WHERE state IN ('new', 'would_send', 'sending', 'not_judged');
        -- How far respond read each source: Get Notification History per environment
        -- (`notification_history`), the shop's own iap_notifications (`iap_notifications`, by
        -- received_at). UNIX ms.
        CREATE TABLE {S}.respond_positions (
            source       text NOT NULL,
            environment  text NOT NULL,
            reached_ms   bigint NOT NULL,
            PRIMARY KEY (source, environment)
        );
        -- Signed payloads that failed a check: never believed, kept with the reason.
        CREATE TABLE {S}.respond_rejects (
            source          text NOT NULL,
            payload_sha256  text NOT NULL,
            received_ms     bigint,
            reason          text NOT NULL,
            found_at        timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (source, payload_sha256)
        );
        """#)
}
