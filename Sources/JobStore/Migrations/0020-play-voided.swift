// Migration 20. Never edit this text: its sha256 is what schema_migrations.checksum records, and a
// database that got another text stops the job (exit 78). A change to what it made is a new
// migration.
extension Migrations {
    static let v20 = Migration(20, "Google Play's voided purchases: each record swept, each package's position", sql: #"""
        -- Every record of Google's voided purchases list the night swept (refunds, chargebacks,
        -- revocations; a quantity-based partial refund is a record of its own), once: a record read
        -- again (the sweeps overlap) changes nothing. voided_quantity 0: the record names no
        -- quantity (the rest of the purchase).
        CREATE TABLE {S}.play_voided (
            token            text NOT NULL,
            voided_ms        bigint NOT NULL,
            voided_quantity  int NOT NULL,
            package          text NOT NULL,
            order_id         text,
            purchase_ms      bigint NOT NULL,
            source           int NOT NULL,
            reason           int NOT NULL,
            stored_at        timestamptz NOT NULL,
            run_id           bigint NOT NULL,
            PRIMARY KEY (token, voided_ms, voided_quantity)
        );
        CREATE INDEX play_voided_order ON {S}.play_voided (order_id) WHERE order_id IS NOT NULL;
        -- Per package, where the next sweep starts: the end of the last sweep that read every page.
        CREATE TABLE {S}.play_voided_positions (
            package      text PRIMARY KEY,
            position_ms  bigint NOT NULL,
            swept_at     timestamptz NOT NULL,
            run_id       bigint NOT NULL
        );
        """#)
}
