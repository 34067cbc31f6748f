// The report files of contract §6: names and columns, each column described once (name, the cell
// a row gives it, how the workbook shows it, its part in the money totals). The CSV header, the
// workbook's cell kinds, summary.json's money, the width of the findings table and the tally's
// columns all follow from these descriptions.

public enum ReportFile: String, CaseIterable, Sendable {
    case compensate = "compensate.csv"
    case duplicateGrants = "duplicate_grants.csv"
    case clawback = "clawback.csv"
    case refunds = "refunds.csv"
    case unattributed = "unattributed.csv"
    case closed = "closed.csv"
    case unresolved = "unresolved.csv"
    case inputErrors = "input_errors.csv"
    /// Apple's refund requests and what `respond` answered.
    case consumptionRequests = "consumption_requests.csv"
    /// Apple's daily sales reports against the purchases the job learned, where they differ.
    case coverage = "coverage.csv"
    /// Google Play's purchases nobody acknowledged, most urgent first (only with Play configured).
    case acknowledge = "acknowledge.csv"

    /// The files a night writes: every one, but acknowledge.csv only with Google Play configured
    /// (without it the reports are the App Store's alone, as before Play).
    public static func published(play: Bool) -> [ReportFile] { allCases.filter { play || $0 != .acknowledge } }

    /// The file's columns, with `store` last when Google Play is configured (`app_store`,
    /// `google_play`; empty for an input error of neither store).
    public func layout(store: Bool) -> ReportLayout {
        var l = layout
        if store { l.columns.append(ReportColumn("store")) }
        return l
    }

    /// The file's name without `.csv`: its key in summary.json's `counts` and `reasons`, and its
    /// sheet's name in the workbook.
    public var name: String { String(rawValue.dropLast(4)) }

    /// The file's columns, described once. The findings reports whose rows the core makes take
    /// theirs from their row type (`CompensationRow.layout`…), where each column names its cell.
    public var layout: ReportLayout {
        switch self {
        case .compensate: return ReportLayout(CompensationRow.layout.map(\.column))
        case .duplicateGrants: return ReportLayout(DuplicateGrantRow.layout.map(\.column))
        case .clawback: return ReportLayout(ClawbackRow.layout.map(\.column))
        case .unattributed: return ReportLayout(UnattributedRow.layout.map(\.column))
        case .acknowledge: return ReportLayout(AcknowledgeRow.layout.map(\.column))
        case .refunds:
            // Its rows are decided from facts Postgres gathers (DecideStage.refundRows), in this order.
            return ReportLayout([
                .init("transaction_id"), .init("original_transaction_id"), .init("user_id"), .init("product_id"),
                .init("product_type"), .init("revocation_date", .dateTime), .init("revocation_reason"),
                .init("revocation_type"), .init("revocation_percentage", .percentMilli), .init("amount", .money),
                .init("refunded_amount", .money, money: .summed([
                    MoneyTotal("refunded", stateIsNot: "reversed"), MoneyTotal("refunded_still_granted", stateIs: "still_granted"),
                ])),
                .init("currency", money: .currency), .init("state"), .init("grant_ids"), .init("first_seen", .date),
                .init("proceeds", .money, money: .summed([
                    MoneyTotal("proceeds_refunded", stateIsNot: "reversed"),
                    MoneyTotal("proceeds_refunded_still_granted", stateIs: "still_granted"),
                ], in: "proceeds_currency")),
                .init("proceeds_currency", money: .currency),
            ])
        case .unresolved:
            return ReportLayout([
                .init("receipt_id"), .init("user_id"), .init("order_id"), .init("transaction_id"), .init("attempts", .integer),
                .init("last_status"), .init("last_error"), .init("last_attempt_at", .dateTime),
            ])
        case .inputErrors:
            return ReportLayout([.init("relation"), .init("key"), .init("column"), .init("problem")])
        case .consumptionRequests:
            // Its rows are made in SQL (ReportWriter's query), in this order.
            return ReportLayout([
                .init("requested_at", .dateTime), .init("environment"), .init("transaction_id"), .init("original_transaction_id"),
                .init("user_id"), .init("product_id"), .init("quantity", .integer),
                .init("amount", .money, money: .summed([MoneyTotal("refund_declined", stateIs: "declined", column: "outcome")])),
                .init("currency", money: .currency), .init("reason"), .init("answer"), .init("detail"),
                .init("delivery_status"), .init("consumption_percentage", .integer), .init("refund_preference"),
                .init("answered_at", .dateTime), .init("apple_error_code"), .init("outcome"), .init("outcome_at", .dateTime),
                .init("notification_uuid"),
            ])
        case .coverage:
            // Its rows are made in SQL (Coverage.csvSQL), in this order.
            return ReportLayout([
                .init("report_date", .date), .init("product_id"), .init("country"), .init("currency"),
                .init("apple_units_sold", .integer), .init("job_units_sold", .integer),
                .init("apple_units_refunded", .integer), .init("job_units_refunded", .integer),
            ])
        case .closed:
            return ReportLayout([.init("report"), .init("finding_key"), .init("first_seen", .date), .init("closed_on", .date),
                                 .init("closed_because")])
        }
    }

    public var columns: [String] { layout.names }

    /// Where `first_seen` stands among the columns of a findings report (nil: the report has none).
    public var firstSeenIndex: Int? { isFindings ? columns.firstIndex(of: "first_seen") : nil }

    /// The reports whose rows are findings, remembered night over night (`first_seen`, closed.csv).
    public var isFindings: Bool {
        switch self {
        case .compensate, .duplicateGrants, .clawback, .refunds, .unattributed: return true
        case .unresolved, .inputErrors, .closed, .consumptionRequests, .coverage, .acknowledge: return false
        }
    }

    /// The cells of the widest findings report: `current_findings` has this many (`c1`…), as the
    /// migration that made it says (a test compares them: a wider report needs a new migration).
    public static var findingsCells: Int { allCases.filter(\.isFindings).map(\.layout.cells).max() ?? 0 }
}

/// How the workbook shows a column, decided by the description, never by guessing from values:
/// a 16-digit `transaction_id` looks like a number and must stay text (Excel keeps 15
/// significant digits, so 2000000847061981 would come back as 2000000847061980).
public enum ColumnKind: Sendable, Equatable {
    /// Ids, codes, names, messages: a text cell.
    case text
    /// Unit counts (`quantity`, `attempts`): a whole number, so a person can sum and sort them.
    case integer
    /// Money in currency units (`amount`, `refunded_amount`): a number, as the CSV's decimal.
    case money
    /// An ISO 8601 UTC time: a date-time serial number in the workbook's time zone.
    case dateTime
    /// A UTC calendar date (`first_seen`, `closed_on`): a date serial, not moved to the zone,
    /// because the contract defines it as the UTC date and a date has no time to convert.
    case date
    /// Apple's `revocationPercentage`, thousandths of a percent (`33333`): the CSV keeps Apple's
    /// integer, the workbook shows the percentage (33.333%).
    case percentMilli
}

/// A money column's part in summary.json's `money`, per currency.
public enum MoneyRole: Sendable, Equatable {
    /// The currency of amounts of the row (`currency`, `proceeds_currency`).
    case currency
    /// An amount added to these totals (milliunits, exact), under the currency its row names in
    /// the column `in` (`currency` unless said: the player's price; `proceeds_currency`: Apple's
    /// proceeds, which Apple may pay in another currency than the customer's).
    case summed([MoneyTotal], in: String = "currency")
}

/// One of summary.json's money totals, and the rows it counts (by their `state` cell, or the
/// cell of `column`).
public struct MoneyTotal: Sendable, Equatable {
    public let name: String
    public let stateIs: String?
    public let stateIsNot: String?
    public let column: String

    public init(_ name: String, stateIs: String? = nil, stateIsNot: String? = nil, column: String = "state") {
        self.name = name
        self.stateIs = stateIs
        self.stateIsNot = stateIsNot
        self.column = column
    }

    func counts(state: String?) -> Bool {
        (stateIs.map { $0 == state } ?? true) && (stateIsNot.map { $0 != state } ?? true)
    }
}

/// One column of a report.
public struct ReportColumn: Sendable, Equatable {
    public let name: String
    public let kind: ColumnKind
    public let money: MoneyRole?

    public init(_ name: String, _ kind: ColumnKind = .text, money: MoneyRole? = nil) {
        self.name = name
        self.kind = kind
        self.money = money
    }
}

/// A report column with the cell a row of `Row` gives it; nil for `first_seen`, which the
/// findings history fills.
public struct RowColumn<Row>: Sendable {
    public let column: ReportColumn
    public let cell: (@Sendable (Row) -> String)?

    public init(_ name: String, _ kind: ColumnKind = .text, money: MoneyRole? = nil, _ cell: (@Sendable (Row) -> String)?) {
        column = ReportColumn(name, kind, money: money)
        self.cell = cell
    }

    /// The cells of `row` in the columns' order, without the history's.
    public static func cells(_ row: Row, _ layout: [RowColumn<Row>]) -> [String] {
        var out: [String] = []
        out.reserveCapacity(layout.count)
        for c in layout { if let cell = c.cell { out.append(cell(row)) } }
        return out
    }
}

/// A report's columns in order, and what follows from them.
public struct ReportLayout: Sendable, Equatable {
    public var columns: [ReportColumn]

    public init(_ columns: [ReportColumn]) { self.columns = columns }

    /// The CSV header.
    public var names: [String] { columns.map(\.name) }
    /// The workbook's kind of each column.
    public var kinds: [ColumnKind] { columns.map(\.kind) }
    /// The columns of a findings report that are not the row's cells but filled when the CSV is
    /// written: `first_seen` (the findings history) and Apple's proceeds of the row's units (the
    /// sales reports held then), so that neither changes a finding or its key.
    public static let filledAtWrite: Set<String> = ["first_seen", "proceeds", "proceeds_currency"]

    /// The row's cells as the findings table holds them: every column but those filled at write.
    public var cellNames: [String] { names.filter { !Self.filledAtWrite.contains($0) } }
    public var cells: Int { cellNames.count }

    /// The place of `name` among the cells (0-based); nil when it is not one.
    public func cellIndex(_ name: String) -> Int? { cellNames.firstIndex(of: name) }

    /// The findings table's column holding `name` (`c1`…); nil when it is not one.
    public func cellColumn(_ name: String) -> String? { cellIndex(name).map { "c\($0 + 1)" } }

    /// The money totals of one CSV row (its cells in `names` order), added to `totals`
    /// (currency → total → milliunits). An empty currency or amount adds nothing. Called for every
    /// row of every report: the columns are searched in place, no array of names is made per row.
    public func addMoney(_ cells: [String], to totals: inout [String: [String: Int64]]) {
        for (i, column) in columns.enumerated() {
            guard case .summed(let sums, let currencyColumn)? = column.money, i < cells.count, !cells[i].isEmpty,
                  let c = columns.firstIndex(where: { $0.name == currencyColumn }), c < cells.count, !cells[c].isEmpty,
                  let m = Money.milliunits(Substring(cells[i])) else { continue }
            let currency = cells[c]
            for total in sums {
                let state = columns.firstIndex(where: { $0.name == total.column }).flatMap { $0 < cells.count ? cells[$0] : nil }
                if total.counts(state: state) { totals[currency, default: [:]][total.name, default: 0] += m }
            }
        }
    }
}
