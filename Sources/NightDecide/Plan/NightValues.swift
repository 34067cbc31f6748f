import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import SummaryPage
import Synchronization

/// A value one step hands others (`value: X` in the plan): written once, by the one step that
/// declares it among its writes (`Plan.init` checks there is one before every step that reads it).
final class StepOutput<T: Sendable>: Sendable {
    /// How the plan names it.
    let name: NightValue
    private let box = Mutex<T?>(nil)

    init(_ name: NightValue) { self.name = name }

    /// Its step's result; a second write is a plan that lost its one-writer rule.
    func set(_ value: T) {
        box.withLock {
            precondition($0 == nil, "value: \(name) written twice")
            $0 = value
        }
    }

    /// What its step wrote. A step reads it only after that step ended (the plan orders a reader after
    /// the writer of what it reads, `Plan.init` checks there is one); a read before is a plan that
    /// lost an edge: exit 70 with its one line, never a value made up.
    func get() throws -> T {
        guard let value = box.withLock({ $0 }) else {
            throw JobError(.internalCheck, "the night's plan read value: \(name) before the step that writes it ended")
        }
        return value
    }
}

/// What the source check (or the copy from SOURCE_DATABASE_URL) found: tonight's settings are the
/// run's with these, and nothing else changes them.
struct SourceFound: Sendable {
    /// The schema the copy was made in (nil: the sources are read where they are).
    var schema: String?
    /// The keys the copy counted on the source's indexes (`JobSettings.sourceKeysCounted`).
    var keysCounted: Set<String> = []
    /// Whether the products have list price columns.
    var listPrices: Bool
    /// The App Store's views (`StoreViews`) over the relations whole in `storeRows`, when a
    /// relation has the `store` column: `schema` then names the views.
    var storeRows: String?
    var storeColumns: Set<SourceRelation> = []

    /// The App Store's rows read through `StoreViews` over the relations whole in `rows`.
    mutating func readStores(_ db: PGConnection, rows: String, jobSchema: JobSchema, shape: SourceCheck.Shape) throws {
        schema = try StoreViews.prepare(db, rows: rows, jobSchema: jobSchema, stores: shape.storeColumns).name
        storeRows = rows
        storeColumns = shape.storeColumns
    }
}

/// What the night's steps hand each other (the plan's `value:` entries), and the summary they fill.
final class NightValues: Sendable {
    /// What several steps fill side by side: the summary, and the report files written.
    struct Fields: Sendable {
        var summary: RunSummary
        var written: [ReportFile: ReportWriter.Written] = [:]
    }
    let fields: Mutex<Fields>
    /// The run's settings as given: what the plan is built from, and what the steps before the
    /// source check use.
    let base: JobSettings
    let source = StepOutput<SourceFound>(.settings)
    let prepared = StepOutput<DecideStage.Prepared>(.catalog)
    let decided = StepOutput<DecideStage.Result>(.families)
    let relationFigures = StepOutput<[String: NightFigures.Relation]>(.relationFigures)
    let oldest = StepOutput<SummaryPage.OldestFinding?>(.oldest)
    let nights = StepOutput<[SummaryPage.Night]>(.nights)

    init(settings: JobSettings, summary: RunSummary) {
        base = settings
        fields = Mutex(Fields(summary: summary))
    }

    func with<T>(_ body: (inout Fields) throws -> T) rethrows -> T { try fields.withLock { try body(&$0) } }
    var summary: RunSummary { with { $0.summary } }
    var runID: Int64 { with { $0.summary.runID } }

    /// Tonight's settings: the run's, with what the source check or copy found (`value: settings`).
    /// A step that needs only what the run was given (the job schema) reads `base`.
    func settings() throws -> JobSettings {
        var settings = base
        let found = try source.get()
        if let schema = found.schema {
            settings.sourceSchema = schema
            settings.sourceKeysCounted = found.keysCounted
        }
        settings.listPriceColumns = found.listPrices
        settings.storeRows = found.storeRows
        settings.storeColumns = found.storeColumns
        return settings
    }
}
