import Foundation
import Logging
import NightLearn
import Postgres
import Reconciliation

/// summary.json's `money`: the sums of the report columns themselves, per currency, so they
/// reconcile with the CSV files by construction (milliunits, exact).
struct MoneyTotals: Sendable {
    private(set) var totals: [String: [String: Int64]] = [:]

    init(totals: [String: [String: Int64]] = [:]) { self.totals = totals }

    mutating func merge(_ other: MoneyTotals) {
        for (currency, kinds) in other.totals {
            for (kind, m) in kinds { totals[currency, default: [:]][kind, default: 0] += m }
        }
    }

    /// One CSV row's money, as its report's description says (`ReportLayout.addMoney`).
    mutating func add(_ layout: ReportLayout, _ cells: [String]) { layout.addMoney(cells, to: &totals) }
}

/// The short table printed at the end of a run.
public enum RunReport {
    public static func text(_ s: RunSummary) -> String {
        var lines: [String] = []
        lines.append("iap-reconcile: run \(s.runID) for \(UTC.date(s.asOf)) done")
        let v = s.verification
        lines.append(
            "  verification          \(v.candidates) unresolved + \(v.sweep) sweep: \(v.ok) ok, \(v.rejected) rejected, \(v.unresolved) still unresolved (\(v.requests) requests); signed transactions: \(v.signedVerified) valid, \(v.signedRejected) rejected"
        )
        if s.receiptsMode != "verify-receipt" {
            func listed(_ counts: [String: Int]) -> String {
                counts.isEmpty ? "" : " (" + counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
            }
            let rejected = v.receiptsOfflineRejected.values.reduce(0, +), asked = v.receiptsToVerifyReceipt.values.reduce(0, +)
            lines.append(
                "  app receipts offline  \(v.receiptsOffline) verified, \(rejected) rejected\(listed(v.receiptsOfflineRejected)), "
                    + "\(v.receiptsOfflineUnsettled) left unresolved; \(asked) sent to verifyReceipt\(listed(v.receiptsToVerifyReceipt)) "
                    + "[--receipts \(s.receiptsMode)]")
        }
        for file in [
            "compensate", "duplicate_grants", "clawback", "refunds", "unattributed", "closed", "unresolved",
            "input_errors", "consumption_requests",
        ] {
            var line = "  " + file.padding(toLength: 22, withPad: " ", startingAt: 0) + String(s.counts[file] ?? 0)
            if let r = s.reasons[file], !r.isEmpty {
                line += "  (" + r.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
            }
            lines.append(line)
        }
        // Per app (with IAP_BUNDLE_IDS): requests sent, findings with a product of the app.
        for (app, f) in s.apps.sorted(by: { $0.key < $1.key }) {
            let requests = f.requests.values.reduce(0, +)
            var line = "  app " + app.padding(toLength: 18, withPad: " ", startingAt: 0) + "\(requests) requests"
            if !f.requests.isEmpty {
                line += " (" + f.requests.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
            }
            let rows = ["compensate", "duplicate_grants", "clawback", "refunds", "unattributed"].compactMap { file in
                f.counts[file].map { "\(file) \($0)" }
            }
            if !rows.isEmpty { line += "; " + rows.joined(separator: ", ") }
            if f.refused { line += "; key refused (HTTP 401): not swept" }
            lines.append(line)
        }
        // Where every source row went (summary.json "tally"), buckets in the order they are tried.
        for relation in SourceRelation.allCases {
            guard let t = s.tally[relation.rawValue] else { continue }
            let named = Conservation.buckets[relation] ?? []
            let parts = (named + t.buckets.keys.filter { !named.contains($0) }.sorted()).map { "\($0) \(t.buckets[$0] ?? 0)" }
            lines.append(
                "  " + relation.rawValue.padding(toLength: 22, withPad: " ", startingAt: 0)
                    + "\(t.rows) rows = " + parts.joined(separator: " + "))
        }
        if let folder = s.reportFolder { lines.append("  reports in            \(folder)/") }
        return lines.joined(separator: "\n") + "\n"
    }
}
