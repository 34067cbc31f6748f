import Foundation
import Synchronization
import Reconciliation

/// `reconciliation.xlsx` (contract §6): the night's report CSVs as one workbook for
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
/// deflated as it is written, into a temporary file next to `path`, and copied into the zip from
/// that file.
public enum Workbook {
    /// Excel's rows per sheet (1,048,576) less the header row.
    public static let maxDataRowsPerSheet = 1_048_575

    /// Why the workbook could not be written: the file concerned and what went wrong.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let path: String
        public let reason: String
        public var description: String { "\(path): \(reason)" }

        /// What the system said of `path` (errno) while `doing`: "`doing`: its message".
        static func system(_ path: String, _ doing: String) -> Failure {
            Failure(path: path, reason: "\(doing): \(String(cString: strerror(errno)))")
        }

        /// Runs `work`; any other error it throws becomes a failure of `path`: "`doing`: error".
        static func of(_ path: String, _ doing: String, _ work: () throws -> Void) throws {
            do {
                try work()
            } catch let failure as Failure {
                throw failure
            } catch {
                throw Failure(path: path, reason: "\(doing): \(error)")
            }
        }
    }

    /// Writes the workbook to `path` (a temporary file in the same folder, renamed into place,
    /// so a reader never opens half a workbook). Reads `<csvFolder>/<report.rawValue>` for each
    /// report; a missing CSV is a `Failure`.
    ///
    /// - Parameter dataRows: each report's data rows (its CSV's records less the header), as its
    ///   writer counted them; the reports are then read once. Without it they are counted first.
    ///   A report whose sheets hold another number of rows is a `Failure`.
    /// - Parameter dataRowsPerSheet: rows per sheet before a report continues on the next;
    ///   only tests pass another value than Excel's limit.
    /// - Parameter zip64Limit: sizes and offsets from this one on are written in zip64 records
    ///   (ZipFile.swift); only tests pass another value than the format's.
    public static func write(csvFolder: String, reports: [ReportFile], dataRows: [Int]? = nil,
                             summary: [(label: String, value: String)], timeZone: TimeZone, to path: String,
                             dataRowsPerSheet: Int = maxDataRowsPerSheet,
                             zip64Limit: UInt64 = 0xFFFF_FFFF) throws {
        precondition(dataRowsPerSheet > 0 && dataRowsPerSheet <= maxDataRowsPerSheet)
        precondition(dataRows == nil || dataRows?.count == reports.count)
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
        let csvPaths = reports.map { csvFolder + "/" + $0.rawValue }
        let rows = try dataRows ?? csvPaths.map(countDataRows)
        // A report over `dataRowsPerSheet` rows goes on in as many more sheets as it needs.
        let sheetsPerReport = rows.map { max(1, ($0 + dataRowsPerSheet - 1) / dataRowsPerSheet) }

        // The reports' sheets are independent files: written and deflated side by side, one
        // report per core, while this thread copies each report into the zip as soon as it is
        // written, in the order they finish (deflated by ZIPFoundation on this one thread, they
        // were the night's last seconds on one core). Each sheet's number, its place among the
        // tabs, is known before.
        let firstNumber = sheetsPerReport.indices.map { 2 + sheetsPerReport[..<$0].reduce(0, +) }
        let finished = Mutex<[(Int, Result<[SheetPart], any Error>)]>([])
        let oneFinished = DispatchSemaphore(value: 0)
        let next = Mutex(0)
        let stop = Atomic<Bool>(false)
        let writers = DispatchGroup()
        let width = max(1, min(reports.count, ProcessInfo.processInfo.activeProcessorCount))
        DispatchQueue.global().async(group: writers) {
            DispatchQueue.concurrentPerform(iterations: width) { _ in
                while !stop.load(ordering: .relaxed) {
                    let i = next.withLock { n -> Int in defer { n += 1 }; return n }
                    guard i < reports.count else { return }
                    let outcome = Result {
                        try writeReport(csv: csvPaths[i], report: reports[i],
                                        zone: ZoneOffsets(timeZone), scratch: scratch, tag: "r\(i)",
                                        rowsPerSheet: dataRowsPerSheet)
                    }
                    finished.withLock { $0.append((i, outcome)) }
                    oneFinished.signal()
                }
            }
        }
        // Runs before the scratch folder goes: no writer is left using it.
        defer { stop.store(true, ordering: .relaxed); writers.wait() }

        let partial = scratch + "/workbook.xlsx"
        let package = try Parts.Package(path: partial, sheetCount: 1 + sheetsPerReport.reduce(0, +),
                                        zip64Limit: zip64Limit)
        var byReport: [Int: [SheetPart]] = [:]
        while byReport.count < reports.count {
            oneFinished.wait()
            let (i, outcome) = finished.withLock { $0.removeFirst() }
            let parts = try outcome.get()
            let found = parts.reduce(0) { $0 + $1.rows - 1 }
            guard found == rows[i], parts.count == sheetsPerReport[i] else {
                throw Failure(path: csvPaths[i], reason: "the report has \(found) rows, \(rows[i]) were counted before "
                    + "(was it changed while the workbook was written?)")
            }
            for (k, part) in parts.enumerated() { try package.add(part, number: firstNumber[i] + k) }
            byReport[i] = parts
        }
        let sheets = reports.indices.flatMap { byReport[$0]! }
        let perReport = reports.indices.map { i in
            (name: reports[i].name, rows: rows[i], firstSheet: byReport[i]![0].name)
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
        let first = try summarySheet.finish()
        try package.add(first, number: 1)
        try package.finish([first] + sheets)
        guard rename(partial, path) == 0 else {
            throw Failure.system(path, "cannot move the workbook into place")
        }
    }

    /// A report's records less its header row (a missing file is a `Failure`).
    private static func countDataRows(_ csv: String) throws -> Int {
        let records = try CSVRecords(path: csv)
        var n = 0
        while try records.next() != nil { n += 1 }
        return max(0, n - 1)
    }

    /// One report's sheets: the first, then one more each time `rowsPerSheet` data rows are
    /// full, each starting with the header row.
    private static func writeReport(csv: String, report: ReportFile, zone: ZoneOffsets, scratch: String, tag: String,
                                    rowsPerSheet: Int) throws -> [SheetPart] {
        let records = try CSVRecords(path: csv)
        guard let columns = try records.next() else {
            throw Failure(path: csv, reason: "the report is empty: it has no header row")
        }
        // Each column's kind comes from the report's description (a column it does not describe is text).
        let described = Dictionary(report.layout.columns.map { ($0.name, $0.kind) }, uniquingKeysWith: { a, _ in a })
        let kinds = columns.map { described[$0] ?? .text }
        let header: [Cell] = zip(columns, kinds).map { column, kind in
            .text(kind == .dateTime ? "\(column) (\(zone.zone.identifier))" : column, .header)
        }
        var parts: [SheetPart] = []
        func newSheet() throws -> SheetBody {
            let n = parts.count + 1
            let sheet = try SheetBody(name: n == 1 ? report.name : "\(report.name) (\(n))",
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
