// Migration 7, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v7 = Migration(7, "why a finding closed (closed.csv)", sql: #"""
        -- Set when a night closes the finding, from what the data then shows: granted, revoked,
        -- refund_reversed, out_of_window, input_changed (contract §6 closed.csv).
        ALTER TABLE {S}.findings ADD COLUMN closed_because text;
        """#)
}
