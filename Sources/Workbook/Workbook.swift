import Foundation
import Synchronization
import Reconciliation

/// `reconciliation.xlsx` (contract §6, issue 12): the night's report CSVs as one workbook for
/// customer service and finance, who open the reports in Excel or WPS. The CSVs stay the
/// machines' copy; this is built from them after they are written, so both hold the same rows.
///
/// What a person gets, and why:
/// - a first "Summary" sheet: the label/value pairs the caller gives, the zone times are shown
///   in, then one row per report (rows, and a link to its sheet);
/// - one sheet per report, in the order given, named after the report (`compensate`);
/// - every id and text column as text cells (inline strings), never numbers: Excel keeps 15
///   significant digits, so a 16-digit `transaction_id` stored as a number comes back wrong;
/// - `quantity`, `attempts`, `amount`, `refunded_amount` as numbers, so they sum and sort;
/// - times (`purchase_date`, `granted_at`, …: ISO 8601 UTC in the CSV) as date-time cells in
///   `timeZone`, the header naming the zone (`purchase_date (Asia/Shanghai)`), because the team
///   works in its own zone and "17:30Z" is the next morning for them;
/// - dates (`first_seen`, `closed_on`) as date cells of the UTC date, unchanged: the contract
///   defines them as UTC dates, and a date without a time cannot be moved to another zone;
/// - the header row frozen and an autofilter on it; columns as wide as their content (6 to 60);
/// - the formula guard kept: a CSV cell `'=…` becomes the text `=…` with Excel's own
///   leading-apostrophe flag (`quotePrefix`), so it shows the value, stays text when edited,
///   and never runs;
/// - a report over `dataRowsPerSheet` rows (Excel's limit: 1,048,576 rows, header included)
///   goes on in `compensate (2)`, `compensate (3)`, … rather than being cut.
///
/// Memory does not grow with rows: each CSV is read one record at a time, each sheet's XML is
/// streamed to a temporary file next to `path` and deflated into the zip from that file.
public enum Workbook {
    /// Excel's rows per sheet (1,048,576) less the header row.
    public static let maxDataRowsPerSheet = 1_048_575

    /// Why the workbook could not be written: the file concerned and what went wrong.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Writes the workbook to `path` (a temporary file in the same folder, renamed into place,
    /// so a reader never opens half a workbook). Reads `<csvFolder>/<report.rawValue>` for each
    /// report; a missing CSV is a `Failure`.
    ///
    /// - Parameter dataRowsPerSheet: rows per sheet before a report continues on the next;
    ///   only tests pass another value than Excel's limit.
    public static func write(csvFolder: String, reports: [ReportFile], summary: [(label: String, value: String)],
                             timeZone: TimeZone, to path: String,
                             dataRowsPerSheet: Int = maxDataRowsPerSheet) throws {
        precondition(dataRowsPerSheet > 0 && dataRowsPerSheet <= maxDataRowsPerSheet)
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let scratch = folder + "/.\(url.lastPathComponent).tmp-\(getpid())"
        let fm = FileManager.default
        try? fm.removeItem(atPath: scratch)
        do {
            try fm.createDirectory(atPath: scratch, withIntermediateDirectories: false)
        } catch {
            throw Failure(path: scratch, reason: "cannot create a temporary folder: \(error.localizedDescription)")
        }
        defer { try? fm.removeItem(atPath: scratch) }

        // The reports' sheets are independent files: written side by side, one report per core
        // (the night's other work is done by now), then zipped in the reports' order.
        let written = Mutex<[Int: Result<[SheetPart], any Error>]>([:])
        let next = Mutex(0)
        let width = max(1, min(reports.count, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.concurrentPerform(iterations: width) { _ in
            while true {
                let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                guard i < reports.count else { return }
                let report = reports[i]
                let outcome = Result {
                    try writeReport(csv: csvFolder + "/" + report.rawValue, name: String(report.rawValue.dropLast(4)),
                                    zone: ZoneOffsets(timeZone), scratch: scratch, tag: "r\(i)",
                                    rowsPerSheet: dataRowsPerSheet)
                }
                written.withLock { $0[i] = outcome }
            }
        }
        var sheets: [SheetPart] = []
        var perReport: [(name: String, rows: Int, firstSheet: String)] = []
        for (i, report) in reports.enumerated() {
            guard let outcome = written.withLock({ $0[i] }) else {
                throw Failure(path: csvFolder + "/" + report.rawValue, reason: "the report's sheet was not written")
            }
            let parts = try outcome.get()
            perReport.append((String(report.rawValue.dropLast(4)), parts.reduce(0) { $0 + $1.rows - 1 }, parts[0].name))
            sheets += parts
        }

        let summarySheet = try SheetBody(name: "Summary", path: scratch + "/sheet0.xml", frozenHeader: false)
        for item in summary + [(label: "time zone of times", value: timeZone.identifier)] {
            try summarySheet.append([.text(item.label, .header), .text(item.value, .text)])
        }
        try summarySheet.append([])
        try summarySheet.append([.text("report", .header), .text("rows", .header), .text("sheet", .header)])
        for report in perReport {
            try summarySheet.append([.text(report.name, .text), .number(String(report.rows), .integer),
                                     .text(report.firstSheet, .text)])
            summarySheet.hyperlinks.append((ref: "C\(summarySheet.rows)", sheet: report.firstSheet))
        }
        sheets.insert(try summarySheet.finish(), at: 0)

        let partial = scratch + "/workbook.xlsx"
        try Parts.zip(sheets, to: URL(fileURLWithPath: partial))
        guard rename(partial, path) == 0 else {
            throw Failure(path: path, reason: "cannot move the workbook into place: \(String(cString: strerror(errno)))")
        }
    }

    /// One report's sheets: the first, then one more each time `rowsPerSheet` data rows are
    /// full, each starting with the header row.
    private static func writeReport(csv: String, name: String, zone: ZoneOffsets, scratch: String, tag: String,
                                    rowsPerSheet: Int) throws -> [SheetPart] {
        let records = try CSVRecords(path: csv)
        guard let columns = try records.next() else {
            throw Failure(path: csv, reason: "the report is empty: it has no header row")
        }
        let kinds = columns.map(ColumnKind.of(column:))
        let header: [Cell] = zip(columns, kinds).map { column, kind in
            .text(kind == .dateTime ? "\(column) (\(zone.zone.identifier))" : column, .header)
        }
        var parts: [SheetPart] = []
        func newSheet() throws -> SheetBody {
            let n = parts.count + 1
            let sheet = try SheetBody(name: n == 1 ? name : "\(name) (\(n))",
                                      path: scratch + "/sheet-\(tag)-\(n).xml", frozenHeader: true)
            try sheet.append(header)
            return sheet
        }
        var sheet = try newSheet()
        while let fields = try records.next() {
            if sheet.rows - 1 == rowsPerSheet {
                parts.append(try sheet.finish())
                sheet = try newSheet()
            }
            var cells: [Cell] = []
            cells.reserveCapacity(fields.count)
            for (i, field) in fields.enumerated() {
                cells.append(Cell.from(field, kind: i < kinds.count ? kinds[i] : .text, zone: zone))
            }
            try sheet.append(cells)
        }
        parts.append(try sheet.finish())
        return parts
    }
}
