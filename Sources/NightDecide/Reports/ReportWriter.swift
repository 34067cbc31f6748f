import Foundation
import JobStore
import Logging
import NightLearn
import PlayNight
import Postgres
import Reconciliation

/// Contract §6: the five CSV files and summary.json, written into a temporary folder and
/// renamed into `<out>/<as_of UTC date>/`, so a reader never sees a half-written set and a
/// rerun for the same date replaces it whole. Rows stream from Postgres already sorted
/// (byte order, `COLLATE "C"`), so memory does not grow with the number of rows.
extension ReportFile {
    /// Its rows are tonight's findings of that report, with their `first_seen` from `findings`.
    var findingsReport: Bool {
        switch self {
        case .compensate, .duplicateGrants, .clawback, .refunds, .unattributed: return true
        case .closed, .unresolved, .inputErrors, .consumptionRequests, .coverage, .acknowledge: return false
        }
    }
}

extension JobSettings {
    /// Google Play is configured: every report ends with `store`, and acknowledge.csv is written.
    var playReports: Bool { transport.play != nil }
    /// The files tonight writes (`ReportFile.published`).
    var reportFiles: [ReportFile] { ReportFile.published(play: playReports) }
}

struct ReportWriter {
    let settings: JobSettings
    let logger: Logger
    var S: SQL { settings.jobSchema.sql }
    /// The run, when tonight is held: closed.csv lists what its history would close
    /// (`held_findings`), since `findings` is left as it was.
    var heldRunID: Int64?

    init(settings: JobSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Column of each findings report that counts "per reason/kind" in the summary.
    static let reasonColumn: [ReportFile: String] = [
        .compensate: "reason", .duplicateGrants: "kind", .clawback: "reason",
        .consumptionRequests: "answer",
    ]

    /// Tonight's report folder, and the temporary one the reports are written into.
    struct Folder: Sendable {
        let out: String, day: String
        var final: String { out + "/" + day }
        /// A held night's folder (people and scripts open the newest `<out>/<date>/`, never this).
        var held: String { out + "/" + Self.heldFolder + "/" + day }
        static let heldFolder = "held"
        var temp: String { out + "/.\(day).tmp-\(getpid())" }
        var aside: String { out + "/.\(day).old-\(getpid())" }
        func file(_ name: String) -> String { temp + "/" + name }
    }

    /// What one CSV file held: its rows, the count per reason column, its money columns summed.
    struct Written: Sendable {
        var rows = 0
        var perReason: [String: Int] = [:]
        var money = MoneyTotals()
        /// consumption_requests.csv: rows per `answer`, then per `outcome`.
        var answersAndOutcomes: [String: [String: Int]] = [:]
        /// Per app (its product's `iap_products.bundle_id`, `RunSummary.otherApp` when that is no
        /// app of IAP_BUNDLE_IDS): rows and money, for the files with a `product_id`.
        var perApp: [String: (rows: Int, money: MoneyTotals)] = [:]
        /// Per `store` (with Google Play configured): the rows and their money.
        var perStore: [String: (rows: Int, money: MoneyTotals)] = [:]
    }

    var folder: Folder { Folder(out: settings.out, day: UTC.date(settings.asOf)) }

    func cannotWrite(_ path: String, _ reason: String) -> JobError {
        JobError(
            .cannotWrite,
            "reports cannot be written to \(path): \(reason); "
                + "check that the folder exists and is writable, or pass --out")
    }

    /// Makes the temporary folder, after removing what a run killed while writing left (we hold
    /// the lock, so none is in use).
    func makeFolder() throws {
        let f = folder
        do {
            try FileSystem.makeDirectories(f.out)
            for name in try FileSystem.names(in: f.out)
            where name.hasPrefix(".\(f.day).tmp-") || name.hasPrefix(".\(f.day).old-") {
                try? FileSystem.removeTree(f.out + "/" + name)
            }
            try FileSystem.makeDirectory(f.temp)
        } catch let e as FileSystem.Failure {
            throw cannotWrite(e.path, e.reason)
        }
    }

    /// The CSV files' counts into `summary`, once checked: the tally's unresolved receipts are
    /// exactly the rows of unresolved.csv.
    func count(_ written: [ReportFile: Written], into summary: inout RunSummary) throws {
        if let tallied = summary.tally[SourceRelation.receipts.rawValue]?.buckets["unresolved"],
            tallied != written[.unresolved]?.rows
        {
            throw JobError(
                .internalCheck,
                "the conservation check failed for iap_receipts: \(tallied) unresolved in the "
                    + "tally, \(written[.unresolved]?.rows ?? 0) rows in unresolved.csv; this is a bug in iap-reconcile: no report was written"
            )
        }
        var money = MoneyTotals()
        for file in settings.reportFiles {
            let w = written[file] ?? Written()
            summary.counts[file.name] = w.rows
            if Self.reasonColumn[file] != nil { summary.reasons[file.name] = w.perReason }
            money.merge(w.money)
        }
        summary.money = money.totals
        summary.refundRequests = RefundFunnel(written[.consumptionRequests]?.answersAndOutcomes ?? [:])
        countPerApp(written, into: &summary)
        if settings.playReports {
            // Each store's rows and money: every report's rows, both stores named even when empty.
            var stores: [String: RunSummary.StoreFigures] = ["app_store": .init(), "google_play": .init()]
            for file in settings.reportFiles {
                for store in stores.keys { stores[store]!.counts[file.name] = 0 }
                for (store, w) in written[file]?.perStore ?? [:] {
                    stores[store, default: .init()].counts[file.name] = w.rows
                    var total = MoneyTotals(totals: stores[store]?.money ?? [:])
                    total.merge(w.money)
                    stores[store]?.money = total.totals
                }
            }
            summary.stores = stores
        }
        let play = summary.tally.values.reduce(0) { $0 + ($1.buckets[Conservation.otherStore] ?? 0) }
        // With Google Play configured its rows are decided (PlayDecide): no check is skipped.
        if play > 0, !settings.playReports { summary.skippedChecks.append(RunSummary.otherStoreCheck(rows: play)) }
    }

    /// summary.json `apps` (with IAP_BUNDLE_IDS): per app, the rows and money of the reports with a
    /// `product_id`, the requests sent, the sweeps' figures; an app whose key Apple refused
    /// tonight is named in `skipped_checks`.
    func countPerApp(_ written: [ReportFile: Written], into summary: inout RunSummary) {
        let apps = settings.bundleIDList
        guard !apps.isEmpty else { return }
        var figures: [String: RunSummary.AppFigures] = [:]
        for app in apps { figures[app] = RunSummary.AppFigures() }
        for file in settings.reportFiles {
            for (app, w) in written[file]?.perApp ?? [:] {
                figures[app, default: .init()].counts[file.name] = w.rows
                var total = MoneyTotals(totals: figures[app]?.money ?? [:])
                total.merge(w.money)
                figures[app]?.money = total.totals
            }
        }
        for (app, requests) in settings.nightApps?.requestCounts ?? [:] { figures[app, default: .init()].requests = requests }
        for (app, s) in summary.sweeps?.apps ?? [:] {
            figures[app, default: .init()].notifications = s.notifications
            figures[app, default: .init()].historyCustomers = s.historyCustomers
        }
        for (app, n) in settings.nightApps?.droppedCounts ?? [:] { figures[app, default: .init()].notAsked = n }
        for app in settings.nightApps?.refusedApps ?? [] {
            figures[app, default: .init()].refused = true
            let check = RunSummary.refusedAppCheck(app)
            if !summary.skippedChecks.contains(check) { summary.skippedChecks.append(check) }
        }
        summary.apps = figures
    }

    /// `iap_products.bundle_id` per product (the first row of a key, as the night reads it), for
    /// the counts per app; empty without IAP_BUNDLE_IDS.
    func productApps(_ db: PGConnection) throws -> [String: String] {
        guard !settings.bundleIDList.isEmpty else { return [:] }
        let r = try db.query(
            """
            SELECT DISTINCT ON (product_id) product_id, bundle_id FROM \(ident: settings.sourceSchema).iap_products
            WHERE product_id IS NOT NULL ORDER BY product_id, bundle_id
            """)
        var apps: [String: String] = [:]
        for i in 0..<r.rowCount { if let p = r.value(i, 0) { apps[p] = r.value(i, 1) ?? "" } }
        return apps
    }

    /// The last step: the whole tally checked (contract §1: a failed check leaves no report),
    /// summary.json written, and the folder moved into place without a moment where
    /// `<out>/<date>` is absent: an atomic exchange with last night's folder where the kernel has
    /// one, then the old set goes.
    /// A held night goes to `<out>/held/<date>/` instead, and ends with exit 65 naming its reasons;
    /// a published one removes a held folder of its date (the rerun replaced it).
    func publish(_ summary: inout RunSummary) throws {
        let f = folder
        let held = !summary.held.isEmpty
        summary.reportFolder = held ? f.held : f.final
        summary.exitCode = held ? ExitStatus.sourceMismatch.rawValue : 0
        if let problem = Conservation.problem(summary.tally) {
            summary.exitCode = nil
            summary.reportFolder = nil
            throw JobError(.internalCheck, problem)
        }
        summary.writtenAt = EpochMillis(Date().timeIntervalSince1970 * 1000)
        do {
            try FileSystem.write(f.file("summary.json"), Array((summary.json + "\n").utf8))
            if held {
                try FileSystem.makeDirectories(f.out + "/" + Folder.heldFolder)
                try FileSystem.replaceDirectory(f.held, with: f.temp, aside: f.aside)
            } else {
                try FileSystem.replaceDirectory(f.final, with: f.temp, aside: f.aside)
                if FileSystem.exists(f.held) { try FileSystem.removeTree(f.held) }
            }
        } catch let e as FileSystem.Failure {
            throw cannotWrite(e.path, e.reason)
        }
        if held { throw Self.heldError(summary, folder: f) }
    }

    /// The one line of a held night.
    static func heldError(_ summary: RunSummary, folder f: Folder) -> JobError {
        JobError(
            .sourceMismatch,
            "the night was held, not published: " + summary.held.map(\.text).joined(separator: "; ")
                + "; its reports are in \(f.held)/ for review: when they are right, publish them with "
                + "`iap-reconcile release \(f.day) --note TEXT`, else fix the views and run again (docs/contract.md, 'Held nights')")
    }

    /// A night that failed leaves no temporary folder behind.
    func removeFolder() { try? FileSystem.removeTree(folder.temp) }

    /// One CSV file into the temporary folder: its rows, the count per reason column, and its
    /// money columns summed.
    func writeCSV(_ file: ReportFile, db: PGConnection) throws -> Written {
        let url = URL(fileURLWithPath: folder.file(file.rawValue))
        var money = MoneyTotals()
        guard let handle = fopen(url.path, "w") else {
            throw JobError(.cannotWrite, "reports cannot be written to \(url.path): \(String(cString: strerror(errno)))")
        }
        var closed = false
        defer { if !closed { fclose(handle) } }
        // The findings history may be writing `findings` meanwhile. Planned while it has written few
        // pages, the join chose a nested loop whose inner scan read the history's growing, not yet
        // visible rows once per finding: a first night on the benchmark's data ran for 13 minutes
        // before it was stopped. A hash join reads them once, whatever the estimate.
        let besideHistory = file.findingsReport
        if besideHistory { try db.execute("SET enable_nestloop = off") }
        defer { if besideHistory { try? db.execute("RESET enable_nestloop") } }
        var record: [UInt8] = []
        func put(_ cells: [String]) throws {
            record.removeAll(keepingCapacity: true)
            CSV.appendRecord(cells, to: &record)
            let ok = record.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, handle) == $0.count }
            if !ok { throw JobError(.cannotWrite, "writing \(url.path) failed: \(String(cString: strerror(errno)))") }
        }
        let layout = file.layout(store: settings.playReports)
        // The store of a row: in the findings reports' statement (from the finding's key), else here.
        let storeHere = settings.playReports && !file.findingsReport
        let fromQuery = layout.columns.count - (storeHere ? 1 : 0)
        try put(layout.names)
        var n = 0
        var perReason: [String: Int] = [:]
        let reasonIndex = Self.reasonColumn[file].flatMap { file.columns.firstIndex(of: $0) }
        var pairs: [String: [String: Int]] = [:]
        let answerIndex = file.columns.firstIndex(of: "answer"), outcomeIndex = file.columns.firstIndex(of: "outcome")
        let apps = settings.bundleIDList
        let productIndex = apps.isEmpty ? nil : file.columns.firstIndex(of: "product_id")
        let productApps = productIndex == nil ? [:] : try productApps(db)
        var perApp: [String: (rows: Int, money: MoneyTotals)] = [:]
        var perStore: [String: (rows: Int, money: MoneyTotals)] = [:]
        try db.copyOut("COPY (\(query(for: file))) TO STDOUT") { line in
            var cells = CopyText.fields(line).map { $0 ?? "" }
            guard cells.count == fromQuery else {
                throw JobError(
                    .internalCheck,
                    "a row of \(file.rawValue) has \(cells.count) cells where its description has "
                        + "\(fromQuery) columns; no report was written")
            }
            if storeHere { cells.append(Self.store(of: cells, in: file)) }
            try put(cells)
            money.add(layout, cells)
            n += 1
            if let reasonIndex, reasonIndex < cells.count { perReason[cells[reasonIndex], default: 0] += 1 }
            if let answerIndex, let outcomeIndex { pairs[cells[answerIndex], default: [:]][cells[outcomeIndex], default: 0] += 1 }
            if settings.playReports, let store = cells.last, !store.isEmpty {
                perStore[store, default: (0, MoneyTotals())].rows += 1
                perStore[store]!.money.add(layout, cells)
            }
            // Per app of IAP_BUNDLE_IDS: the App Store's rows (a Play row's product is Play's own).
            if let productIndex, !(settings.playReports && cells.last == "google_play") {
                let named = productApps[cells[productIndex]] ?? ""
                let app = apps.contains(named) ? named : RunSummary.otherApp
                perApp[app, default: (0, MoneyTotals())].rows += 1
                perApp[app]!.money.add(layout, cells)
            }
        }
        closed = true
        guard fclose(handle) == 0 else {
            throw JobError(.cannotWrite, "writing \(url.path) failed: \(String(cString: strerror(errno)))")
        }
        return Written(
            rows: n, perReason: perReason, money: money, answersAndOutcomes: pairs, perApp: perApp, perStore: perStore)
    }

    /// The `store` of a row of a report that is not a findings report: closed.csv's from its
    /// finding's key, input_errors.csv's from its problem (an unknown `store` is in neither),
    /// acknowledge.csv's Google Play's, consumption_requests.csv's from its transaction id, the
    /// others' (Apple's receipts, sales) the App Store's.
    static func store(of cells: [String], in file: ReportFile) -> String {
        switch file {
        case .closed: return cells.count > 1 && cells[1].hasPrefix(PlayDecide.keyPrefix) ? "google_play" : "app_store"
        case .inputErrors:
            if cells.count > 3, cells[3].hasPrefix("google_play: ") { return "google_play" }
            return cells.count > 2 && cells[2] == "store" ? "" : "app_store"
        case .acknowledge: return "google_play"
        // Apple's transaction ids are digits; a Play review's is Google's order id (GPA.…).
        case .consumptionRequests:
            return cells.count > 2 && !cells[2].isEmpty && !cells[2].utf8.allSatisfy { $0 >= 48 && $0 <= 57 } ? "google_play" : "app_store"
        default: return "app_store"
        }
    }
}
