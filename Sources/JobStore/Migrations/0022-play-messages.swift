// Migration 22. Never edit this text: its sha256 is what schema_migrations.checksum records, and a
// database that got another text stops the job (exit 78). A change to what it made is a new
// migration.
extension Migrations {
    static let v22 = Migration(22, "Google Play's notifications: each message pulled, each pending refund review and its answer", sql: #"""
        -- Each message pulled from the job's own Pub/Sub subscription on Play's notification topic,
        -- stored once by Pub/Sub's messageId (a redelivery changes nothing), before it is
        -- acknowledged. A message is only a token or an order to ask Google about, never a fact.
        -- kind: purchased or canceled (a one-time product), voided, refund_review, subscription,
        -- test, or unreadable (problem says why; data keeps what came).
        CREATE TABLE {S}.play_messages (
            message_id    text PRIMARY KEY,
            published_at  timestamptz NOT NULL,
            kind          text NOT NULL,
            package       text,
            event_at      timestamptz,
            token         text,
            order_id      text,
            problem       text,
            data          bytea NOT NULL,
            stored_at     timestamptz NOT NULL,
            run_id        bigint
        );
        CREATE INDEX play_messages_token ON {S}.play_messages (token) WHERE token IS NOT NULL;
        -- Each pending refund review (a pendingRefundReviewNotification) and what respond did with
        -- it. Google keeps the first answer per pending refund token: each is sent once. state:
        -- new, would_send, sending, sent, not_found, rejected, expired, not_judged.
        CREATE TABLE {S}.play_refund_reviews (
            pending_refund_token  text PRIMARY KEY,
            message_id            text NOT NULL,
            package               text NOT NULL,
            order_id              text NOT NULL,
            requested_at          timestamptz NOT NULL,
            refund_reason         int,
            account_id            text,
            state                 text NOT NULL,
            body                  text,
            detail                text,
            http_status           int,
            decided_at            timestamptz,
            answered_at           timestamptz
        );
        """#)
}
