import Foundation
import Postgres

/// `iap-reconcile migrate --status`: the job schema's migrations, applied and pending, each with
/// its checksum and whether it is this build's text. For operators; reads only.
public enum MigrationStatus {
    /// The lines to print on stdout.
    public static func report(settings: DatabaseSettings) throws -> String {
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        let check = try Result { try SchemaCheck.read(db, schema: settings.jobSchema) }
            .mapError { JobError.from($0, doing: "reading the job schema's migrations") }.get()
        return text(check)
    }

    static func text(_ check: SchemaCheck) -> String {
        let pending = check.pending
        var rows: [(cells: [String], detail: String?)] = []
        for row in check.rows {
            let (state, detail): (String, String?)
            switch check.states[row.version] {
            case .matches?: (state, detail) = ("matches", nil)
            case .earlierText(let text)?: (state, detail) = ("earlier", "an earlier text of this version, shipped by \(text.shipped)")
            case .different(let this)?:
                (state, detail) = ("DIFFERENT", "this build's text is \(this.checksum): migrate and run stop with exit 78")
            case .notInThisBuild?:
                (state, detail) = ("NOT-IN-BUILD", "this build has migrations 1 to \(Migrations.latest): migrate and run stop with exit 78")
            case .toBackfill(let text)?:
                (state, detail) = ("backfill", "no checksum recorded yet: the next migrate or run records \(text.checksum)")
            case .unknown?, nil:
                (state, detail) = (
                    "UNKNOWN",
                    "no checksum, and none of the texts this version has had matches the database "
                        + "(docs/contract.md, 'Migrations and their checksums')"
                )
            }
            rows.append(([String(row.version), row.appliedAt, row.checksum ?? "-", state, row.name], detail))
        }
        for migration in pending {
            rows.append(([String(migration.version), "-", migration.checksum, "pending", migration.name], nil))
        }
        let header = ["version", "applied_at", "checksum (sha256)", "state", "name"]
        let widths = (0..<4).map { column in ([header] + rows.map(\.cells)).map { $0[column].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in i < 4 ? cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) : cell }
                .joined(separator: "  ")
        }
        var lines = [
            "job schema \(check.schema.name): \(check.rows.count) migrations recorded, \(pending.count) pending "
                + "(this build has 1 to \(Migrations.latest))", line(header),
        ]
        for row in rows {
            lines.append(line(row.cells))
            if let detail = row.detail { lines.append("    " + detail) }
        }
        return lines.joined(separator: "\n")
    }
}
