import Foundation
import Reconciliation
import Testing
@testable import Workbook

/// Off by default; for a person checking the files by hand (LibreOffice, a browser) and for a
/// memory check at Excel's real row limit.
@Suite struct SampleOutputs {
    static let env = ProcessInfo.processInfo.environment

    /// `WORKBOOK_SAMPLE_DIR=/some/folder`: leaves the small test report folder and its workbook there.
    @Test(.enabled(if: env["WORKBOOK_SAMPLE_DIR"] != nil))
    func keepASampleWorkbook() throws {
        let target = Self.env["WORKBOOK_SAMPLE_DIR"]!
        let (folder, _) = try WorkbookTests.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.moveItem(atPath: folder, toPath: target)
        try Workbook.write(csvFolder: target, reports: WorkbookTests.reports,
                           summary: [(label: "run id", value: "42"), (label: "as of", value: "2026-11-21T03:00:00Z")],
                           timeZone: WorkbookTests.shanghai, to: target + "/reconciliation.xlsx")
    }

    /// `WORKBOOK_BIG_ROWS=1100000`: a compensate.csv of that many rows through the real limit;
    /// prints the peak resident memory, which must not grow with the rows.
    @Test(.enabled(if: env["WORKBOOK_BIG_ROWS"] != nil))
    func aBigReportStreams() throws {
        let n = Int(Self.env["WORKBOOK_BIG_ROWS"]!)!
        let folder = NSTemporaryDirectory() + "wb-big-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let csv = fopen(folder + "/compensate.csv", "wb")!
        fputs(CSV.record(ReportFile.compensate.columns), csv)
        for i in 0..<n {
            fputs(CSV.record(["o-\(i)", "u-\(i % 977)", "com.example.gems", "consumable", "1", String(2_000_000_000_000_000 + i),
                              "2000000847061981", "2026-11-21T03:08:45Z", "Production", "exact", "paid_not_granted",
                              "r-\(i)", "2026-11-20", "4.99", "CNY", "receipt", "3.49", "CNY"]), csv)
        }
        fclose(csv)
        var before = rusage(), after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        let start = Date()
        try Workbook.write(csvFolder: folder, reports: [.compensate], summary: [], timeZone: WorkbookTests.shanghai,
                           to: folder + "/reconciliation.xlsx")
        getrusage(RUSAGE_SELF.rawValue, &after)
        let size = try FileManager.default.attributesOfItem(atPath: folder + "/reconciliation.xlsx")[.size] as! Int
        print("workbook of \(n) rows: \(size) bytes in \(Int(Date().timeIntervalSince(start))) s; "
            + "peak RSS \(before.ru_maxrss / 1024) MiB before, \(after.ru_maxrss / 1024) MiB after")
    }
}
