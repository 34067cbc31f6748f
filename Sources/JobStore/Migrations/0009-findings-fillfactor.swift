// Migration 9, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v9 = Migration(9, "room on each page of findings for the nightly update of last_seen", sql: #"""
        -- Every night updates every open finding (last_seen); with half of each page free the new
        -- version stays on its page and the key's index is not touched (a HOT update): the
        -- history's upsert 2.0-2.7 -> 0.7-1.3 s at 177k open findings. Pages written from now
        -- on keep the room; older ones gain it as vacuum frees their old versions.
        ALTER TABLE {S}.findings SET (fillfactor = 50);
        """#)
}
