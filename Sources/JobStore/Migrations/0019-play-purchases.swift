// Migration 19. Never edit this text: its sha256 is what schema_migrations.checksum records, and a
// database that got another text stops the job (exit 78). A change to what it made is a new
// migration.
extension Migrations {
    static let v19 = Migration(19, "Google Play purchases: what Google said of each purchase token, its products, tokens not settled yet", sql: #"""
        -- What Google Play said of each purchase token the night asked (purchases.productsv2
        -- getproductpurchasev2), as it last said it: one row per token, replaced when asked again.
        -- verdict: purchased, pending, cancelled (purchaseStateContext), or unknown (HTTP 404 with
        -- Google's error body, in a package where Google knew other tokens).
        CREATE TABLE {S}.play_purchases (
            token            text PRIMARY KEY,
            package          text NOT NULL,
            verdict          text NOT NULL CHECK (verdict IN ('purchased', 'pending', 'cancelled', 'unknown')),
            order_id         text,
            acknowledgement  text,
            completed_at     timestamptz,
            region_code      text,
            account_id       text,
            profile_id       text,
            test             boolean NOT NULL DEFAULT false,
            asked_at         timestamptz NOT NULL,
            run_id           bigint NOT NULL
        );
        CREATE INDEX play_purchases_order ON {S}.play_purchases (order_id) WHERE order_id IS NOT NULL;
        -- The purchase's products (productLineItem[]), in Google's order.
        CREATE TABLE {S}.play_purchase_lines (
            token                text NOT NULL REFERENCES {S}.play_purchases (token) ON DELETE CASCADE,
            line                 int NOT NULL,
            product_id           text NOT NULL,
            quantity             int NOT NULL,
            refundable_quantity  int,
            consumption_state    text,
            PRIMARY KEY (token, line)
        );
        -- Tokens asked without a settled answer (410, garbage, no answer, Google refused, no
        -- package; a 404 while its package is in doubt): asked again next night.
        CREATE TABLE {S}.play_attempts (
            token            text PRIMARY KEY,
            package          text,
            attempts         int NOT NULL,
            unknown          boolean NOT NULL DEFAULT false,
            last_problem     text NOT NULL,
            last_attempt_at  timestamptz NOT NULL,
            run_id           bigint NOT NULL
        );
        """#)
}
