// Migration 21. Never edit this text: its sha256 is what schema_migrations.checksum records, and a
// database that got another text stops the job (exit 78). A change to what it made is a new
// migration.
extension Migrations {
    static let v21 = Migration(21, "Google Play's orders: the money of each order, as orders.batchget said it", sql: #"""
        -- The money of each Google Play order (orders.batchget) of a purchase Google called
        -- purchased: what the buyer paid (total, tax included) and what Google pays the developer
        -- (developerRevenueInBuyerCurrency), each exact as Google's currency, units and nanos.
        -- unknown: Google answered the order alone with 404.
        CREATE TABLE {S}.play_orders (
            order_id          text PRIMARY KEY,
            package           text NOT NULL,
            token             text,
            state             text,
            unknown           boolean NOT NULL DEFAULT false,
            total_currency    text,
            total_units       bigint,
            total_nanos       int,
            tax_currency      text,
            tax_units         bigint,
            tax_nanos         int,
            revenue_currency  text,
            revenue_units     bigint,
            revenue_nanos     int,
            asked_at          timestamptz NOT NULL,
            run_id            bigint NOT NULL
        );
        """#)
}
