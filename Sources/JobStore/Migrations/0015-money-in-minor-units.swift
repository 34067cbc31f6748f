// Migration 15 (issue 36). Never edit this text: its sha256 is what schema_migrations.checksum
// records, and a database that got another text stops the job (exit 78). A change to what it
// made is a new migration.
extension Migrations {
    static let v15 = Migration(15, "money printed in each currency's ISO 4217 minor units", sql: #"""
        -- Issue 36: an amount is printed with its currency's minor units (JPY 0 decimals, USD 2,
        -- KWD 3), rounded once, half away from zero (numeric round). m is milliunits, exact (a
        -- prorated refund passes amount × percentage unrounded). The lists are Swift's
        -- `Currencies` (Money.swift, ISO 4217 List one); a test compares the two.
        CREATE FUNCTION {S}.money_in_units(m numeric, currency text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT round(m / 1000, CASE
                WHEN currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND',
                                  'VUV', 'XAF', 'XOF', 'XPF') THEN 0
                WHEN currency IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND', 'CLF', 'UYW') THEN 3
                ELSE 2 END)::text
        $fn$;
        """#)
}
