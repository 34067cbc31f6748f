// Migration 8, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v8 = Migration(8, "is_base64 counts bytes, not characters", sql: #"""
        -- Where the pattern matched, the text is ASCII, so octet_length equals length; length()
        -- walks the UTF-8 of every receipt (0.9 s of the receipts' copy at 1M rows). Where it did
        -- not match the answer is false either way. Same answers as version 4.
        CREATE OR REPLACE FUNCTION {S}.is_base64(data text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
            SELECT CASE WHEN data ~ '^[A-Za-z0-9+/]+={0,2}$' THEN octet_length(data) % 4 = 0
                        ELSE coalesce(octet_length(translate(data, E' \n\r\t', '')) % 4 = 0
                                      AND translate(data, E' \n\r\t', '') ~ '^[A-Za-z0-9+/]+={0,2}$', false) END
        $fn$;
        """#)
}
