import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation

/// The steps of a plan in the order they are declared (`NightPlan.make` and the stages' parts of it).
final class PlanSteps {
    private(set) var steps: [PlanStep] = []

    /// Declares a step after those declared so far (`PlanStep` says what each argument means).
    func add(
        _ name: String, _ stage: String, _ session: PlanStep.Session, reads: [String] = [], writes: [String] = [],
        after: [String] = [], milestones: [String] = [], note: String = "",
        _ work: @escaping @Sendable (StepContext) throws -> Void
    ) {
        steps.append(
            PlanStep(
                name: name, stage: stage, session: session, reads: reads, writes: writes, after: after,
                milestones: milestones, note: note, work: work))
    }
}

extension NightPlan {
    /// The write stage: the report files in a temporary folder, the counts, the workbook and the
    /// page, the working tables dropped, then the folder published.
    static func addWriteSteps(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        func add(
            _ name: String, _ stage: String, _ session: PlanStep.Session, reads: [String] = [], writes: [String] = [],
            after: [String] = [], milestones: [String] = [], note: String = "",
            _ work: @escaping @Sendable (StepContext) throws -> Void
        ) {
            plan.add(
                name, stage, session, reads: reads, writes: writes, after: after, milestones: milestones, note: note, work)
        }
        let settings = values.settings
        @Sendable func writer() -> ReportWriter { ReportWriter(settings: values.settings, logger: logger) }

        // The reports, in a temporary folder moved into place at the end.
        add("report folder", "write", .none, writes: ["folder"], after: ["families: merged"]) { _ in try writer().makeFolder() }
        let files: [ReportFile] = [
            .unresolved, .compensate, .duplicateGrants, .clawback, .refunds, .unattributed, .inputErrors,
            .consumptionRequests, .coverage,
        ]
        let fileReads: [ReportFile: [String]] = [
            .unresolved: ["night.r", "night.unresolved_ids", "job.receipt_state"],
            .inputErrors: ["job.input_errors"],
            .consumptionRequests: ["job.consumption_requests", "job.notifications", "job.apple_transactions"],
            .coverage: Coverage.reads,
        ]
        for file in files {
            var reads = fileReads[file] ?? ["job.current_findings: " + file.rawValue]
            // Apple's proceeds of its rows, from the sales reports held (Proceeds.swift).
            if file.layout.names.contains("proceeds") { reads += ["job.sales_report_rows", "job.apple_transactions"] }
            add(file.rawValue, "write", .pool, reads: reads, writes: ["folder: " + file.rawValue]) { c in
                let written = try writer().writeCSV(file, db: c.db)
                values.with { $0.written[file] = written }
            }
        }
        add(
            ReportFile.closed.rawValue, "write", .pool, reads: ["job.findings", "job.held_findings", "value: held"],
            writes: ["folder: closed.csv"]
        ) { c in
            var w = writer()
            w.heldRunID = values.with { $0.summary.held.isEmpty ? nil : $0.summary.runID }
            let written = try w.writeCSV(.closed, db: c.db)
            values.with { $0.written[.closed] = written }
        }
        if settings.appStoreConnect != nil {
            add(
                "coverage", "write", .pool, reads: Coverage.reads, writes: ["value: coverage"],
                note: "Apple's units sold and refunded per product over the window's held report days, against the job's"
            ) { c in
                let coverage = try Coverage(settings: values.settings).figures(c.db)
                values.with { $0.summary.coverage = coverage }
            }
        }
        addSummarySteps(plan, values: values, logger: logger)
    }

    /// The write stage's second half: the counts, the workbook and the page, the working tables
    /// dropped, then the folder published.
    static func addSummarySteps(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        func add(
            _ name: String, _ stage: String, _ session: PlanStep.Session, reads: [String] = [], writes: [String] = [],
            after: [String] = [], milestones: [String] = [], note: String = "",
            _ work: @escaping @Sendable (StepContext) throws -> Void
        ) {
            plan.add(
                name, stage, session, reads: reads, writes: writes, after: after, milestones: milestones, note: note, work)
        }
        @Sendable func writer() -> ReportWriter { ReportWriter(settings: values.settings, logger: logger) }

        add(
            "counts", "write", .none, reads: ["folder", "value: tally: receipts"], writes: ["value: counts"],
            note: "stops the night (exit 70) when unresolved.csv's rows are not the tally's unresolved receipts"
        ) { _ in
            let w = writer()
            try values.with { try w.count($0.written, into: &$0.summary) }
        }
        add("oldest open finding", "write", .main, reads: ["job.findings"], writes: ["value: oldest"]) { c in
            let oldest = try writer().oldestOpenFinding(c.db)
            values.with { $0.oldest = oldest }
        }
        add(
            "nights", "write", .own, reads: ["job.runs", "job.findings"], writes: ["value: nights"],
            note: "the page's 30 nights of history"
        ) { c in
            let nights = try writer().history(c.db)
            values.with { $0.nights = nights }
        }
        add(
            "workbook", "write", .none, reads: ["folder", "value: counts", "value: oldest", "value: coverage", "value: held"],
            writes: ["folder: reconciliation.xlsx"]
        ) { _ in
            let (summary, oldest) = values.with { ($0.summary, $0.oldest) }
            try writer().writeWorkbook(summary: summary, oldest: oldest)
        }
        add(
            "page", "write", .none, reads: ["value: counts", "value: oldest", "value: nights", "value: coverage", "value: held"],
            writes: ["folder: summary.html"]
        ) { _ in
            let (summary, oldest, nights) = values.with { ($0.summary, $0.oldest, $0.nights) }
            try writer().writePage(summary: summary, oldest: oldest, nights: nights)
        }
        add(
            "drop working tables", "write", .own, writes: ["night"],
            note: "waits on the disk for seconds (the tables' files were just written): beside the workbook"
        ) { c in
            try NightTables.drop(c.db, schema: values.settings.jobSchema)
        }
        add(
            "publish", "write", .none,
            reads: ["folder", "value: tally", "value: counts", "value: sales reports", "value: coverage", "value: held"],
            writes: ["reports"],
            note: "the whole tally checked (exit 70 leaves no report), summary.json written, the folder moved into place "
                + "(a held night's under <out>/held/, then exit 65)"
        ) { c in
            let w = writer(), seconds = c.stageSeconds()
            try values.with {
                $0.summary.stageSeconds = seconds
                try w.publish(&$0.summary)
            }
        }
    }
}
