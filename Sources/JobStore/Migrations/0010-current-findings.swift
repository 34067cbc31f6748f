// Migration 10, frozen as the builds up to 8f8d6a6 rendered it. Never edit this text: its sha256 is
// what schema_migrations.checksum records, and a database that got another text stops the job
// (exit 78). A change to what it made is a new migration. Its earlier texts: MigrationHistory.swift.
extension Migrations {
    static let v10 = Migration(10, "the decide stage's findings and compensation spool, made here", sql: #"""
        -- The night's findings before the history takes them, and the compensation candidates
        -- waiting for the inferred order match: one row each, the report's cells in c1... in the
        -- order of its columns without first_seen (ReportFile.layout; the widest findings report,
        -- compensate.csv, has 15). Unlogged: each night empties them. Until this version the
        -- decide stage made them at run time; IF NOT EXISTS keeps those, and the columns added
        -- here are the ones they may lack. A report with more cells needs a migration that adds
        -- them (RuleBookTests compares this table with the descriptions).
        CREATE UNLOGGED TABLE IF NOT EXISTS {S}.current_findings (
            report text NOT NULL, finding_key text NOT NULL,
            c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text,
            c11 text, c12 text, c13 text);
        ALTER TABLE {S}.current_findings ADD COLUMN IF NOT EXISTS c14 text, ADD COLUMN IF NOT EXISTS c15 text;
        CREATE UNLOGGED TABLE IF NOT EXISTS {S}.compensation_spool (
            kind text NOT NULL, user_id text, product_id text, purchase_ms bigint, transaction_id text,
            environment text, exact_order_id text,
            c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text,
            c11 text, c12 text, c13 text, c14 text, c15 text);
        ALTER TABLE {S}.compensation_spool SET (autovacuum_enabled = false);
        """#)
}
