import Reconciliation

// What summary.html shows, as plain values: the lead fills them from the run summary and from
// the job's own history tables, so this module needs no database and renders in a unit test.

/// The page's language (`--report-language en|zh`).
public enum Language: String, CaseIterable, Sendable {
    case en, zh
}

extension SummaryPage {
    /// One night's figures. Report names are the CSV names without `.csv` (`compensate`), as
    /// summary.json's `counts` has them.
    public struct Input: Sendable {
        /// The night's `as_of`, as summary.json writes it (`2026-11-21T03:00:00Z`).
        public var asOf: String
        public var runID: Int64
        /// Rows per report (summary.json `counts`).
        public var counts: [String: Int]
        /// Rows per report per reason or kind (summary.json `reasons`).
        public var reasons: [String: [String: Int]]
        /// Per currency, per kind (`owed`, `claw_back`, `refunded`, `refunded_still_granted`, Apple's
        /// `proceeds_…` in the proceeds currency): a
        /// decimal in currency units (summary.json `money`). Shown as given, never recomputed.
        public var money: [String: [String: String]]
        /// The open finding seen first, if any.
        public var oldestOpen: OldestFinding?
        /// Up to 30 nights, any order; the page sorts them and keeps the last 30.
        public var history: [Night]
        /// `as_of` in the report time zone (`--report-timezone`), shown beside UTC; nil: UTC only.
        public var asOfInZone: (zone: String, time: String)?
        /// The refund defense funnel (summary.json `refund_requests`): figure name → value as
        /// shown (`requests`, `answered_in_time`, …, rates as decimals); empty: no request.
        public var refundRequests: [String: String] = [:]
        /// Per app of IAP_BUNDLE_IDS (summary.json `apps`); the page shows them from two apps on.
        public var apps: [App] = []
        /// Per store (summary.json `stores`, with Google Play configured): `bundleID` the store's
        /// name (`app_store`, `google_play`), `requests` unused.
        public var stores: [App] = []
        /// Apple's daily sales reports against what the job learned (summary.json `coverage`); nil:
        /// not set up (the ASC_* variables).
        /// Why the night was held (docs/contract.md, "Held nights"); empty: published. The page
        /// then opens with them.
        public var held: [String] = []
        public var coverage: SalesCoverage?

        public init(asOf: String, runID: Int64, counts: [String: Int], reasons: [String: [String: Int]] = [:],
                    money: [String: [String: String]] = [:], oldestOpen: OldestFinding? = nil, history: [Night] = []) {
            self.asOf = asOf
            self.runID = runID
            self.counts = counts
            self.reasons = reasons
            self.money = money
            self.oldestOpen = oldestOpen
            self.history = history
        }
    }

    /// The open finding with the earliest `first_seen`: how long the oldest piece of work waits.
    /// One app's figures: rows per report, money per currency and kind (as summary.json has
    /// them), requests sent, whether Apple refused its key tonight.
    public struct App: Sendable, Equatable {
        public var bundleID: String
        public var counts: [String: Int]
        public var money: [String: [String: String]]
        public var requests: Int
        public var refused: Bool
        public init(bundleID: String, counts: [String: Int], money: [String: [String: String]], requests: Int, refused: Bool) {
            (self.bundleID, self.counts, self.money, self.requests, self.refused) = (bundleID, counts, money, requests, refused)
        }
    }

    public struct OldestFinding: Sendable, Equatable {
        public var report: String
        public var key: String
        /// UTC date, `YYYY-MM-DD`.
        public var firstSeen: String

        public init(report: String, key: String, firstSeen: String) {
            self.report = report
            self.key = key
            self.firstSeen = firstSeen
        }
    }

    /// One report's findings on one night.
    public struct Tally: Sendable, Equatable {
        /// Findings whose `first_seen` is this night.
        public var opened: Int
        /// Findings whose `closed_on` is this night.
        public var closed: Int
        /// Findings open at the end of this night: seen on or before it, not closed by it.
        public var stillOpen: Int

        public init(opened: Int = 0, closed: Int = 0, stillOpen: Int = 0) {
            self.opened = opened
            self.closed = closed
            self.stillOpen = stillOpen
        }
    }

    /// One night of the history: its UTC date (`YYYY-MM-DD`) and a tally per report.
    public struct Night: Sendable, Equatable {
        public var date: String
        public var reports: [String: Tally]

        public init(date: String, reports: [String: Tally]) {
            self.date = date
            self.reports = reports
        }
    }

    /// Builds the history from findings one at a time, so memory is one tally per night and
    /// report, however many findings the table holds. Fill it from the job's tables, e.g.
    ///
    ///     nights:   SELECT DISTINCT to_char(as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM runs
    ///               WHERE exit_code = 0 ORDER BY 1 DESC LIMIT 30
    ///     findings: SELECT report, first_seen, closed_on FROM findings
    ///               WHERE first_seen <= $last AND (closed_on IS NULL OR closed_on >= $first)
    ///
    /// (streamed, `$first`/`$last` the oldest and newest night), calling `add` per row.
    public struct HistoryTally: Sendable {
        public private(set) var dates: [String]
        private var tallies: [[String: Tally]]

        /// `nights`: the UTC dates of the runs to show; the last 30 distinct dates are kept.
        public init(nights: [String]) {
            dates = Array(Set(nights).sorted().suffix(SummaryPage.nights))
            tallies = Array(repeating: [:], count: dates.count)
        }

        /// One finding. `report` may carry `.csv` (as `findings.report` does); dates are UTC
        /// `YYYY-MM-DD`, which compare as text in the order of time.
        public mutating func add(report: String, firstSeen: String, closedOn: String?) {
            let name = report.hasSuffix(".csv") ? String(report.dropLast(4)) : report
            for (i, date) in dates.enumerated() {
                let opened = firstSeen == date
                let closed = closedOn == date
                let open = firstSeen <= date && (closedOn.map { $0 > date } ?? true)
                guard opened || closed || open else { continue }
                var t = tallies[i][name, default: Tally()]
                if opened { t.opened += 1 }
                if closed { t.closed += 1 }
                if open { t.stillOpen += 1 }
                tallies[i][name] = t
            }
        }

        public var nights: [Night] {
            zip(dates, tallies).map { Night(date: $0, reports: $1) }
        }
    }
}
