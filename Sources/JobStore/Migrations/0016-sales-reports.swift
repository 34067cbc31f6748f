// Migration 16 (issue 36). Never edit this text: its sha256 is what schema_migrations.checksum
// records, and a database that got another text stops the job (exit 78). A change to what it
// made is a new migration.
extension Migrations {
    static let v16 = Migration(16, "Apple's daily Summary Sales Reports: the days held and their in-app purchase rows", sql: #"""
        -- Issue 36 item 1: the days of Apple's daily Summary Sales Report the job holds, per vendor
        -- number. A day is 'held' (its file was read; its rows below) or 'empty' (Apple answered
        -- 404, "no sales", for a day more than two days old). A day in this table is never asked
        -- again. report_date is the day in the report time zone it was asked for (time_zone).
        CREATE TABLE {S}.sales_report_days (
            vendor_number text NOT NULL,
            report_date date NOT NULL,
            state text NOT NULL CHECK (state IN ('held', 'empty')),
            -- filter[version] that answered (1_0, or the version Apple's 400 named).
            version text NOT NULL,
            time_zone text NOT NULL,
            -- Lines of the file (header not counted), and of them the rows kept below.
            file_rows int NOT NULL,
            kept_rows int NOT NULL,
            run_id bigint,
            stored_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (vendor_number, report_date)
        );
        -- The rows kept of a held day: those whose SKU is a product of iap_products and whose
        -- Product Type Identifier is an in-app purchase type of Apple's table (IA1, IA1-M, FI1,
        -- IA9, IA9-M, IAY, IAY-M), and the restores (IA3, restore true: never a sale). One row per
        -- line of the file (line_number): a summary report may repeat a group. Money and units as
        -- Apple wrote them: units per row (negative: a refund, or a CMB credit when cmb is set),
        -- customer_price and developer_proceeds per unit.
        CREATE TABLE {S}.sales_report_rows (
            vendor_number text NOT NULL,
            report_date date NOT NULL,
            line_number int NOT NULL,
            product_id text NOT NULL,
            product_type text NOT NULL,
            restore boolean NOT NULL,
            country_code text NOT NULL,
            customer_currency text NOT NULL,
            customer_price numeric(18,4) NOT NULL,
            units numeric(18,2) NOT NULL,
            developer_proceeds numeric(18,4) NOT NULL,
            proceeds_currency text NOT NULL,
            cmb text,
            PRIMARY KEY (vendor_number, report_date, line_number),
            FOREIGN KEY (vendor_number, report_date) REFERENCES {S}.sales_report_days ON DELETE CASCADE
        );
        CREATE INDEX sales_report_rows_product ON {S}.sales_report_rows (product_id, report_date);
        -- A day asked and not believed (a malformed file, a refusal, no answer): nothing of it is
        -- stored above, it is asked again the next night; one row per run and day, for the
        -- night's summary and the operator.
        CREATE TABLE {S}.sales_report_errors (
            run_id bigint NOT NULL,
            vendor_number text NOT NULL,
            report_date date NOT NULL,
            reason text NOT NULL,
            at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, vendor_number, report_date)
        );
        """#)
}
