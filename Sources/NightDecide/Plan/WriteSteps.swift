import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation

extension ReportWriter {
    /// The write stage: the report files in a temporary folder, the counts, the workbook and the
    /// page, the working tables dropped, then the folder published.
    static func steps(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        let settings = values.base
        @Sendable func writer() throws -> ReportWriter { ReportWriter(settings: try values.settings(), logger: logger) }

        // The reports, in a temporary folder moved into place at the end.
        plan.add("report folder", "write", .none, writes: [.folder(nil)], after: ["families: merged"]) { _ in try writer().makeFolder() }
        let files: [ReportFile] =
            [
                .unresolved, .compensate, .duplicateGrants, .clawback, .refunds, .unattributed, .inputErrors,
                .consumptionRequests, .coverage,
            ] + (settings.playReports ? [.acknowledge] : [])
        let fileReads: [ReportFile: [Resource]] = [
            .unresolved: [.night(.r), .night(.unresolvedIDs), .job(.receiptState)],
            .inputErrors: [.job(.inputErrors)],
            .consumptionRequests: [
                .job(.consumptionRequests), .job(.notifications), .job(.appleTransactions), .job(.playRefundReviews), .job(.playVoided),
                .job(.playPurchases), .job(.playPurchaseLines), .job(.playOrders),
            ],
            .coverage: coverageReads,
            .acknowledge: [.night(.play)],
        ]
        for file in files {
            var reads = fileReads[file] ?? [.findings(file), .playFindings(file)]
            // Apple's proceeds of its rows, from the sales reports held (Proceeds.swift).
            if file.layout.names.contains("proceeds") { reads += [.job(.salesReportRows), .job(.appleTransactions)] }
            plan.add(file.rawValue, "write", .pool, reads: reads, writes: [.folder(.report(file))]) { c in
                let written = try writer().writeCSV(file, db: c.db)
                values.with { $0.written[file] = written }
            }
        }
        plan.add(
            ReportFile.closed.rawValue, "write", .pool, reads: [.job(.findings), .job(.heldFindings), .value(.held)],
            writes: [.folder(.report(.closed))]
        ) { c in
            var w = try writer()
            w.heldRunID = values.with { $0.summary.held.isEmpty ? nil : $0.summary.runID }
            let written = try w.writeCSV(.closed, db: c.db)
            values.with { $0.written[.closed] = written }
        }
        if settings.appStoreConnect != nil {
            plan.add(
                // `value: settings`: on a night without the sales report step nothing else writes what it
                // reads, and it would start before the source check (a pool session, not main's turn).
                "coverage", "write", .pool, reads: coverageReads + [.value(.settings)], writes: [.value(.coverage)],
                note: "Apple's units sold and refunded per product over the window's held report days, against the job's"
            ) { c in
                let coverage = try Coverage(settings: try values.settings()).figures(c.db)
                values.with { $0.summary.coverage = coverage }
            }
        }
        summarySteps(plan, values: values, logger: logger)
    }

    /// The write stage's second half: the counts, the workbook and the page, the working tables
    /// dropped, then the folder published.
    private static func summarySteps(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        @Sendable func writer() throws -> ReportWriter { ReportWriter(settings: try values.settings(), logger: logger) }

        plan.add(
            "counts", "write", .none, reads: [.folder(nil), .value(.tally(.receipts))], writes: [.value(.counts)],
            note: "stops the night (exit 70) when unresolved.csv's rows are not the tally's unresolved receipts"
        ) { _ in
            let w = try writer()
            try values.with { try w.count($0.written, into: &$0.summary) }
        }
        plan.add("oldest open finding", "write", .main, reads: [.job(.findings)], writes: [.value(.oldest)]) { c in
            values.oldest.set(try writer().oldestOpenFinding(c.db))
        }
        plan.add(
            "nights", "write", .own, reads: [.job(.runs), .job(.findings)], writes: [.value(.nights)],
            note: "the page's 30 nights of history"
        ) { c in
            values.nights.set(try writer().history(c.db))
        }
        plan.add(
            "workbook", "write", .none, reads: [.folder(nil), .value(.counts), .value(.oldest), .value(.coverage), .value(.held)],
            writes: [.folder(.workbook)]
        ) { _ in
            try writer().writeWorkbook(summary: values.summary, oldest: try values.oldest.get())
        }
        plan.add(
            "page", "write", .none, reads: [.value(.counts), .value(.oldest), .value(.nights), .value(.coverage), .value(.held)],
            writes: [.folder(.page)]
        ) { _ in
            try writer().writePage(summary: values.summary, oldest: try values.oldest.get(), nights: try values.nights.get())
        }
        plan.add(
            "drop working tables", "write", .own, writes: [.night(nil)],
            note: "waits on the disk for seconds (the tables' files were just written): beside the workbook"
        ) { c in
            try NightTables.drop(c.db, schema: values.base.jobSchema)
        }
        plan.add(
            "publish", "write", .none,
            reads: [.folder(nil), .value(.tally(nil)), .value(.counts), .value(.salesReports), .value(.coverage), .value(.held)],
            writes: [.reports],
            note: "the whole tally checked (exit 70 leaves no report), summary.json written, the folder moved into place "
                + "(a held night's under <out>/held/, then exit 65)"
        ) { c in
            let w = try writer(), seconds = c.stageSeconds()
            try values.with {
                $0.summary.stageSeconds = seconds
                try w.publish(&$0.summary)
            }
        }
    }

    /// What the coverage reads (Coverage.swift's queries): Apple's report days and rows, the job's
    /// transactions, the products, after the sales reports' step when the night has one.
    static let coverageReads: [Resource] = [
        .job(.salesReportDays), .job(.salesReportRows), .job(.appleTransactions), .source(.products),
        .value(.salesReports),
    ]
}
