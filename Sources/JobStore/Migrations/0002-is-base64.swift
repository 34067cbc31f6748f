// Migration 2, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v2 = Migration(2, "is_base64: one pass over receipt_data", sql: #"""
        -- True when the text decodes as standard base64 once the whitespace clients add is gone.
        -- plpgsql: the whitespace is stripped once per row, and the call is cheap (a SQL function
        -- with a FROM clause would go through the slow SQL-function executor on every row).
        CREATE FUNCTION {S}.is_base64(data text) RETURNS boolean LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
        DECLARE
            b text := translate(data, E' \n\r\t', '');
        BEGIN
            RETURN length(b) > 0 AND length(b) % 4 = 0 AND b ~ '^[A-Za-z0-9+/]*={0,2}$';
        END
        $fn$;
        """#)
}
