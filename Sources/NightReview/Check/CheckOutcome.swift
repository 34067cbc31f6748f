import Foundation
import Logging
import Postgres
import Reconciliation

/// What `iap-reconcile check` answers: per relation, the grants without Apple's transaction id,
/// the receipts, the history, what tonight would list, and the expectations that failed;
/// `--json` prints it as it is, `lines` for people.
extension Check {
    public struct Reason: Sendable, Encodable, Equatable {
        public var reason: String
        public var rows: Int
        /// Up to five keys of rows with it, in byte order.
        public var examples: [String]
    }

    public struct Relation: Sendable, Encodable {
        public var relation: String
        public var rows: Int
        public var input_errors: Int
        public var input_errors_percent: String
        public var reasons: [Reason]
        /// Clean rows whose time column lies in the window (nil: iap_products).
        public var in_window: Int?
        /// Keys of the last published night found again, and those now holding other content.
        public var keys_compared: Int?
        public var keys_changed: Int?
    }

    public struct Count: Sendable, Encodable, Equatable {
        public var value: String
        public var rows: Int
    }

    public struct GrantsWithoutTransaction: Sendable, Encodable {
        public var rows: Int
        public var by_product: [Count]
        /// Per `--by` column: its values among those grants, most rows first.
        public var by: [String: [Count]]
    }

    public struct Receipts: Sendable, Encodable {
        /// Clean receipts submitted inside the window.
        public var in_window: Int
        /// Settled at upload (status 0 or 21006 and an active grant of the reported transaction): never sent.
        public var settled_at_upload: Int
        /// StoreKit 2 signed transactions: verified on this machine, no request.
        public var signed: Int
        /// App receipts that would go to Apple tonight (without a definitive answer yet, when the
        /// job schema is there to say so).
        public var to_verify: Int
        /// From the last published night that sent requests: requests per receipt, and per second.
        public var measured_requests_per_receipt: Double?
        public var measured_requests_per_second: Double?
        public var estimated_requests: Int?
        public var estimated_seconds: Int?
    }

    public struct History: Sendable, Encodable {
        /// The job schema is there at this build's version: the history checks ran.
        public var available: Bool
        public var note: String
        public var published_nights: Int
        public var last_published: String?
        /// The last published night's rows per report, and the median over the last 30.
        public var last_counts: [String: Int]
        public var median: [String: Double]
    }

    /// What tonight would list from what the job already knows (`CheckTonight`): rows per report
    /// by the night's rules, over every family (`exact`) or a sample of them scaled up.
    public struct Tonight: Sendable, Encodable {
        public var exact: Bool
        /// Apple original transaction ids and grants' transaction ids: about how many families there are.
        public var family_keys_about: Int
        public var keys_decided: Int
        public var families: Int
        public var reports: [String: Int]
    }

    public struct Outcome: Sendable, Encodable {
        public var as_of: String
        public var window: String
        public var source_schema: String
        public var relations: [Relation]
        public var grants_without_transaction_id: GrantsWithoutTransaction
        public var receipts: Receipts
        public var history: History
        /// Without a job schema at this build's version: nil (nothing known to decide from).
        public var tonight: Tonight?
        /// The expectations that failed (empty: exit 0).
        public var failed: [HoldReason]
        public var notes: [String]
    }

}

extension Check.Outcome {
    /// The answer for people: one block per relation, then the grants, the receipts, the history,
    /// and what failed.
    public var lines: [String] {
        var out = ["iap-reconcile check: as of \(as_of), window \(window), source schema \(source_schema)"]
        for r in relations {
            var line = "\(r.relation): \(r.rows) rows, \(r.input_errors) input errors (\(r.input_errors_percent)%)"
            if let w = r.in_window { line += ", \(w) clean rows inside the window" }
            if let c = r.keys_compared, let k = r.keys_changed { line += ", \(k) of \(c) kept keys now hold other content" }
            out.append(line)
            for reason in r.reasons {
                out.append("  \(reason.reason): \(reason.rows) (e.g. \(reason.examples.joined(separator: ", ")))")
            }
        }
        let g = grants_without_transaction_id
        out.append("grants without transaction_id: \(g.rows)")
        if g.rows > 0 {
            out.append("  by product_id: " + g.by_product.map { "\($0.value) \($0.rows)" }.joined(separator: ", "))
            for (column, counts) in g.by.sorted(by: { $0.key < $1.key }) {
                out.append("  by \(column): " + counts.map { "\($0.value) \($0.rows)" }.joined(separator: ", "))
            }
        }
        let r = receipts
        var verify =
            "receipts inside the window: \(r.in_window); settled at upload \(r.settled_at_upload), signed (verified here) "
            + "\(r.signed), to verify with Apple \(r.to_verify)"
        if let n = r.estimated_requests, let s = r.estimated_seconds, let rate = r.measured_requests_per_second {
            verify += ": about \(n) requests, \(s) s at the last night's \(rate) requests/s"
        }
        out.append(verify)
        if history.available {
            out.append("published nights: \(history.published_nights)" + (history.last_published.map { ", the last \($0)" } ?? ""))
            for report in NightHold.watchedReports {
                let last = history.last_counts[report].map(String.init) ?? "-"
                let median = history.median[report].map { NightHold.oneDecimal($0) } ?? "-"
                out.append("  \(report): \(last) rows on the last published night, median \(median)")
            }
        }
        if let t = tonight {
            let how =
                t.exact
                ? "every family, \(t.families) with a finding or not"
                : "about, from \(t.keys_decided) of about \(t.family_keys_about) family keys"
            out.append("tonight, from what the job already knows, by the night's rules (\(how); refunds.csv not estimated):")
            for report in CheckTonight.reports {
                let median = history.median[report].map { ", median \(NightHold.oneDecimal($0))" } ?? ""
                out.append("  \(report): \(t.exact ? "" : "~")\(t.reports[report] ?? 0) rows\(median)")
            }
        }
        for note in notes { out.append("note: \(note)") }
        if failed.isEmpty {
            out.append("OK: every expectation holds")
        } else {
            for f in failed { out.append("FAILED \(f.check): \(f.text)") }
        }
        return out
    }
}
