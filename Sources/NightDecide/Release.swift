import Foundation
import JobStore
import NightLearn
import Postgres
import Reconciliation

/// `iap-reconcile release DATE --note TEXT`: a person checked a held night and publishes it. Its
/// findings history is applied as the night would have written it, the run is marked released
/// (who: `SUDO_USER`, else `USER`; when; the note), and `<out>/held/<date>/` is renamed into
/// `<out>/<date>/`. Under the night's lock, so no night runs meanwhile. Safe to run again: a
/// release stopped after the database part moves the folder on the next try.
public enum Release {
    public struct Outcome: Sendable {
        public var runID: Int64
        public var folder: String
        /// The database part was done by an earlier, interrupted release.
        public var alreadyApplied: Bool
    }

    public static func run(settings: JobSettings, day: String, note: String, by: String) throws -> Outcome {
        guard day.count == 10, let parsed = UTC.parse(day), UTC.date(parsed) == day else {
            throw JobError(.usage, "release: '\(day.prefix(40))' is not a date (YYYY-MM-DD, the UTC date of <out>/held/<date>/)")
        }
        let note = note.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !note.isEmpty else { throw JobError(.usage, "release: --note must say why the night is right to publish") }
        guard note.utf8.count <= 2000, !note.utf8.contains(0) else {
            throw JobError(.usage, "release: --note must be at most 2000 bytes of text")
        }
        if let url = settings.databaseURL {
            do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
                throw JobError(
                    .configuration,
                    "DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                        + "fix it in the environment (see docs/contract.md, 'Environment variables')")
            }
        }
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        do {
            return try release(db, settings: settings, day: day, note: note, by: by)
        } catch {
            throw JobError.from(error, doing: "release")
        }
    }

    private static func release(
        _ db: PGConnection, settings: JobSettings, day: String, note: String,
        by: String
    ) throws -> Outcome {
        let S = settings.jobSchema.sql
        try SchemaCheck.requireCurrent(
            db, schema: settings.jobSchema,
            why: "release applies a held night's history as this build keeps it; run `iap-reconcile migrate` first")
        try Night.acquireLock(db, settings: settings)
        // The night of that date: its last run decides.
        let last = try db.query(
            """
            SELECT run_id, coalesce(jsonb_array_length(held), 0) > 0, released_at IS NOT NULL, exit_code
            FROM \(S).runs WHERE command = 'run' AND (as_of AT TIME ZONE 'UTC')::date = \(day)::date
            ORDER BY run_id DESC LIMIT 1
            """)
        guard last.rowCount > 0, let runID = last.value(0, 0).flatMap({ Int64($0) }) else {
            throw JobError(.usage, "release: no night of \(day) in the job schema \(settings.jobSchema.name)")
        }
        guard last.value(0, 1) == "t" else {
            throw JobError(
                .usage,
                "release: the night of \(day) (run \(runID), exit \(last.value(0, 3) ?? "none")) was not held: "
                    + "nothing to release")
        }
        let released = last.value(0, 2) == "t"
        let newer = try db.query(
            """
            SELECT to_char(max((as_of AT TIME ZONE 'UTC')::date), 'YYYY-MM-DD') FROM \(S).runs
            WHERE \(HeldNight.publishedSQL) AND run_id <> \(runID) AND (as_of AT TIME ZONE 'UTC')::date > \(day)::date
            """)
        if let later = newer.value(0, 0) {
            throw JobError(
                .usage,
                "release: a later night (\(later)) is already published; a held night older than the "
                    + "newest published one is not released (its history would be written over a later night's): run \(day) again "
                    + "if it must be published")
        }
        let folder = ReportWriter.Folder(out: settings.out, day: day)
        let heldThere = FileSystem.exists(folder.held)
        if !released {
            guard heldThere else {
                throw JobError(.usage, "release: the held night's reports are not in \(folder.held)/ (is --out the night's?)")
            }
            try db.transaction {
                try HeldNight.applyRelease(db, schema: settings.jobSchema, runID: runID, by: by, note: note)
            }
        }
        if heldThere {
            try markReleased(folder.held + "/summary.json", by: by, note: note)
            do {
                try FileSystem.replaceDirectory(folder.final, with: folder.held, aside: folder.aside)
            } catch let e as FileSystem.Failure {
                throw JobError(
                    .cannotWrite,
                    "release: \(e.path) cannot be written: \(e.reason); the history is applied, "
                        + "run release again once the folder is writable")
            }
        } else if !FileSystem.exists(folder.final) {
            throw JobError(
                .cannotWrite,
                "release: run \(runID) is released but its reports are neither in \(folder.held)/ "
                    + "nor in \(folder.final)/")
        }
        return Outcome(runID: runID, folder: folder.final, alreadyApplied: released)
    }

    /// summary.json of the night gains `"released": {"at", "by", "note"}` (its other bytes as the
    /// night wrote them). Not twice.
    static func markReleased(_ path: String, by: String, note: String) throws {
        guard var text = try? String(contentsOfFile: path, encoding: .utf8) else { return }
        guard !text.contains("\"released\":{") else { return }
        struct Released: Encodable { var at: String; var by: String; var note: String }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let value = Released(at: UTC.timestamp(EpochMillis(Date().timeIntervalSince1970 * 1000)), by: by, note: note)
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        while text.last == "\n" || text.last == " " { text.removeLast() }
        guard text.last == "}" else { return }
        text.removeLast()
        text += ",\"released\":" + json + "}\n"
        do {
            try FileSystem.write(path, Array(text.utf8))
        } catch let e as FileSystem.Failure {
            throw JobError(.cannotWrite, "release: \(e.path) cannot be written: \(e.reason)")
        }
    }

    /// Who releases: the person behind sudo, else the login.
    public static func login(_ environment: [String: String]) -> String {
        for name in ["SUDO_USER", "USER", "LOGNAME"] {
            if let v = environment[name]?.trimmingCharacters(in: .whitespaces), !v.isEmpty { return String(v.prefix(100)) }
        }
        return "unknown"
    }
}
