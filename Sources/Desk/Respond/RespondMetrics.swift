// `respond --metrics-file`: respond's own node_exporter textfile, beside the night's
// (RunOutcome.writeMetrics), in the same format and through the same atomic replace.

import Foundation
import NightDecide
import Reconciliation

extension RunOutcome {
    /// `respond --metrics-file`: its own textfile (the night's is another), on every exit.
    /// `result` is nil when the run failed before it counted anything.
    public static func writeRespondMetrics(exitCode: Int32, endedAt: EpochMillis, result: RespondResult?, path: String) throws {
        let previous = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var families: [Metrics.Family] = []
        func gauge(_ name: String, _ help: String, _ samples: [(labels: [(String, String)], value: Double)]) {
            families.append(Metrics.Family(name: "iap_reconcile_respond_" + name, help: help, type: "gauge", samples: samples))
        }
        let end = Double(endedAt) / 1000
        gauge("last_run_end_timestamp_seconds", "When the last respond ended (UNIX seconds).", [([], end)])
        gauge(
            "last_run_exit_code", "Exit code of the last respond (0 done, 75 temporary, 78 configuration, ...).",
            [([], Double(exitCode))])
        let success = exitCode == 0 ? end : Metrics.value(of: "iap_reconcile_respond_last_success_timestamp_seconds", in: previous)
        gauge(
            "last_success_timestamp_seconds", "When a respond last ended with exit 0 (UNIX seconds; 0: never seen).",
            [([], success ?? 0)])
        if let r = result {
            gauge(
                "requests", "Refund requests stored, per answer (sent, would_send, no_consent, expired, ...).",
                r.requests_by_answer.sorted { $0.key < $1.key }.map { ([("answer", $0.key)], Double($0.value)) })
            gauge(
                "oldest_unanswered_age_seconds",
                "Age of the oldest request still inside its 12 hours and not answered (0: none). Alert above 6 hours.",
                [([], r.oldest_unanswered_age_seconds)])
            gauge("sent", "Answers Apple accepted in the last respond.", [([], Double(r.decided.filter { $0.state == "sent" }.count))])
        }
        try RunOutcome.replaceFile(path, Array(Metrics.render(families).utf8))
    }
}
