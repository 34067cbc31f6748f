// Migration 14 (issue 37). Never edit this text: its sha256 is what schema_migrations.checksum
// records, and a database that got another text stops the job (exit 78). A change to what it
// made is a new migration.
extension Migrations {
    static let v14 = Migration(14, "every app's sweeps: sweep positions and history customers per app", sql: #"""
        -- Issue 37: Apple keeps a notification history and a transaction history per app (the
        -- token's bid), so each app of IAP_BUNDLE_IDS has its own sweep positions and its own
        -- revision per customer. bundle_id '' is a row of a build before this migration, when the
        -- sweeps asked the first app of IAP_BUNDLE_IDS only: the next night adopts it for the
        -- first app (ServerAPISweeps.adoptRowsBeforeApps).
        ALTER TABLE {S}.notification_sweeps ADD COLUMN bundle_id text NOT NULL DEFAULT '';
        ALTER TABLE {S}.notification_sweeps DROP CONSTRAINT notification_sweeps_pkey;
        ALTER TABLE {S}.notification_sweeps ADD PRIMARY KEY (bundle_id, notification_type, environment);
        ALTER TABLE {S}.history_customers ADD COLUMN bundle_id text NOT NULL DEFAULT '';
        ALTER TABLE {S}.history_customers DROP CONSTRAINT history_customers_pkey;
        ALTER TABLE {S}.history_customers ADD PRIMARY KEY (user_id, bundle_id);
        -- The app a notification came from (its bundleId), for the counts per app.
        ALTER TABLE {S}.notifications ADD COLUMN bundle_id text;
        """#)
}
