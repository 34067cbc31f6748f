import AppStore
import Foundation
import HTTP
import JobStore
import Logging
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// What the sales report step did tonight (summary.json `sales_reports`).
public struct SalesReportCounts: Sendable, Equatable {
    public var vendorNumber = ""
    public var timeZone = ""
    /// The window's first and last report day (empty when the window has no day).
    public var from = "", to = ""
    /// Days of the window held (or empty) before tonight: not asked.
    public var heldBefore = 0
    /// Days of the window not held before tonight, all due tonight; each ends in exactly one of
    /// `held`, `empty`, `notYetPublished`, `errors`, `notAsked`.
    public var asked = 0
    /// Days stored tonight with their rows, and as empty (a 404 for a day more than two days old).
    public var held: [String] = []
    public var empty: [String] = []
    /// A 404 for a day two days old or less: asked again the next night.
    public var notYetPublished: [String] = []
    /// Days whose answer was not believed (a malformed file, a refused request, no answer), and why.
    public var errors: [String: String] = [:]
    /// Days not asked tonight: App Store Connect refused the key, or the step stopped.
    public var notAsked: [String] = []
    /// Rows kept of the days held tonight.
    public var rowsKept = 0
    /// `filter[version]` in use at the end of the night (1_0, or the one Apple's 400 named).
    public var version = SalesReportRequest.firstVersion
    public var requests = 0, rateLimited = 0, retried = 0
    /// Why the step stopped early (HTTP 401 or 403, an unreachable host…), nil when it did not.
    public var skipped: String?
}

/// Apple's daily Summary Sales Report, downloaded and kept. For every report day
/// of the window (`ReportDays.window`) not held yet, `GET /v1/salesReports` through the one App
/// Store transport; a file is decompressed, read (`SummarySalesReport.parse`) and its in-app
/// purchase rows of products of ours stored with the day in one transaction; a 404 is an empty
/// day once the day is more than two days old. A held day is never asked again, so a run killed
/// at any moment asks no held day twice.
///
/// The step never stops the night: a 401 (confirmed with a fresh token) or a 403 ends only this
/// step (skipped_checks, one warning), as does an App Store Connect that does not answer; every
/// other report and the exit code are the night's own.
package struct SalesReportStep {
    let settings: JobSettings
    let connect: AppStoreConnectSettings
    let runID: Int64
    let logger: Logger
    var S: SQL { settings.jobSchema.sql }

    /// The sales reports of run `runID` with the team key of `connect`.
    package init(settings: JobSettings, connect: AppStoreConnectSettings, runID: Int64, logger: Logger) {
        (self.settings, self.connect, self.runID, self.logger) = (settings, connect, runID, logger)
    }

    /// The step sends nothing after this many seconds; the days not asked by then wait for the
    /// next night (`not_asked`). 365 days at 4 a second take about 90 seconds.
    static let longestSeconds = 600

    /// The days of tonight's window (oldest first), in `--sales-report-timezone`.
    var days: ReportDays { ReportDays(zone: TimeZone(identifier: settings.salesReportTimeZone) ?? TimeZone(identifier: "UTC")!) }

    /// Downloads the window's missing days and stores them; never fails the night.
    package func run(db: PGConnection) -> SalesReportCounts {
        var counts = SalesReportCounts()
        counts.vendorNumber = connect.vendorNumber
        counts.timeZone = settings.salesReportTimeZone
        let window = days.window(asOf: settings.asOf, windowDays: settings.windowDays)
        counts.from = window.first?.text ?? ""
        counts.to = window.last?.text ?? ""
        let night = SalesNight(step: self, db: db)
        do {
            let held = try heldDays(db, from: window.first, to: window.last)
            counts.heldBefore = held.count
            night.products = try products(db)
            night.version = try lastVersion(db) ?? SalesReportRequest.firstVersion
            let exchanges = window.filter { !held.contains($0) }.map { SalesDay(night: night, day: $0) }
            counts.asked = exchanges.count
            if !exchanges.isEmpty {
                var transport = AppStoreTransport(settings: settings, service: "App Store Connect", concurrency: 2)
                transport.connect = connect
                // A Retry-After further ahead than this ends the step; the days left wait for the next night.
                transport.longestRateLimitWaitMs = 300_000
                // Nor does a low hourly allowance (a minute's pause each time) hold the night's reports up.
                transport.stopSendingAtNs = AppStoreTransport.monotonicNanos() + UInt64(Self.longestSeconds) * 1_000_000_000
                var feed = ListFeed(exchanges)
                var breaker = OutageBreaker(wave: transport.concurrency)
                var sent = TransportCounts()
                defer {
                    counts.requests = sent.total
                    counts.rateLimited = sent.rateLimited
                    counts.retried = sent.retried
                }
                do {
                    try transport.run(&feed, breaker: &breaker, counts: &sent)
                } catch {
                    counts.skipped = "the sales report step stopped: \(JobError.from(error, doing: "asking App Store Connect").message)"
                }
            }
            for e in exchanges {
                switch e.outcome {
                case .held(let rows): counts.held.append(e.day.text); counts.rowsKept += rows
                case .empty: counts.empty.append(e.day.text)
                case .notYetPublished: counts.notYetPublished.append(e.day.text)
                case .error(let reason): counts.errors[e.day.text] = reason
                case .refused(let reason):
                    counts.notAsked.append(e.day.text)
                    if counts.skipped == nil { counts.skipped = reason }
                case nil: counts.notAsked.append(e.day.text)
                }
            }
            if let failure = night.storeError { throw failure }
            try recordErrors(db, counts.errors)
        } catch {
            counts.skipped =
                counts.skipped ?? "the sales report step stopped: \(JobError.from(error, doing: "storing sales reports").message)"
        }
        counts.version = night.version
        if counts.skipped == nil, !counts.notAsked.isEmpty {
            logger.notice(
                "sales report days left for the next night (the step's \(Self.longestSeconds) s were used up)",
                metadata: ["not_asked": "\(counts.notAsked.count)"])
        }
        for (day, reason) in counts.errors.sorted(by: { $0.key < $1.key }) {
            logger.warning(
                "a sales report day was not believed; it is asked again next night",
                metadata: ["report_date": "\(day)", "reason": "\(reason)"])
        }
        return counts
    }

    /// The days of the window held already (or empty).
    func heldDays(_ db: PGConnection, from: ReportDay?, to: ReportDay?) throws -> Set<ReportDay> {
        guard let from, let to else { return [] }
        let r = try db.query(
            """
            SELECT to_char(report_date, 'YYYY-MM-DD') FROM \(S).sales_report_days
            WHERE vendor_number = \(connect.vendorNumber) AND report_date BETWEEN \(from.text)::date AND \(to.text)::date
            """)
        return Set((0..<r.rowCount).compactMap { r.value($0, 0).flatMap(ReportDay.init) })
    }

    /// The version the newest stored day was read with: a night starts with the version Apple
    /// last answered to (a 400 naming another still switches it), not with `1_0` again, which
    /// would cost a shop whose reports need `1_3` one refused request a night.
    func lastVersion(_ db: PGConnection) throws -> String? {
        let r = try db.query(
            """
            SELECT version FROM \(S).sales_report_days WHERE vendor_number = \(connect.vendorNumber)
            ORDER BY stored_at DESC, report_date DESC LIMIT 1
            """)
        guard r.rowCount > 0, let version = r.value(0, 0), SalesReportRequest.isVersion(version) else { return nil }
        return version
    }

    /// `iap_products.product_id`: a report row is ours when its SKU is one of them.
    func products(_ db: PGConnection) throws -> Set<String> {
        let r = try db.query(
            """
            SELECT DISTINCT product_id FROM \(ident: settings.sourceSchema).iap_products WHERE product_id IS NOT NULL
            """)
        return Set((0..<r.rowCount).compactMap { r.value($0, 0) })
    }

    /// A held day and its rows, in one transaction: never half-stored.
    func store(_ db: PGConnection, day: ReportDay, version: String, fileRows: Int, rows: [(line: Int, row: SalesReportRow)]) throws {
        try db.transaction {
            try db.query(
                """
                INSERT INTO \(S).sales_report_days (vendor_number, report_date, state, version, time_zone, file_rows, kept_rows, run_id)
                VALUES (\(connect.vendorNumber), \(day.text)::date, 'held', \(version),
                        \(settings.salesReportTimeZone), \(fileRows), \(rows.count), \(runID))
                """)
            guard !rows.isEmpty else { return }
            func column(_ value: (SalesReportRow) -> String) -> [String] { rows.map { value($0.row) } }
            let lines = rows.map { String($0.line) }, skus = column(\.sku), types = column(\.productType)
            let countries = column(\.countryCode), customerCurrencies = column(\.customerCurrency)
            let prices = column(\.customerPrice), units = column(\.units), proceeds = column(\.developerProceeds)
            let proceedsCurrencies = column(\.proceedsCurrency), cmbs = column { $0.cmb ?? "" }
            let vendor = connect.vendorNumber, date = day.text
            try db.query(
                """
                INSERT INTO \(S).sales_report_rows (vendor_number, report_date, line_number, product_id, product_type, restore,
                    country_code, customer_currency, customer_price, units, developer_proceeds, proceeds_currency, cmb)
                SELECT \(vendor), \(date)::date, x.line, x.sku, x.type, x.type = 'IA3', x.country, x.ccur,
                       x.price::numeric, x.units::numeric, x.proceeds::numeric, x.pcur, nullif(x.cmb, '')
                FROM unnest(\(lines)::int[], \(skus)::text[], \(types)::text[], \(countries)::text[],
                            \(customerCurrencies)::text[], \(prices)::text[], \(units)::text[], \(proceeds)::text[],
                            \(proceedsCurrencies)::text[], \(cmbs)::text[])
                     AS x(line, sku, type, country, ccur, price, units, proceeds, pcur, cmb)
                """)
        }
    }

    /// An empty day (Apple's 404 for a day more than two days old).
    func storeEmpty(_ db: PGConnection, day: ReportDay, version: String) throws {
        try db.query(
            """
            INSERT INTO \(S).sales_report_days (vendor_number, report_date, state, version, time_zone, file_rows, kept_rows, run_id)
            VALUES (\(connect.vendorNumber), \(day.text)::date, 'empty', \(version), \(settings.salesReportTimeZone), 0, 0, \(runID))
            """)
    }

    /// Tonight's errors, for the operator (the summary has them too).
    func recordErrors(_ db: PGConnection, _ errors: [String: String]) throws {
        guard !errors.isEmpty else { return }
        let sorted = errors.sorted { $0.key < $1.key }
        try db.query(
            """
            INSERT INTO \(S).sales_report_errors (run_id, vendor_number, report_date, reason)
            SELECT \(runID), \(connect.vendorNumber), d::date, r
            FROM unnest(\(sorted.map(\.key))::text[], \(sorted.map(\.value))::text[]) AS x(d, r)
            ON CONFLICT (run_id, vendor_number, report_date) DO UPDATE SET reason = EXCLUDED.reason, at = now()
            """)
    }
}

/// What the night's day exchanges share: the session, the version in use, the products.
/// Used on the transport's thread only.
final class SalesNight {
    let step: SalesReportStep
    let db: PGConnection
    var products: Set<String> = []
    /// `filter[version]` asked now; switched once a night to the version a 400 names.
    var version = SalesReportRequest.firstVersion
    var switchedVersion = false
    /// A day that could not be stored (the database): thrown once the transport has run.
    var storeError: Error?

    init(step: SalesReportStep, db: PGConnection) { (self.step, self.db) = (step, db) }
}

/// One report day as the transport sees it.
final class SalesDay: AppStoreExchange {
    enum Outcome: Equatable {
        case held(rows: Int), empty, notYetPublished, error(String), refused(String)
    }

    let night: SalesNight
    let day: ReportDay
    var retry = RetryPolicy.State()
    var sends = 0
    private(set) var outcome: Outcome?

    init(night: SalesNight, day: ReportDay) { (self.night, self.day) = (night, day) }

    var request: AppStoreRequest {
        SalesReportRequest.request(vendorNumber: night.step.connect.vendorNumber, day: day, version: night.version)
    }

    func read(_ reply: AppStoreReply) throws -> Answer {
        switch reply {
        case .answer(_, let body):
            let rows: [SalesReportRow]
            do {
                let text = try Gzip.decompress(body)
                switch SummarySalesReport.parse(text, day: day) {
                case .success(let r): rows = r
                case .failure(let problem): return malformed(problem.reason)
                }
            } catch {
                return malformed(error.reason)
            }
            // The rows of products of ours with an in-app purchase type; restores kept apart.
            let kept = rows.enumerated().filter { $0.element.isInAppPurchase && night.products.contains($0.element.sku) }
                .map { (line: $0.offset + 2, row: $0.element) }
            try night.step.store(night.db, day: day, version: night.version, fileRows: rows.count, rows: kept)
            outcome = .held(rows: kept.count)
            return Answer(status: nil, answerClass: .ok)
        case .unauthorized:
            // Only after the transport's doubt was confirmed by a second 401 with a fresh token.
            outcome = .refused(SalesReports.refusedLine(status: 401))
            return Answer(status: nil, answerClass: .reject, problem: "HTTP 401")
        default:
            return AppStoreTransport.answer(reply)
        }
    }

    private func malformed(_ reason: String) -> Answer {
        outcome = .error("the file is not believed: \(reason)")
        return Answer(status: nil, answerClass: .reject, problem: reason)
    }

    func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
        switch decision {
        case .sendAgain, .switchEnvironment, .stop:
            return false
        case .leaveForNextRun, .environmentsDisagree, .rejectedAfterRepeated21002:
            outcome = .error("no answer after \(retry.attemptsThisRun) attempts (\(answer.problem ?? "?"))")
            return false
        case .definitive:
            break
        }
        if outcome != nil { return false }
        guard case .response(let status, let body) = completion.outcome else {
            outcome = .error(answer.problem ?? "no answer")
            return false
        }
        let detail = SalesReportRequest.errorDetail(body)
        switch status {
        case 404:
            // "There were no sales for the date specified": believed once the day is old enough.
            if night.step.days.mayKeepEmpty(day, asOf: night.step.settings.asOf) {
                do {
                    try night.step.storeEmpty(night.db, day: day, version: SalesReportRequest.version(of: asked) ?? night.version)
                    outcome = .empty
                } catch {
                    night.storeError = night.storeError ?? error
                    outcome = .error("could not be stored")
                }
            } else {
                outcome = .notYetPublished
            }
            return false
        case 403:
            outcome = .refused(SalesReports.refusedLine(status: 403))
            return false
        case 400:
            let askedVersion = SalesReportRequest.version(of: asked)
            if let detail, let latest = SalesReportRequest.latestVersion(inDetail: detail), latest != askedVersion {
                if night.version != askedVersion {
                    // Another day already learned the version: asked again with it.
                    return true
                }
                if !night.switchedVersion {
                    night.switchedVersion = true
                    night.version = latest
                    night.step.logger.notice(
                        "App Store Connect names another version of the sales report; asking with it tonight",
                        metadata: ["asked": "\(askedVersion ?? "?")", "version": "\(latest)"])
                    return true
                }
            }
            outcome = .error("HTTP 400" + (detail.map { ": " + $0 } ?? ""))
            return false
        default:
            outcome = .error("HTTP \(status)" + (detail.map { ": " + $0 } ?? ""))
            return false
        }
    }
}

/// Names the sales reports' checks share with the night's summary.
package enum SalesReports {
    /// The `skipped_checks` entry (and warning) of a night App Store Connect refused the team key.
    package static let checkPrefix = "sales_reports "

    static func refusedLine(status: Int) -> String {
        (status == 401
            ? "App Store Connect refused our team key's token (HTTP 401, again with a fresh token a second later)"
            : "App Store Connect refused the request (HTTP 403: the team key may not read sales reports)")
            + ": check ASC_ISSUER_ID, ASC_KEY_ID, ASC_PRIVATE_KEY_FILE and ASC_VENDOR_NUMBER, and that the key has the "
            + "Sales, Finance or Admin role"
    }
}
