import NightLearn
import Reconciliation

/// What a step of the plan reads or writes. A name the compiler checks: a misspelt table is a
/// compile error, not an ordering edge silently dropped. `description` is the name `run --plan` and
/// the contract print (`job.apple_transactions`, `night.g`, `value: catalog`); a whole covers its
/// parts (`night` covers `night.g`, `job.current_findings` covers `job.current_findings: refunds.csv`).
enum Resource: Hashable, Sendable, CustomStringConvertible {
    /// A table of the job schema; nil: all of them.
    case job(JobTable?)
    /// tonight's findings of one report (part of `job.current_findings`): the App Store's.
    case findings(ReportFile)
    /// tonight's Google Play findings of one report (part of `job.current_findings`; their keys
    /// are Play's own, so they are written beside the App Store's).
    case playFindings(ReportFile)
    /// A source relation (or its copy, with SOURCE_DATABASE_URL); nil: all of them.
    case source(SourceRelation?)
    /// The database SOURCE_DATABASE_URL names.
    case sourceDatabase
    /// A working table of the decide stage (NightTables.swift); nil: all of them.
    case night(NightTable?)
    /// A file of tonight's temporary report folder; nil: the folder.
    case folder(FolderFile?)
    /// What one step hands another in memory.
    case value(NightValue)
    /// The published report folder.
    case reports

    var description: String {
        switch self {
        case .job(let table): return "job" + (table.map { "." + $0.rawValue } ?? "")
        case .findings(let file): return "job.current_findings: " + file.rawValue
        case .playFindings(let file): return "job.current_findings: " + file.rawValue + " of google_play"
        case .source(let relation): return "source" + (relation.map { "." + $0.rawValue } ?? "")
        case .sourceDatabase: return "source database"
        case .night(let table): return "night" + (table.map { "." + $0.rawValue } ?? "")
        case .folder(let file): return "folder" + (file.map { ": " + $0.name } ?? "")
        case .value(let value): return "value: " + value.description
        case .reports: return "reports"
        }
    }

    /// Whether `part` is a part of this whole (`night` covers `night.g`, `job` every job table and
    /// tonight's findings of each report and store, `job.current_findings` the latter, `value: tally` each
    /// relation's tally); a resource does not cover itself.
    func covers(_ part: Resource) -> Bool {
        switch (self, part) {
        case (.job(nil), .job(.some)), (.job(nil), .findings), (.job(.currentFindings), .findings): return true
        case (.job(nil), .playFindings), (.job(.currentFindings), .playFindings): return true
        case (.source(nil), .source(.some)), (.night(nil), .night(.some)), (.folder(nil), .folder(.some)): return true
        case (.value(.tally(nil)), .value(.tally(.some))): return true
        default: return false
        }
    }

    /// Every source relation, one by one.
    static let everySource = SourceRelation.allCases.map { Resource.source($0) }
}

/// The job schema's tables the night's steps read or write.
enum JobTable: String, Sendable {
    case schemaMigrations = "schema_migrations"
    case runs
    case receiptState = "receipt_state"
    case verifyAttempts = "verify_attempts"
    case appleTransactions = "apple_transactions"
    case receiptTransactions = "receipt_transactions"
    case notificationSweeps = "notification_sweeps"
    case historyCustomers = "history_customers"
    case notifications
    case salesReportDays = "sales_report_days"
    case salesReportRows = "sales_report_rows"
    case salesReportErrors = "sales_report_errors"
    case inputErrors = "input_errors"
    case currentFindings = "current_findings"
    case compensationSpool = "compensation_spool"
    case keyDigests = "key_digests"
    case heldKeyDigests = "held_key_digests"
    case findings
    case heldFindings = "held_findings"
    case consumptionRequests = "consumption_requests"
    case playPurchases = "play_purchases"
    case playPurchaseLines = "play_purchase_lines"
    case playAttempts = "play_attempts"
    case playVoided = "play_voided"
    case playOrders = "play_orders"
    case playVoidedPositions = "play_voided_positions"
    case playMessages = "play_messages"
    case playRefundReviews = "play_refund_reviews"
}

/// The decide stage's working tables: the copies of the sources (`r`, `o`, `g`, `p`), their rows
/// that failed a check (`bad_`) and their duplicate keys (`dk_`), and what the steps derive.
enum NightTable: String, Sendable {
    case r, o, g, p
    case badR = "bad_r", badO = "bad_o", badG = "bad_g"
    case dkR = "dk_r", dkO = "dk_o", dkG = "dk_g"
    case crowdedKeys = "crowded_keys"
    case unknown
    case tokenOrders = "token_orders"
    case who
    case knownProducts = "known_products"
    case unresolvedIDs = "unresolved_ids"
    /// The rows the App Store's views leave out, each relation's set aside once, and the copies of
    /// Play's (OtherStoreRows.swift).
    case otherStores = "play_rows_*, no_store_*, gp_*"
    /// Google Play's clean rows and acknowledge.csv's rows (PlayDecide).
    case play = "play_g, play_r, play_o, play_p, play_acknowledge"

    /// The copy of `relation`, its bad rows and its duplicate keys (none for the products).
    static func copies(of relation: SourceRelation) -> (copy: NightTable, bad: NightTable, dk: NightTable)? {
        switch relation {
        case .receipts: return (.r, .badR, .dkR)
        case .orders: return (.o, .badO, .dkO)
        case .grants: return (.g, .badG, .dkG)
        case .products: return nil
        }
    }
}

/// A file of the report folder.
enum FolderFile: Hashable, Sendable {
    case report(ReportFile)
    case workbook
    case page

    var name: String {
        switch self {
        case .report(let file): return file.rawValue
        case .workbook: return "reconciliation.xlsx"
        case .page: return "summary.html"
        }
    }
}

/// What the steps hand each other in memory (`NightOutputs`, and the summary they fill).
enum NightValue: Hashable, Sendable, CustomStringConvertible {
    case settings
    case runID
    case verification
    case sweeps
    case salesReports
    /// The Google Play stage's counts.
    case googlePlay
    /// The sweep of Google Play's voided purchases' counts.
    case googlePlayVoided
    /// The nearest acknowledgement deadline of Play's decided purchases.
    case playAcknowledge
    case catalog
    case families
    /// The tally of one relation; nil: the whole tally.
    case tally(SourceRelation?)
    /// Tonight's figures of the source relations, for the hold check.
    case relationFigures
    case held
    case coverage
    case counts
    case oldest
    case nights

    /// Handed as a `StepOutput`: a step that reads it needs the step that writes it before it in
    /// the plan. The others are filled into the summary, and a step that reads them only waits for
    /// their writer when the plan has one (the sweeps, the sales reports, the coverage).
    var handed: Bool {
        switch self {
        case .settings, .runID, .catalog, .families, .relationFigures, .held, .counts, .oldest, .nights: return true
        case .verification, .sweeps, .salesReports, .googlePlay, .googlePlayVoided, .playAcknowledge, .tally, .coverage: return false
        }
    }

    var description: String {
        switch self {
        case .settings: return "settings"
        case .runID: return "run id"
        case .verification: return "verification"
        case .sweeps: return "sweeps"
        case .salesReports: return "sales reports"
        case .googlePlay: return "google play"
        case .googlePlayVoided: return "google play voided"
        case .playAcknowledge: return "google play acknowledge"
        case .catalog: return "catalog"
        case .families: return "families"
        case .tally(nil): return "tally"
        // The receipts' part has always been printed by its short name (the plans of earlier builds compare equal).
        case .tally(.receipts): return "tally: receipts"
        case .tally(let relation?): return "tally: " + relation.rawValue
        case .relationFigures: return "relation figures"
        case .held: return "held"
        case .coverage: return "coverage"
        case .counts: return "counts"
        case .oldest: return "oldest"
        case .nights: return "nights"
        }
    }
}
