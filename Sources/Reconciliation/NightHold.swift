// A night that looks wrong is held, not published. Customer service pays out from compensate.csv
// and finance claws back from clawback.csv, so a list made from a wrong mapping (a grants view
// without Apple's transaction id lists every purchase as unpaid goods) must never reach them as
// an ordinary night. Before the night publishes, it compares what it read and decided with its
// own thresholds and with the last nights that were published; each rule below names a mistake
// of mapping that makes a list implausible. A held night is reviewed and released by a person.

/// The thresholds of the rules (docs/contract.md, "Held nights"; each is an option of `run`).
public struct HoldThresholds: Sendable, Equatable {
    /// Input errors above this percent of a relation's rows hold the night (`--hold-input-errors-percent`).
    public var inputErrorsPercent: Double = 5
    /// A relation, or a report, of fewer rows than this is never held by a percent or a median, and
    /// a last published night of fewer rows is never the measure of a shrink (`--hold-min-rows`): a
    /// shop's first hundred rows say nothing yet.
    public var minRows = 100
    /// compensate or clawback rows above this percent of the window's orders (`--hold-findings-percent`).
    public var findingsPercent: Double = 25
    /// compensate or clawback rows above this many times the median of the published nights
    /// (`--hold-median-times`), once there are `medianNights` of them (`--hold-median-nights`).
    public var medianTimes: Double = 5
    public var medianNights = 7
    /// A relation's rows, or its rows inside the window, below this percent of the last published
    /// night's (`--hold-rows-percent`): a view that lost its rows, a time column read in the wrong unit.
    public var rowsPercent: Double = 20
    /// Keys of the last published night now holding other content (an order id now another user's,
    /// a receipt id now another upload) above this percent of the keys compared (`--hold-keys-percent`):
    /// ids made by `row_number()`, or reused.
    public var keysPercent: Double = 1
    /// `--first-night hold`: the first night of a job schema (no night published yet) is held.
    public var holdFirstNight = false

    /// How many published nights the median is taken over (the last ones).
    public static let medianOver = 30

    public init() {}
}

/// What a night read and decided, as the rules compare it.
public struct NightFigures: Sendable, Equatable {
    public struct Relation: Sendable, Equatable {
        public var rows: Int
        public var inputErrors: Int
        /// Clean rows whose time column lies inside the window (nil: the relation has none, as iap_products).
        public var inWindow: Int?
        /// Keys of the last published night's sample found again tonight, and how many of them
        /// now hold other content (nil: not compared, as on a first night or for iap_products).
        public var keysCompared: Int?
        public var keysChanged: Int?
        public init(rows: Int, inputErrors: Int, inWindow: Int? = nil, keysCompared: Int? = nil, keysChanged: Int? = nil) {
            self.rows = rows
            self.inputErrors = inputErrors
            self.inWindow = inWindow
            self.keysCompared = keysCompared
            self.keysChanged = keysChanged
        }
    }
    /// Per source relation (`iap_orders`, …).
    public var relations: [String: Relation]
    /// Rows per report (`compensate`, `clawback`, …).
    public var reports: [String: Int]
    public init(relations: [String: Relation], reports: [String: Int]) {
        self.relations = relations
        self.reports = reports
    }
}

/// What the published nights say: the last one's figures, and the rows of each report over the
/// last `HoldThresholds.medianOver` of them (newest first).
public struct PublishedNights: Sendable, Equatable {
    public var last: NightFigures?
    public var reportRows: [String: [Int]]
    /// Nights published in all (0: tonight is the job schema's first).
    public var count: Int
    public init(last: NightFigures? = nil, reportRows: [String: [Int]] = [:], count: Int = 0) {
        self.last = last
        self.reportRows = reportRows
        self.count = count
    }
}

/// One reason a night is held: the rule (`check`), what it is about (a relation or a report),
/// and the sentence a person reads.
public struct HoldReason: Sendable, Equatable, Codable {
    public var check: String
    public var subject: String
    public var text: String
    public init(check: String, subject: String, text: String) {
        self.check = check
        self.subject = subject
        self.text = text
    }
}

public enum NightHold {
    /// The reports people pay out or claw back from, which the share and median rules watch.
    public static let watchedReports = ["compensate", "clawback"]
    /// The relation whose rows inside the window are "the window's orders".
    public static let orders = "iap_orders"
    /// Before a relation's or report's name, the figures of Google Play's rows alone, of a
    /// two-store shop (`google_play iap_orders`, `google_play compensate`): a Play mapping that
    /// breaks is held even where the App Store's rows are most of the shop.
    public static let playPrefix = "google_play "

    /// Every reason to hold tonight, in a fixed order (relations, then reports, by name); empty:
    /// publish.
    public static func reasons(tonight: NightFigures, published: PublishedNights,
                               thresholds t: HoldThresholds) -> [HoldReason] {
        var reasons: [HoldReason] = []
        if t.holdFirstNight && published.count == 0 {
            reasons.append(HoldReason(check: "first_night", subject: "",
                                      text: "the first night of this job schema, held for review (--first-night hold)"))
        }
        for (name, r) in tonight.relations.sorted(by: { $0.key < $1.key }) {
            if r.rows >= t.minRows, above(r.inputErrors, percent: t.inputErrorsPercent, of: r.rows) {
                reasons.append(HoldReason(check: "input_errors", subject: name, text: """
                    \(name): \(r.inputErrors) of its \(r.rows) rows are input errors (\(percent(r.inputErrors, of: r.rows))), \
                    above \(number(t.inputErrorsPercent))% (--hold-input-errors-percent); see input_errors.csv
                    """))
            }
            if let compared = r.keysCompared, let changed = r.keysChanged, compared >= t.minRows,
               above(changed, percent: t.keysPercent, of: compared) {
                reasons.append(HoldReason(check: "keys_changed", subject: name, text: """
                    \(name): \(changed) of \(compared) keys of the last published night now hold other content \
                    (\(percent(changed, of: compared))), above \(number(t.keysPercent))% (--hold-keys-percent): \
                    ids made by row_number(), or reused?
                    """))
            }
            guard let last = published.last?.relations[name] else { continue }
            if last.rows >= t.minRows, below(r.rows, percent: t.rowsPercent, of: last.rows) {
                reasons.append(HoldReason(check: "rows_shrank", subject: name, text: """
                    \(name): \(r.rows) rows, below \(number(t.rowsPercent))% of the last published night's \(last.rows) \
                    (--hold-rows-percent): a view that lost its rows?
                    """))
            }
            if let now = r.inWindow, let before = last.inWindow, before >= t.minRows,
               below(now, percent: t.rowsPercent, of: before) {
                reasons.append(HoldReason(check: "window_rows_shrank", subject: name, text: """
                    \(name): \(now) rows inside the window, below \(number(t.rowsPercent))% of the last published \
                    night's \(before) (--hold-rows-percent): a time column read in the wrong unit, or a filter?
                    """))
            }
        }
        for prefix in ["", playPrefix] {
            reasons += findingsReasons(prefix: prefix, tonight: tonight, published: published, thresholds: t)
        }
        return reasons
    }

    /// The watched reports' rules, for the whole night (`prefix` empty) or Google Play's rows alone.
    static func findingsReasons(prefix: String, tonight: NightFigures, published: PublishedNights,
                                thresholds t: HoldThresholds) -> [HoldReason] {
        var reasons: [HoldReason] = []
        let windowOrders = tonight.relations[prefix + orders]?.inWindow
        for report in watchedReports.map({ prefix + $0 }) {
            let n = tonight.reports[report] ?? 0
            guard n >= t.minRows else { continue }
            if let windowOrders, above(n, percent: t.findingsPercent, of: windowOrders) {
                let share = windowOrders == 0 ? "while the window holds no order"
                    : "\(percent(n, of: windowOrders)) of the window's \(windowOrders) orders"
                reasons.append(HoldReason(check: "findings_share", subject: report, text: """
                    \(report): \(n) rows, \(share), above \(number(t.findingsPercent))% of them (--hold-findings-percent)
                    """))
            }
            let history = Array((published.reportRows[report] ?? []).prefix(HoldThresholds.medianOver))
            if history.count >= t.medianNights, let median = median(history), Double(n) > t.medianTimes * median {
                reasons.append(HoldReason(check: "findings_median", subject: report, text: """
                    \(report): \(n) rows, above \(number(t.medianTimes)) times the median \(number(median)) of the last \
                    \(history.count) published nights (--hold-median-times)
                    """))
            }
        }
        return reasons
    }

    /// `part` is strictly above `percent`% of `whole` (exact, in integers scaled by 100).
    static func above(_ part: Int, percent: Double, of whole: Int) -> Bool {
        Double(part) * 100 > percent * Double(whole)
    }

    /// `part` is strictly below `percent`% of `whole`.
    static func below(_ part: Int, percent: Double, of whole: Int) -> Bool {
        Double(part) * 100 < percent * Double(whole)
    }

    /// The median of `values` (the mean of the middle two for an even count); nil when empty.
    public static func median(_ values: [Int]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted(), mid = sorted.count / 2
        return sorted.count % 2 == 1 ? Double(sorted[mid]) : Double(sorted[mid - 1] + sorted[mid]) / 2
    }

    static func percent(_ part: Int, of whole: Int) -> String {
        whole == 0 ? "all" : oneDecimal(Double(part) * 100 / Double(whole)) + "%"
    }

    static func number(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : oneDecimal(x)
    }

    /// `x` with one decimal, rounded half away from zero (no Foundation in the core).
    public static func oneDecimal(_ x: Double) -> String {
        let tenths = Int64((abs(x) * 10).rounded())
        return (x < 0 && tenths > 0 ? "-" : "") + "\(tenths / 10).\(tenths % 10)"
    }
}
