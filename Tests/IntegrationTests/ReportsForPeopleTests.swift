import Foundation
import Reconciliation
import Testing
import XLSXReading

/// The reports for people, read as the people read them: the night's reconciliation.xlsx unzipped and parsed
/// against its CSV files, and summary.html against summary.json.
@Suite("Reports for people", .serialized, .enabled(if: Harness.hasDatabase))
struct ReportsForPeopleTests {
    typealias N = NightTests

    @Test("the workbook: every id a text cell equal to the CSV, times in the chosen zone, a sheet per report with its rows")
    func workbookMatchesTheCSVs() throws {
        let w = try N.world("people", users: 300)
        defer { w.stop() }
        let r = try w.run(["--report-timezone", "Asia/Shanghai"])
        #expect(r.status == 0, "\(r.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        let book = try XLSX(path: day.appendingPathComponent("reconciliation.xlsx").path)
        #expect(book.sheets.first?.name == "Summary")
        var checkedTime = false
        // Without Google Play configured: its acknowledge.csv is neither written nor a sheet.
        #expect(!FileManager.default.fileExists(atPath: day.appendingPathComponent(ReportFile.acknowledge.rawValue).path))
        #expect(!book.sheets.contains { $0.name == ReportFile.acknowledge.name })
        for file in ReportFile.published(play: false) {
            let name = String(file.rawValue.dropLast(4))
            let csv = try csvRecords(day.appendingPathComponent(file.rawValue))
            let sheet = try #require(book.sheets.first { $0.name == name }, "no sheet \(name)")
            #expect(sheet.rows.count == csv.count, "\(name): \(sheet.rows.count) rows in the sheet, \(csv.count) in the CSV")
            #expect(sheet.frozenRows == 1 && sheet.autoFilter != nil, "\(name)")
            let header = csv[0]
            for (c, column) in header.enumerated() {
                let letter = Self.letter(c)
                let shown = sheet.rows[0][letter]?.text ?? ""
                let isTime = ["purchase_date", "granted_at", "cancellation_date", "revocation_date", "last_attempt_at", "requested_at",
                              "answered_at", "outcome_at"].contains(column)
                #expect(shown == (isTime ? "\(column) (Asia/Shanghai)" : column), "\(name) header \(shown)")
                for (i, row) in csv.enumerated().dropFirst() where c < row.count && !row[c].isEmpty {
                    let cell = try #require(sheet.rows[i][letter], "\(name) row \(i) \(column) is missing")
                    if column.hasSuffix("_id") || column == "finding_key" || column == "grant_ids" {
                        #expect(cell.type == "inlineStr", "\(name) row \(i) \(column) is not a text cell")
                        #expect(cell.text == Self.unguarded(row[c]), "\(name) row \(i) \(column): \(cell.text) ≠ \(row[c])")
                    }
                    if isTime, let utc = UTC.parse(row[c]), cell.type == nil {
                        // The serial of the same instant in UTC+8: days since 1899-12-30.
                        let expected = (Double(utc) / 1000 + 8 * 3600) / 86_400 + 25_569
                        #expect(abs((Double(cell.text) ?? 0) - expected) < 1e-6, "\(name) row \(i) \(column)")
                        checkedTime = true
                    }
                }
            }
        }
        #expect(checkedTime, "no time cell was checked")
    }

    @Test("summary.html: self-contained, its numbers those of summary.json, in English and Chinese")
    func pageMatchesTheSummary() throws {
        let w = try N.world("page", users: 300)
        defer { w.stop() }
        #expect(try w.run().status == 0)
        let day = w.out.appendingPathComponent("2026-11-21")
        let page = try String(contentsOf: day.appendingPathComponent("summary.html"), encoding: .utf8)
        for reference in ["http:", "https:", "//", "src=", "url(", "@import", "<script", "<link"] {
            #expect(!page.contains(reference), "summary.html holds \(reference)")
        }
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let counts = try #require(summary["counts"] as? [String: Int])
        for report in ["compensate", "duplicate_grants", "clawback", "refunds"] {
            let n = try #require(counts[report])
            #expect(page.contains(">\(n)<"), "\(report) \(n) is not on the page")
        }
        let money = summary["money"] as? [String: [String: String]] ?? [:]
        for (_, kinds) in money { for (_, value) in kinds { #expect(page.contains(value), "\(value) is not on the page") } }
        #expect(page.contains("2026-11-21"))

        #expect(try w.run(["--no-verify", "--report-language", "zh"]).status == 0)
        let zh = try String(contentsOf: day.appendingPathComponent("summary.html"), encoding: .utf8)
        #expect(zh.contains("补发") && zh.contains("lang=\"zh"))
        let bad = try w.run(["--no-verify", "--report-language", "fr"])
        #expect(bad.status == 64 && bad.stderr.contains("--report-language"))
        let zone = try w.run(["--no-verify", "--report-timezone", "Mars/Olympus"])
        #expect(zone.status == 64 && zone.stderr.contains("--report-timezone"))
    }

    // MARK: helpers

    /// The CSV's formula guard is Excel's quotePrefix flag in the workbook, not a `'` in the text.
    static func unguarded(_ value: String) -> String {
        guard value.hasPrefix("'"), let next = value.dropFirst().first, "=+-@\t\r".contains(next) else { return value }
        return String(value.dropFirst())
    }

    static func letter(_ index: Int) -> String {
        var n = index + 1, s = ""
        while n > 0 { let r = (n - 1) % 26; s = String(UnicodeScalar(UInt8(65 + r))) + s; n = (n - 1) / 26 }
        return s
    }
}
