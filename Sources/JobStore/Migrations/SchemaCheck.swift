import Foundation
import Postgres

/// What `{S}.schema_migrations` records, judged against this build's migrations. Reads only:
/// `Migrations.apply` acts on it (exit 78, or the backfill), `lookup` and `migrate --status` show it.
///
/// A recorded checksum matches when it is this build's text of that version, or one of the
/// texts the version had earlier in this repository (`Migrations.history`: a database migrated
/// by an older build of ours, which later migrations took from there). Any other checksum, or a
/// version this build does not have, is a database migrated by a different build.
///
/// A row without a checksum (recorded before there were any) is backfilled with the latest of
/// the version's texts that agrees with what the database holds: every function that text
/// creates has its body among the job schema's functions, unless a later recorded migration
/// replaced that function in place (then nothing is left to tell the texts apart). When none
/// agrees, the row is left without a checksum and reported, every run, as unknown.
package struct SchemaCheck {
    struct Row {
        let version: Int
        let name: String
        let appliedAt: String
        let checksum: String?
    }

    enum State {
        case matches
        case earlierText(ShippedText)
        case different(this: Migration)
        case notInThisBuild
        case toBackfill(ShippedText)
        case unknown
    }

    let schema: JobSchema
    let rows: [Row]
    let states: [Int: State]

    var pending: [Migration] { Migrations.all.filter { states[$0.version] == nil } }

    /// The schema is this build's: nothing recorded by another build, nothing pending.
    package var isCurrent: Bool { refusal == nil && pending.isEmpty }

    /// The newest recorded migration (0: none, no schema yet).
    package var newestRecorded: Int { rows.map(\.version).max() ?? 0 }

    /// The rows without a checksum whose text was told, with the text to record.
    var backfill: [(Int, ShippedText)] {
        rows.compactMap { if case .toBackfill(let text) = states[$0.version] { ($0.version, text) } else { nil } }
    }

    var unknownTexts: [Int] {
        rows.compactMap { if case .unknown = states[$0.version] { $0.version } else { nil } }
    }

    /// The line exit 78 prints, for the first version migrated by a different build.
    var refusal: String? {
        for row in rows {
            let what: String
            switch states[row.version] {
            case .different(let this):
                what = "checksum \(Self.short(row.checksum ?? "")) recorded, this build's \(Self.short(this.checksum))"
            case .notInThisBuild:
                what = "not one of this build's migrations, 1 to \(Migrations.latest)"
            default: continue
            }
            return "the job schema was migrated by a different build (version \(row.version): \(what)); "
                + "\(schema.name).schema_migrations and the schema were left as they are: run the build that migrated it, "
                + "or see `iap-reconcile migrate --status` and docs/contract.md, 'Migrations and their checksums'"
        }
        return nil
    }

    static func short(_ checksum: String) -> String { checksum.count > 12 ? checksum.prefix(12) + "…" : checksum }

    /// For the commands that never migrate (`lookup`, `respond`): the schema must be exactly
    /// this build's, else exit 78 with `why` saying what the command needs and what to run.
    package static func requireCurrent(_ db: PGConnection, schema: JobSchema, why: String) throws {
        let check = try read(db, schema: schema)
        if let refusal = check.refusal { throw JobError(.configuration, refusal) }
        guard check.pending.isEmpty else {
            let migrated = check.rows.map(\.version).max() ?? 0
            throw JobError(
                .configuration,
                "the job schema \(schema.name) is "
                    + (migrated == 0 ? "not there yet" : "at migration \(migrated) of \(Migrations.latest)") + ": " + why)
        }
    }

    /// The job schema's recorded migrations against this build's texts (reads only).
    package static func read(_ db: PGConnection, schema: JobSchema) throws -> SchemaCheck {
        let table = schema.name + ".schema_migrations"
        guard try db.query("SELECT to_regclass(\(table)) IS NOT NULL").value(0, 0) == "t" else {
            return SchemaCheck(schema: schema, rows: [], states: [:])
        }
        // Read-only callers may meet a table an earlier build made, without the column.
        let hasChecksum =
            try db.query(
                """
                SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(\(table)) AND attname = 'checksum' AND NOT attisdropped
                """
            ).rowCount > 0
        let rows = try db.query(
            """
            SELECT version, name, to_char(applied_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                   \(hasChecksum ? "checksum" : "NULL::text" as SQL)
            FROM \(schema.sql).schema_migrations ORDER BY version
            """
        ).rows.map { Row(version: Int($0[0] ?? "") ?? 0, name: $0[1] ?? "", appliedAt: $0[2] ?? "", checksum: $0[3]) }
        let recorded = Set(rows.map(\.version))
        let bodies = rows.contains { $0.checksum == nil } ? try liveBodies(db, schema: schema) : []
        var states: [Int: State] = [:]
        for row in rows {
            guard let this = Migrations.migration(row.version) else {
                states[row.version] = .notInThisBuild
                continue
            }
            let texts = Migrations.history[row.version] ?? []
            if let checksum = row.checksum {
                if checksum == this.checksum {
                    states[row.version] = .matches
                } else if let earlier = texts.first(where: { $0.checksum == checksum }) {
                    states[row.version] = .earlierText(earlier)
                } else {
                    states[row.version] = .different(this: this)
                }
            } else if let text = backfill(row.version, texts: texts, recorded: recorded, bodies: bodies) {
                states[row.version] = .toBackfill(text)
            } else {
                states[row.version] = .unknown
            }
        }
        return SchemaCheck(schema: schema, rows: rows, states: states)
    }

    /// The latest of `texts` that agrees with the database (see the type's comment).
    static func backfill(_ version: Int, texts: [ShippedText], recorded: Set<Int>, bodies: Set<String>) -> ShippedText? {
        let replacedLater = recorded.filter { $0 > version }.reduce(into: Set<String>()) { names, later in
            names.formUnion(Migrations.migration(later).map { Migrations.replacedFunctions(in: $0.sql) } ?? [])
        }
        return texts.last { text in
            text.functions.allSatisfy { bodies.contains($0.sha256) || replacedLater.contains($0.name) }
        }
    }

    /// sha256 of the body of every function in the job schema, the schema's name written `{S}`
    /// again, as the migrations' texts have it.
    static func liveBodies(_ db: PGConnection, schema: JobSchema) throws -> Set<String> {
        let sources = try db.query(
            """
            SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = \(schema.name)
            """
        ).rows.compactMap { $0[0] }
        return Set(sources.map { Migrations.sha256($0.replacingOccurrences(of: schema.sql.text + ".", with: "{S}.")) })
    }
}
