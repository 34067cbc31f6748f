// `iap-sim seed`: the scenario census, the expected report files, the refund list and the Apple
// truth (here), and the source relations in PostgreSQL (SeedTables.swift).

import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation

public enum Seeder {
    /// Checks an identifier for use in SQL text (schema names cannot travel as parameters), and
    /// quotes it.
    static func ident(_ name: String) throws -> SQL {
        let ok =
            !name.isEmpty && name.utf8.count <= 63
            && name.utf8.enumerated().allSatisfy { i, c in
                (c >= 97 && c <= 122) || c == 95 || (i > 0 && c >= 48 && c <= 57)
            }
        guard ok else { throw SimulatorError(message: "--schema must be a lower-case SQL identifier, got '\(name)'") }
        return "\(ident: name)"
    }

    public static func run(_ options: SeedOptions, progress: @escaping @Sendable (String) -> Void = { _ in }) throws
        -> SeedSummary
    {
        let bundles = options.bundles
        guard !bundles.isEmpty, Set(bundles).count == bundles.count else {
            throw SimulatorError(message: "--bundle: give each app once, at least one")
        }
        for b in bundles where b.isEmpty || b == Catalog.otherBundle || b.contains(where: { $0 == "," || $0.isWhitespace }) {
            throw SimulatorError(
                message:
                    "--bundle: '\(b)' cannot be an app of the shop (\(Catalog.otherBundle) is the other app of the wrong_bundle scenarios)")
        }
        var settings = GeneratorSettings(
            users: options.users, seed: options.seed, asOf: options.asOf,
            catalog: Catalog(bundle: bundles[0]),
            refundsServed: options.refundsPath != nil, badRows: options.badRows)
        settings.otherApps = bundles.dropFirst().map { Catalog(bundle: $0) }
        let signer = try options.pkiDirectory.map { folder in
            var signer = try UploadSigner(pki: TestPKI.loadOrCreate(directory: folder))
            if options.pkcs7Receipts { signer.receipts = try ReceiptPKI.loadOrCreate(directory: folder) }
            return signer
        }
        settings.signing = signer != nil
        settings.storeKit2Share = options.storeKit2Share
        settings.apiSweeps = options.appleTruthPath != nil
        settings.apiBench = options.apiBench
        guard SeedOptions.extraFindingsRange.contains(options.extraFindings) else {
            throw SimulatorError(
                message: "--extra-findings must be between \(SeedOptions.extraFindingsRange.lowerBound) "
                    + "and \(SeedOptions.extraFindingsRange.upperBound), got \(options.extraFindings)")
        }
        settings.extraFindings = options.extraFindings
        guard (0...1).contains(options.unseenShare) else {
            throw SimulatorError(message: "--unseen-share must be between 0 and 1, got \(options.unseenShare)")
        }
        settings.unseenShare = options.unseenShare
        let plan = ScenarioPlan(settings: settings)
        let s = try ident(options.schema)
        // The expected files include refunds.csv (the report): a refund list of that
        // name in the same folder would be overwritten, and the simulator would then read the report
        // as its refund list. Refuse before writing anything.
        if let list = options.refundsPath, let dir = options.expectedDir,
            URL(fileURLWithPath: list).standardizedFileURL.path
                == URL(fileURLWithPath: dir).appendingPathComponent(ExpectedReport.refunds.rawValue).standardizedFileURL.path
        {
            throw SimulatorError(
                message: "--refunds \(list) is where --expected writes the expected refunds.csv report; "
                    + "give the refund list another name (e.g. refund-list.csv)")
        }

        // Google Play's players (its own random stream: the App Store's data stay as they are).
        var play: PlayWorld?
        if options.playUsers > 0 {
            if let problem = PlayWorld.clockProblem(asOf: options.asOf, realNow: options.realNow) {
                throw SimulatorError(message: "--play-users: \(problem)")
            }
            let world = PlayWorld(
                users: options.playUsers, package: options.playPackage, asOf: options.asOf, seed: options.seed,
                appleUsers: options.users)
            if let problem = world.truth.problem {
                throw SimulatorError(message: "--play-package \(options.playPackage): Google would not answer for it: \(problem)")
            }
            play = world
        }

        // 1. Expected files, refund list and the scenario census (in memory: findings only).
        var summary = SeedSummary()
        var expected: [ExpectedReport: [[String]]] = [:]
        var refundLines = ""
        var consumptionRows: [ConsumptionRequests.ExpectedRow] = []
        plan.forEach { d in
            if let sc = d.scenario {
                summary.scenarios[sc.rawValue, default: 0] += 1
                summary.users += sc.userSlots
            }
            var app = summary.apps[d.bundle] ?? AppCounts()
            app.users += d.scenario?.userSlots ?? 0
            app.orders += d.orders.count
            app.receipts += d.receipts.count
            app.grants += d.grants.count
            app.refunds += d.refunds.count + d.appleRefunds.count
            app.apiOnlyPurchases += d.appleOnly.count
            for (file, rows) in [
                (ExpectedReport.compensate, d.compensate), (.duplicateGrants, d.duplicates),
                (.clawback, d.clawback), (.inputErrors, d.inputErrors), (.refunds, d.refundRows),
                (.unattributed, d.unattributed),
            ] {
                app.expected[file.rawValue, default: 0] += rows.count
            }
            expected[.compensate, default: []] += d.compensate
            expected[.duplicateGrants, default: []] += d.duplicates
            expected[.clawback, default: []] += d.clawback
            expected[.inputErrors, default: []] += d.inputErrors
            expected[.refunds, default: []] += d.refundRows
            expected[.unattributed, default: []] += d.unattributed
            for r in d.refunds { refundLines += RefundList.line(transactionID: r.transactionID, r.refund) }
            summary.refunds += d.refunds.count
            summary.apiOnlyRefunds += d.appleRefunds.count
            summary.apiOnlyPurchases += d.appleOnly.count
            if settings.apiSweeps {
                let facts = ConsumptionRequests.facts(d, settings: settings)
                summary.consumptionRequests += facts.count
                summary.consumptionExpired += facts.filter(\.expired).count
                summary.consumptionDelivered += facts.filter(\.delivered).count
                consumptionRows += ConsumptionRequests.expectedRows(facts, settings: settings)
                app.consumptionRequests += facts.count
                app.expected[ReportFile.consumptionRequests.rawValue, default: 0] += facts.count
            }
            summary.apps[d.bundle] = app
        }
        for file in ExpectedReport.allCases { summary.expected[file.rawValue] = expected[file]?.count ?? 0 }
        if let path = options.refundsPath {
            try write(refundLines, to: path)
        }
        if let play {
            summary.playFamilies = play.census
            summary.playPurchases = play.truth.purchases.count
            summary.playVoided = play.truth.voided.count
            summary.playNotifications = play.truth.notifications.count
            if let path = options.playTruthPath { try write(play.truth.fileText(), to: path) }
        }
        if let path = options.appleTruthPath {
            let n = try AppleTruthWriter.write(plan: plan, refundsServed: options.refundsPath != nil, to: path)
            summary.unseenPurchases = n.unseen
            progress("apple truth: \(n.all) transactions in \(path), \(n.unseen) of them purchases the shop never saw")
        }
        if let dir = options.expectedDir {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            // The simulator publishes a sales report day by its wall clock (08:00 Los Angeles the day
            // after): the nights that follow the seed see what is published now.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            // Apple's proceeds of the findings' transactions, when the nights read sales reports.
            var proceeds: [String: ExpectedProceeds.Unit]?
            if options.expectProceeds, options.appleTruthPath != nil {
                proceeds = ExpectedProceeds.perUnit(
                    plan: plan, refundsServed: options.refundsPath != nil,
                    zone: try zone(options), clock: now)
            }
            // Every file, with its header even when no row is expected. With Google Play every
            // report ends with `store`, Play's rows beside the App Store's (Play's have no proceeds).
            for file in ExpectedReport.allCases {
                var rows = ExpectedProceeds.add(expected[file] ?? [], file, perUnit: proceeds)
                if let play {
                    rows =
                        rows.map { $0 + [Store.appStore] }
                        + ExpectedProceeds.add(play.expected[file] ?? [], file, perUnit: nil).map { $0 + [Store.googlePlay] }
                    summary.expected[file.rawValue] = rows.count
                }
                try writeReport(file, rows, dir: dir, store: play != nil)
            }
            // The night after `respond --now <as-of> --send` lists the requests (no truth: none).
            try writeConsumptionRequests(consumptionRows, dir: dir, store: play != nil)
            if let play {
                summary.expected[ReportFile.acknowledge.rawValue] = play.acknowledge.count
                try writeAcknowledge(play, dir: dir)
            }
            // Apple's sales reports against what the nights learn (no truth: no sales reports).
            var coverage: [[String]] = []
            if options.appleTruthPath != nil {
                coverage = SalesCoverage.rows(
                    plan: plan, refundsServed: options.refundsPath != nil, zone: try zone(options),
                    clock: now)
            }
            summary.expected[SalesCoverage.file] = coverage.count
            let store = play == nil ? [] : [Store.appStore]
            var text = CSV.record(SalesCoverage.columns + (play == nil ? [] : ["store"]))
            for row in SalesCoverage.sorted(coverage) { text += CSV.record(row + store) }
            try write(text, to: (dir as NSString).appendingPathComponent(SalesCoverage.file))
        }
        summary.expected[ReportFile.consumptionRequests.rawValue] = consumptionRows.count

        // 2. The source relations.
        summary.rows = try SeedTables.load(
            plan, settings: settings, options: options, play: play, schema: s, signer: signer,
            refundLines: refundLines, progress: progress)
        summary.consents = summary.rows["iap_consents"] ?? 0
        summary.consumptionRows = summary.rows["iap_consumption"] ?? 0
        return summary
    }

    /// The zone of the sales report days.
    static func zone(_ options: SeedOptions) throws -> TimeZone {
        guard let zone = TimeZone(identifier: options.salesReportTimeZone) else {
            throw SimulatorError(message: "--sales-report-timezone: not a time zone: \(options.salesReportTimeZone)")
        }
        return zone
    }

    /// Rows sorted by comparing cells as UTF-8 byte arrays, first column first.
    static func sortedRows(_ rows: [[String]]) -> [[String]] {
        rows.sorted { a, b in
            for (x, y) in zip(a, b) where x != y {
                return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            }
            return a.count < b.count
        }
    }

    /// A report's `store` cells (contract, "Google Play's lists").
    enum Store {
        static let appStore = "app_store", googlePlay = "google_play"
    }

    /// `store`: the rows already end with their store; the header gets the column.
    static func writeReport(_ file: ExpectedReport, _ rows: [[String]], dir: String, store: Bool = false) throws {
        var text = CSV.record(file.columns + (store ? ["store"] : []))
        for row in sortedRows(rows) { text += CSV.record(row) }
        try write(text, to: (dir as NSString).appendingPathComponent(file.rawValue))
    }

    /// consumption_requests.csv: the night's columns, sorted as the night sorts them (by the
    /// request's time, then its notification UUID), not by the first cell. `store`: every request
    /// is Apple's (the generated Play truth asks for no refund review).
    static func writeConsumptionRequests(_ rows: [ConsumptionRequests.ExpectedRow], dir: String, store: Bool = false) throws {
        var text = CSV.record(ReportFile.consumptionRequests.columns + (store ? ["store"] : []))
        for row in ConsumptionRequests.sorted(rows) { text += CSV.record(row.cells + (store ? [Store.appStore] : [])) }
        try write(text, to: (dir as NSString).appendingPathComponent(ReportFile.consumptionRequests.rawValue))
    }

    /// acknowledge.csv: Play's purchases nobody acknowledged, most urgent first (`acknowledge_by`,
    /// then `transaction_id`), each row ending `google_play`.
    static func writeAcknowledge(_ play: PlayWorld, dir: String) throws {
        var text = CSV.record(ReportFile.acknowledge.columns + ["store"])
        let rows = play.acknowledge.sorted { a, b in
            a.by != b.by ? a.by < b.by : Array(a.tid.utf8).lexicographicallyPrecedes(Array(b.tid.utf8))
        }
        for row in rows { text += CSV.record(row.cells + [Store.googlePlay]) }
        try write(text, to: (dir as NSString).appendingPathComponent(ReportFile.acknowledge.rawValue))
    }

    static func write(_ text: String, to path: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw SimulatorError(message: "cannot write \(path): \(error.localizedDescription)")
        }
    }
}
