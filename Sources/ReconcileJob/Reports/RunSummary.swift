import Foundation
import Reconciliation

/// What a run did: the ledger row and `summary.json`.
public struct RunSummary: Sendable {
    public var runID: Int64 = 0
    public var asOf: EpochMillis
    public var windowDays: Int
    public var verification = VerifyCounts()
    public var counts: [String: Int] = [:]
    public var reasons: [String: [String: Int]] = [:]
    public var stageSeconds: [String: Double] = [:]
    public var exitCode: Int32?
    public var reportFolder: String?
    /// Per source relation, where every row went (contract §1 "exactly one place").
    public var tally: [String: RelationTally] = [:]
    /// When summary.json was written.
    public var writtenAt: EpochMillis?

    public init(asOf: EpochMillis, windowDays: Int) {
        self.asOf = asOf
        self.windowDays = windowDays
    }

    /// summary.json: `JSONEncoder` with sorted keys, so the same run gives the same bytes.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every field is a plain value: encoding cannot fail.
        return String(decoding: try! encoder.encode(Document(self)), as: UTF8.self)
    }

    /// The document's shape; its keys are the contract's.
    private struct Document: Encodable {
        struct Window: Encodable { var days: Int; var from: String; var to: String }
        struct Verification: Encodable {
            var candidates, sweep, requests, ok, reject, `switch`, retry, unresolved, config: Int
            /// StoreKit 2 uploads verified offline (not in `ok`/`reject`, which count App Store answers).
            var signed_ok, signed_reject: Int
        }
        var run_id: Int64
        var as_of: String
        var written_at: String?
        var window: Window
        var counts: [String: Int]
        var reasons: [String: [String: Int]]
        var verification: Verification
        var seconds: [String: Double]
        var tally: [String: [String: Int]]
        var exit_code: Int32?

        init(_ s: RunSummary) {
            run_id = s.runID
            as_of = UTC.timestamp(s.asOf)
            written_at = s.writtenAt.map(UTC.timestamp)
            window = Window(days: s.windowDays, from: UTC.timestamp(s.asOf - EpochMillis(s.windowDays) * 86_400_000),
                            to: UTC.timestamp(s.asOf))
            counts = s.counts
            reasons = s.reasons
            let v = s.verification
            verification = Verification(candidates: v.candidates, sweep: v.sweep, requests: v.requests, ok: v.ok,
                                        reject: v.rejected, switch: v.switched, retry: v.retried,
                                        unresolved: v.unresolved, config: v.config,
                                        signed_ok: v.signedVerified, signed_reject: v.signedRejected)
            seconds = s.stageSeconds
            tally = s.tally.mapValues { $0.buckets.merging(["rows": $0.rows]) { $1 } }
            exit_code = s.exitCode
        }
    }
}
