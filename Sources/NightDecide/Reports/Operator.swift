import Foundation
import JobStore
import Reconciliation

/// What the operator sees from outside, on every exit, failed runs included: the
/// `<out>/last-run.json` of a `run`, and the node_exporter textfile of `--metrics-file`. Both are
/// written to a temporary file in the same folder and renamed, so a reader (the textfile
/// collector, a monitoring check) never reads half a file.
public enum RunOutcome {
    /// How a run ended: its exit code, the one line it printed when it failed, its times.
    public struct Ending: Sendable {
        public var exitCode: Int32
        public var reason: String
        public var startedAt: EpochMillis
        public var endedAt: EpochMillis
        public var command: String
        public var asOf: EpochMillis
        /// What the run got to, when it got as far as the database (nil: it failed before).
        public var summary: RunSummary?
        /// The night was held: exit 65 with its reasons, its reports under `<out>/held/`.
        public var wasHeld: Bool {
            exitCode == ExitStatus.sourceMismatch.rawValue && !(summary?.held.isEmpty ?? true) && summary?.reportFolder != nil
        }

        public init(
            exitCode: Int32, reason: String, startedAt: EpochMillis, endedAt: EpochMillis, command: String,
            asOf: EpochMillis, summary: RunSummary?
        ) {
            (self.exitCode, self.reason, self.startedAt, self.endedAt, self.command, self.asOf, self.summary) = (
                exitCode, reason, startedAt, endedAt, command, asOf, summary
            )
        }
    }

    /// `<out>/last-run.json`: run id, as_of, started_at, written_at, exit code, the one-line reason
    /// ("done" when it succeeded), seconds per stage. A failed run touches nothing in `<out>/<date>/`.
    public static func writeLastRun(_ e: Ending, out: String) throws {
        struct Document: Encodable {
            var run_id: Int64?
            var command: String
            var as_of: String
            var started_at: String
            var written_at: String
            var exit_code: Int32
            var reason: String
            var seconds: [String: Double]
            var report_folder: String?
            /// A held night: why, and where its reports wait for review.
            var held: [HoldReason]?
            var held_folder: String?
        }
        let held = e.wasHeld ? e.summary?.held : nil
        let doc = Document(
            run_id: e.summary.map(\.runID).flatMap { $0 > 0 ? $0 : nil }, command: e.command,
            as_of: UTC.timestamp(e.asOf), started_at: UTC.timestamp(e.startedAt),
            written_at: UTC.timestamp(e.endedAt), exit_code: e.exitCode, reason: e.reason,
            seconds: e.summary?.stageSeconds ?? [:], report_folder: e.exitCode == 0 ? e.summary?.reportFolder : nil,
            held: held, held_folder: held == nil ? nil : e.summary?.reportFolder)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
        try FileSystem.makeDirectories(out)
        try replaceFile(out + "/last-run.json", Array(try encoder.encode(doc)) + [0x0A])
    }

    /// Writes `bytes` to `path` through a temporary file in the same folder and a rename.
    package static func replaceFile(_ path: String, _ bytes: [UInt8]) throws {
        let temp = path + ".tmp-\(getpid())"
        do {
            try FileSystem.write(temp, bytes)
            guard rename(temp, path) == 0 else { throw FileSystem.Failure(path) }
        } catch {
            unlink(temp)
            throw error
        }
    }

    public static func writeMetrics(_ e: Ending, path: String) throws {
        let previous = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        try replaceFile(path, Array(Metrics.text(e, previous: previous).utf8))
    }
}

/// The node_exporter textfile (Prometheus text format 0.0.4): every family with HELP and TYPE,
/// names `iap_reconcile_*`, one sample per label set, label values escaped.
package enum Metrics {
    /// One metric family: its name, HELP and TYPE, and its samples.
    package struct Family {
        /// The family's name, HELP text and TYPE.
        package var name, help, type: String
        /// One value per label set.
        package var samples: [(labels: [(String, String)], value: Double)] = []

        /// A family with its samples.
        package init(name: String, help: String, type: String, samples: [(labels: [(String, String)], value: Double)] = []) {
            (self.name, self.help, self.type, self.samples) = (name, help, type, samples)
        }
    }

    static func text(_ e: RunOutcome.Ending, previous: String) -> String {
        var families: [Family] = []
        func gauge(_ name: String, _ help: String, _ samples: [(labels: [(String, String)], value: Double)]) {
            families.append(Family(name: "iap_reconcile_" + name, help: help, type: "gauge", samples: samples))
        }
        let seconds = { (ms: EpochMillis) in Double(ms) / 1000 }
        gauge("last_run_start_timestamp_seconds", "When the last run started (UNIX seconds).", [([], seconds(e.startedAt))])
        gauge("last_run_end_timestamp_seconds", "When the last run ended (UNIX seconds).", [([], seconds(e.endedAt))])
        let success = e.exitCode == 0 ? seconds(e.endedAt) : value(of: "iap_reconcile_last_success_timestamp_seconds", in: previous)
        gauge(
            "last_success_timestamp_seconds", "When a run last ended with exit 0 (UNIX seconds; 0: never seen).",
            [([], success ?? 0)])
        gauge(
            "last_run_exit_code", "Exit code of the last run (0 done, 75 temporary, 78 configuration, ...).",
            [([], Double(e.exitCode))])
        gauge("last_run_as_of_timestamp_seconds", "The --as-of of the last run (UNIX seconds).", [([], seconds(e.asOf))])
        gauge(
            "held",
            "1 when the last run was held, not published: its reports wait under <out>/held/ for review "
                + "(iap-reconcile release); 0 otherwise.", [([], e.wasHeld ? 1 : 0)])
        // Report figures only from a run that wrote its reports: a failed run's would describe files
        // that were never swapped in. What the run did (App Store, stages) is told either way.
        if let s = e.summary, e.exitCode == 0 {
            gauge(
                "report_rows", "Rows per report file of the last run that wrote its reports.",
                s.counts.sorted { $0.key < $1.key }.map { ([("report", $0.key)], Double($0.value)) })
            var reasons: [(labels: [(String, String)], value: Double)] = []
            for (report, perReason) in s.reasons.sorted(by: { $0.key < $1.key }) {
                for (reason, n) in perReason.sorted(by: { $0.key < $1.key }) {
                    reasons.append(([("report", report), ("reason", reason)], Double(n)))
                }
            }
            gauge("report_reason_rows", "Rows per report and reason (or kind) of the last run.", reasons)
            if let unresolved = s.counts["unresolved"] {
                gauge("unresolved_receipts", "Receipts still without a definitive App Store answer.", [([], Double(unresolved))])
            }
            var money: [(labels: [(String, String)], value: Double)] = []
            for (currency, kinds) in s.money.sorted(by: { $0.key < $1.key }) {
                for (kind, milli) in kinds.sorted(by: { $0.key < $1.key }) {
                    money.append(([("currency", currency), ("kind", kind)], Double(milli) / 1000))
                }
            }
            gauge(
                "money",
                "Money in the last reports per currency: owed, claw_back, refunded, refunded_still_granted, refund_declined; Apple's proceeds_owed, proceeds_claw_back, proceeds_refunded, proceeds_refunded_still_granted.",
                money)
            let f = s.refundRequests
            gauge(
                "refund_request_outcomes", "Apple's refund requests of the refund window per outcome (consumption_requests.csv).",
                [("refunded", f.refunded), ("declined", f.declined), ("pending", f.pending), ("no_outcome", f.no_outcome)]
                    .map { ([("outcome", $0.0)], Double($0.1)) })
        }
        if let s = e.summary {
            let v = s.verification
            gauge(
                "app_store_answers", "App Store answers of the last run per class.",
                [
                    ([("class", "ok")], Double(v.ok)), ([("class", "reject")], Double(v.rejected)),
                    ([("class", "switch")], Double(v.switched)), ([("class", "retry")], Double(v.retried)),
                    ([("class", "unresolved")], Double(v.unresolved)), ([("class", "config")], Double(v.config)),
                    ([("class", "rate_limited")], Double(v.rateLimited + (s.sweeps?.pager.rateLimited ?? 0))),
                ])
            var requests: [(labels: [(String, String)], value: Double)] = [
                ([("api", "verify_receipt")], Double(v.requests - v.apiRequests))
            ]
            requests.append(([("api", "transaction_info")], Double(v.apiRequests)))
            for (endpoint, n) in (s.sweeps?.pager.requests ?? [:]).sorted(by: { $0.key < $1.key }) where endpoint != "transaction_info" {
                requests.append(([("api", endpoint)], Double(n)))
            }
            if let sales = s.salesReports { requests.append(([("api", "sales_reports")], Double(sales.requests))) }
            gauge("app_store_requests", "Requests sent to the App Store in the last run, per API.", requests)
            if let sales = s.salesReports {
                gauge(
                    "sales_report_days", "Days of Apple's daily sales report in the last run's window, by what became of them.",
                    [
                        ("held_before", sales.heldBefore), ("held", sales.held.count), ("empty", sales.empty.count),
                        ("not_yet_published", sales.notYetPublished.count), ("error", sales.errors.count),
                        ("not_asked", sales.notAsked.count),
                    ].map { ([("outcome", $0.0)], Double($0.1)) })
                gauge(
                    "sales_report_skipped",
                    "1 when the last run skipped Apple's sales reports (the team key refused, "
                        + "App Store Connect unreachable).", [([], sales.skipped == nil ? 0 : 1)])
            }
            let apps = s.apps.keys.filter { $0 != RunSummary.otherApp }.sorted()
            gauge(
                "app_key_refused",
                "1 for an app of IAP_BUNDLE_IDS whose In-App Purchase key Apple refused in the last run "
                    + "(a 401 confirmed with a fresh token): its sweeps were not done.",
                apps.map { ([("app", $0)], s.apps[$0]!.refused ? 1 : 0) })
            gauge(
                "app_store_app_requests", "App Store Server API requests of the last run per app and endpoint.",
                apps.flatMap { app in
                    s.apps[app]!.requests.sorted { $0.key < $1.key }.map { ([("app", app), ("api", $0.key)], Double($0.value)) }
                })
            if let play = s.googlePlay {
                gauge(
                    "play_skipped",
                    "1 when the last run skipped Google Play (the service account refused, Google unreachable): its "
                        + "tokens wait for the next night; the App Store's reports were written.",
                    [([], play.skipped == nil && s.googlePlayVoided?.skipped == nil ? 0 : 1)])
                gauge(
                    "play_acknowledge_next_deadline_timestamp_seconds",
                    "The nearest acknowledge_by of acknowledge.csv not passed yet (UNIX seconds; 0: none): Google refunds a "
                        + "purchase nobody acknowledged by then.",
                    [([], s.playAcknowledgeNext.map(seconds) ?? 0)])
            }
            if let voided = s.googlePlayVoided {
                gauge(
                    "play_voided_position_age_seconds",
                    "Per package, the age of the position of Google's voided purchases sweep after the last run (seconds; "
                        + "Google lists 30 days back).",
                    voided.positionAgeSeconds.sorted { $0.key < $1.key }.map { ([("package", $0.key)], $0.value) })
            }
            gauge(
                "stage_seconds", "Seconds per stage of the last run.",
                s.stageSeconds.sorted { $0.key < $1.key }.map { ([("stage", $0.key)], $0.value) })
        }
        return render(families)
    }

    /// The families as the text format has them (empty families left out).
    package static func render(_ families: [Family]) -> String {
        var out = ""
        for f in families where !f.samples.isEmpty {
            out += "# HELP \(f.name) \(f.help)\n# TYPE \(f.name) \(f.type)\n"
            for sample in f.samples {
                let labels =
                    sample.labels.isEmpty
                    ? ""
                    : "{" + sample.labels.map { "\($0.0)=\"\(escape($0.1))\"" }.joined(separator: ",") + "}"
                out += "\(f.name)\(labels) \(format(sample.value))\n"
            }
        }
        return out
    }

    /// The value of an unlabelled sample in an earlier file.
    package static func value(of name: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.dropFirst(name.count + 1))
        }
        return nil
    }

    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    static func format(_ v: Double) -> String {
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}
