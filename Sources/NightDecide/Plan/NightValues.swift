import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import SummaryPage
import Synchronization

/// What the night's steps hand each other (the plan's `value:` entries), and the summary they fill.
final class NightValues: Sendable {
    struct Fields: Sendable {
        var settings: JobSettings
        var summary: RunSummary
        var prepared: DecideStage.Prepared?
        var decided = DecideStage.Result()
        var written: [ReportFile: ReportWriter.Written] = [:]
        var oldest: SummaryPage.OldestFinding?
        var nights: [SummaryPage.Night] = []
    }
    let fields: Mutex<Fields>

    init(settings: JobSettings, summary: RunSummary) {
        fields = Mutex(Fields(settings: settings, summary: summary))
    }

    func with<T>(_ body: (inout Fields) throws -> T) rethrows -> T { try fields.withLock { try body(&$0) } }
    var settings: JobSettings { with { $0.settings } }
    var summary: RunSummary { with { $0.summary } }
}
