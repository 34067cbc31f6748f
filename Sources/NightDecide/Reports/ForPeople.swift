import Foundation
import Postgres
import Reconciliation
import SummaryPage
import Workbook

/// The reports for people, written beside the CSVs into the same temporary folder, so
/// they are swapped into place together: `reconciliation.xlsx` (the CSVs as a workbook, ids as
/// text, times in `--report-timezone`) and `summary.html` (one self-contained page: counts, money,
/// the oldest open finding, 30 nights of history from `{S}.runs` and `{S}.findings`).
extension ReportWriter {
    /// `--report-timezone`, checked when the options were read.
    var reportZone: TimeZone { TimeZone(identifier: settings.reportTimeZone) ?? TimeZone(identifier: "UTC")! }

    /// reconciliation.xlsx, from the CSV files of the temporary folder.
    func writeWorkbook(summary: RunSummary, oldest: SummaryPage.OldestFinding?) throws {
        do {
            let reports = settings.reportFiles
            try Workbook.write(
                csvFolder: folder.temp, reports: reports,
                dataRows: reports.map { summary.counts[$0.name] ?? 0 },
                summary: summaryLines(summary, oldest: oldest),
                timeZone: reportZone, to: folder.file("reconciliation.xlsx"))
        } catch let failure as Workbook.Failure {
            throw cannotWrite(failure.path, failure.reason)
        }
    }

    /// summary.html.
    func writePage(summary: RunSummary, oldest: SummaryPage.OldestFinding?, nights: [SummaryPage.Night]) throws {
        var input = SummaryPage.Input(
            asOf: UTC.timestamp(summary.asOf), runID: summary.runID, counts: summary.counts, reasons: summary.reasons,
            money: RunSummary.texts(summary.money), oldestOpen: oldest, history: nights)
        input.coverage = summary.coverage
        input.held = summary.held.map(\.text)
        input.refundRequests = Dictionary(uniqueKeysWithValues: summary.refundRequests.figures.map { ($0.name, $0.value) })
        // IAP_BUNDLE_IDS's order, then rows of products of no listed app.
        let order = settings.bundleIDList + summary.apps.keys.filter { !settings.bundleIDList.contains($0) }.sorted()
        input.apps = order.compactMap { app in
            summary.apps[app].map {
                SummaryPage.App(
                    bundleID: app, counts: $0.counts, money: RunSummary.texts($0.money),
                    requests: $0.requests.values.reduce(0, +), refused: $0.refused)
            }
        }
        input.stores = ["app_store", "google_play"].compactMap { store in
            summary.stores[store].map {
                SummaryPage.App(bundleID: store, counts: $0.counts, money: RunSummary.texts($0.money), requests: 0, refused: false)
            }
        }
        let zone = reportZone
        if zone.identifier != "UTC" {
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = zone
            f.dateFormat = "yyyy-MM-dd HH:mm"
            input.asOfInZone = (zone.identifier, f.string(from: Date(timeIntervalSince1970: Double(summary.asOf) / 1000)))
        }
        let language = Language(rawValue: settings.reportLanguage) ?? .en
        do {
            try FileSystem.write(folder.file("summary.html"), Array(SummaryPage.render(input, language: language).utf8))
        } catch let e as FileSystem.Failure {
            throw cannotWrite(e.path, e.reason)
        }
    }

    /// The Summary sheet: what summary.json says, as label and value.
    func summaryLines(_ s: RunSummary, oldest: SummaryPage.OldestFinding?) -> [(label: String, value: String)] {
        // A held night's sheet opens with why (docs/contract.md, "Held nights").
        var lines: [(label: String, value: String)] =
            s.held.isEmpty
            ? []
            : [
                (
                    "HELD",
                    "not published: do not pay out or claw back from these lists; "
                        + "`iap-reconcile release \(UTC.date(s.asOf)) --note TEXT` publishes them once they are checked"
                )
            ] + s.held.map { ("HELD: \($0.check)", $0.text) }
        lines += [
            ("as_of", UTC.timestamp(s.asOf)), ("run_id", String(s.runID)),
            (
                "window",
                "\(s.windowDays) days: \(UTC.timestamp(s.asOf - EpochMillis(s.windowDays) * 86_400_000)) to \(UTC.timestamp(s.asOf))"
            ),
        ]
        for file in settings.reportFiles {
            let name = file.name
            lines.append(("rows: \(name)", String(s.counts[name] ?? 0)))
            for (reason, n) in (s.reasons[name] ?? [:]).sorted(by: { $0.key < $1.key }) {
                lines.append(("rows: \(name), \(reason)", String(n)))
            }
        }
        for (currency, kinds) in s.money.sorted(by: { $0.key < $1.key }) {
            for (kind, milli) in kinds.sorted(by: { $0.key < $1.key }) {
                lines.append(("money: \(kind) (\(currency))", Money.text(milli, currency: currency)))
            }
        }
        if s.refundRequests.requests > 0 {
            for f in s.refundRequests.figures { lines.append(("refund requests: \(f.name)", f.value)) }
        }
        // Per app, when the night has two or more (summary.json `apps`).
        if s.apps.count >= 2 {
            for (app, f) in s.apps.sorted(by: { $0.key < $1.key }) {
                for (file, n) in f.counts.sorted(by: { $0.key < $1.key }) { lines.append(("app \(app): rows: \(file)", String(n))) }
                for (currency, kinds) in f.money.sorted(by: { $0.key < $1.key }) {
                    for (kind, milli) in kinds.sorted(by: { $0.key < $1.key }) {
                        lines.append(("app \(app): money: \(kind) (\(currency))", Money.text(milli, currency: currency)))
                    }
                }
                lines.append(("app \(app): App Store requests", String(f.requests.values.reduce(0, +))))
                if f.refused { lines.append(("app \(app): key refused (HTTP 401)", "not swept tonight")) }
            }
        }
        // Per store, with Google Play configured (summary.json `stores`).
        for (store, f) in s.stores.sorted(by: { $0.key < $1.key }) {
            for (file, n) in f.counts.sorted(by: { $0.key < $1.key }) { lines.append(("store \(store): rows: \(file)", String(n))) }
            for (currency, kinds) in f.money.sorted(by: { $0.key < $1.key }) {
                for (kind, milli) in kinds.sorted(by: { $0.key < $1.key }) {
                    lines.append(("store \(store): money: \(kind) (\(currency))", Money.text(milli, currency: currency)))
                }
            }
        }
        if let c = s.coverage {
            lines.append(("Apple's sales reports", c.headline(chinese: false)))
            for p in c.products { lines.append(("Apple's sales reports: \(p.productID)", c.line(p, chinese: false))) }
            if c.shortfall { lines.append(("Apple's sales reports: what to do", SalesCoverage.advice(chinese: false))) }
        }
        if let oldest { lines.append(("oldest open finding", "\(oldest.report) \(oldest.key), first seen \(oldest.firstSeen)")) }
        if !s.skippedChecks.isEmpty { lines.append(("checks not done", s.skippedChecks.joined(separator: "; "))) }
        return lines
    }

    func oldestOpenFinding(_ db: PGConnection) throws -> SummaryPage.OldestFinding? {
        let r = try db.query(
            """
            SELECT report, finding_key, to_char(first_seen, 'YYYY-MM-DD') FROM \(S).findings
            WHERE closed_on IS NULL ORDER BY first_seen, finding_key COLLATE "C" LIMIT 1
            """)
        guard r.rowCount > 0, let report = r.value(0, 0), let key = r.value(0, 1), let first = r.value(0, 2) else { return nil }
        return SummaryPage.OldestFinding(report: String(report.dropLast(4)), key: key, firstSeen: first)
    }

    /// Findings per night for the last 30 nights that wrote reports (this one included): opened
    /// (first seen that night), closed that night, and still open at its end, per report.
    func history(_ db: PGConnection) throws -> [SummaryPage.Night] {
        let day = UTC.date(settings.asOf)
        var nights: [String: [String: SummaryPage.Tally]] = [:]
        try db.copyOut(
            """
            COPY (
            WITH nights AS (
                SELECT DISTINCT (as_of AT TIME ZONE 'UTC')::date AS d FROM \(S).runs
                WHERE command = 'run' AND exit_code = 0 AND (as_of AT TIME ZONE 'UTC')::date < \(literal: .date(day))
                UNION SELECT \(literal: .date(day))
            ), last AS (SELECT d FROM nights ORDER BY d DESC LIMIT \(literal: .int(SummaryPage.nights)))
            SELECT to_char(l.d, 'YYYY-MM-DD'), f.report,
                   count(*) FILTER (WHERE f.first_seen = l.d),
                   count(*) FILTER (WHERE f.closed_on = l.d),
                   count(*) FILTER (WHERE f.closed_on IS NULL OR f.closed_on > l.d)
            FROM last l JOIN \(S).findings f ON f.first_seen <= l.d AND (f.closed_on IS NULL OR f.closed_on >= l.d)
            GROUP BY 1, 2
            UNION ALL SELECT to_char(d, 'YYYY-MM-DD'), NULL, 0, 0, 0 FROM last
            ) TO STDOUT
            """
        ) { line in
            let f = CopyText.fields(line)
            guard f.count == 5, let date = f[0] else { return }
            var reports = nights[date] ?? [:]
            if let report = f[1] {
                reports[String(report.dropLast(4))] = SummaryPage.Tally(
                    opened: Int(f[2] ?? "0") ?? 0, closed: Int(f[3] ?? "0") ?? 0, stillOpen: Int(f[4] ?? "0") ?? 0)
            }
            nights[date] = reports
        }
        return nights.map { SummaryPage.Night(date: $0.key, reports: $0.value) }.sorted { $0.date < $1.date }
    }
}
