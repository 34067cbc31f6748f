// Migration 18. Never edit this text: its sha256 is what schema_migrations.checksum records, and a
// database that got another text stops the job (exit 78). A change to what it made is a new
// migration.
extension Migrations {
    static let v18 = Migration(18, "held nights: why a night was held, its release, the findings history it waits to apply, key digests", sql: #"""
        -- A night that looks wrong is held: its reports go to <out>/held/<date>/ and it changes no
        -- findings history until a person releases it. held: the reasons (empty or NULL: not held).
        -- released_*: `iap-reconcile release`, who (SUDO_USER, else USER), when and why. A run is
        -- published when it ended 0 or was released.
        ALTER TABLE {S}.runs
            ADD COLUMN held jsonb,
            ADD COLUMN released_at timestamptz,
            ADD COLUMN released_by text,
            ADD COLUMN release_note text;
        -- The findings history a held night would have written, applied by its release: a row per
        -- finding listed that night (closed_on NULL), and a row per open finding the night closed
        -- (closed_on its date, and why).
        CREATE TABLE {S}.held_findings (
            run_id          bigint NOT NULL,
            finding_key     text NOT NULL,
            report          text NOT NULL,
            night           date NOT NULL,
            closed_on       date,
            closed_because  text,
            PRIMARY KEY (run_id, finding_key)
        );
        -- A sample of the keys of the last published night and a digest of what each held (an
        -- order's user and product, a receipt upload's user and time, a grant's user and product):
        -- a night whose keys now hold other content (ids made by row_number()) is held. Every key
        -- of a relation up to 20,000 rows, else those whose hash falls in a fixed share.
        CREATE TABLE {S}.key_digests (
            relation  text NOT NULL,
            key       text NOT NULL,
            digest    bigint NOT NULL,
            PRIMARY KEY (relation, key)
        );
        -- A held night's sample, which its release puts in place of key_digests.
        CREATE TABLE {S}.held_key_digests (
            run_id    bigint NOT NULL,
            relation  text NOT NULL,
            key       text NOT NULL,
            digest    bigint NOT NULL,
            PRIMARY KEY (run_id, relation, key)
        );
        """#)
}
