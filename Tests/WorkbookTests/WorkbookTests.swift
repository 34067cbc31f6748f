import Foundation
import Reconciliation
import Testing
import XLSXReading
@testable import Workbook

/// A small report folder written with the job's own CSV writer, turned into a workbook and
/// read back with ZIPFoundation and XMLParser.
@Suite struct WorkbookTests {
    static let shanghai = TimeZone(identifier: "Asia/Shanghai")!
    static let longID = "2000000847061981"
    static let formula = "=HYPERLINK(\"http://evil.example\",\"click\")"

    /// compensate: three rows (a 16-digit id, a Chinese product, a formula-looking user id);
    /// unresolved: one row; duplicate_grants: the header alone.
    static func makeFolder(extraCompensateRows: Int = 0) throws -> (folder: String, compensate: [[String]]) {
        let folder = NSTemporaryDirectory() + "wb-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var compensate: [[String]] = [
            ["o-1", "u-1", "com.example.gems", "consumable", "2", longID, longID, "2026-11-21T03:08:45Z",
             "Production", "exact", "paid_not_granted", "r-1", "2026-11-20", "9.98", "CNY", "receipt", "6.99", "CNY"],
            ["o-2", "张三", "宝石礼包 100 颗", "consumable", "1", "2000000847061982", "2000000847061980",
             "2026-11-12T17:30:00Z", "Production", "exact", "paid_not_granted", "r-2", "2026-11-13", "4.995", "USD",
             "notification", "3.50", "EUR"],
            ["o-3", formula, "com.example.vip", "non_consumable", "1", "1000000000000001", "1000000000000001",
             "not a time", "Sandbox", "fuzzy", "restore_as_purchase", "r-3", "2026-11-14", "", "", "receipt", "", ""],
        ]
        for i in 0..<extraCompensateRows {
            compensate.append(["o-x\(i)", "u-x", "p", "consumable", "1", "30000000000000\(10 + i)", "3", "", "", "",
                               "paid_not_granted", "r", "2026-11-20", "", "", "receipt", "", ""])
        }
        func write(_ file: ReportFile, _ rows: [[String]]) throws {
            let text = CSV.record(file.columns) + rows.map(CSV.record).joined()
            try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + file.rawValue))
        }
        try write(.compensate, compensate)
        try write(.duplicateGrants, [])
        try write(.unresolved, [["r-9", "u-9", "o-9", "2000000847061981", "3", "21002", "timeout\r\nthen <b>", "2026-11-21T16:00:00Z"]])
        return (folder, compensate)
    }

    static let reports: [ReportFile] = [.compensate, .duplicateGrants, .unresolved]

    @Test func idsStayTextTimesMoveToTheZoneAndTheSheetsAreThere() throws {
        let (folder, rows) = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/reconciliation.xlsx"
        try Workbook.write(csvFolder: folder, reports: Self.reports,
                           summary: [(label: "run id", value: "42"), (label: "as of", value: "2026-11-21T03:00:00Z")],
                           timeZone: Self.shanghai, to: path)
        let book = try XLSX(path: path)
        #expect(book.sheets.map(\.name) == ["Summary", "compensate", "duplicate_grants", "unresolved"])
        // No temporary file left beside the workbook.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix(".") }.isEmpty)

        let sheet = book.sheets[1]
        #expect(sheet.rows.count == 1 + rows.count)
        #expect(sheet.frozenRows == 1)
        #expect(sheet.autoFilter == "A1:R4")
        #expect(!sheet.hasFormula)
        #expect(sheet.colWidths.count == 18 && sheet.colWidths.allSatisfy { (6...60).contains($0) })
        let columns = ReportFile.compensate.columns
        let letters = columns.indices.map(SheetBody.column)
        let header = sheet.values(0)
        #expect(header["H"] == "purchase_date (Asia/Shanghai)")
        #expect(header["A"] == "order_id" && header["M"] == "first_seen")

        // Every id and text column: a text cell equal to the CSV's value (the formula guard's
        // `'` carried as Excel's quotePrefix flag instead of in the text).
        let textColumns = columns.enumerated().filter { Workbook.ColumnKindProbe.isText($0.element) }.map(\.offset)
        #expect(textColumns.contains(5) && textColumns.contains(6) && textColumns.contains(11))
        for (r, row) in rows.enumerated() {
            for c in textColumns where !row[c].isEmpty {
                let cell = try #require(sheet.rows[r + 1][letters[c]])
                #expect(cell.type == "inlineStr", "\(columns[c]) row \(r + 1) is not a text cell")
                #expect(book.cellFormats[cell.style] == 49)
                #expect(cell.text == row[c])
                #expect(book.quotePrefix.contains(cell.style) == row[c].hasPrefix("="))
            }
        }
        #expect(sheet.rows[1]["F"]?.text == Self.longID)
        #expect(sheet.rows[2]["C"]?.text == "宝石礼包 100 颗")
        #expect(sheet.rows[3]["B"]?.text == Self.formula)

        // 2026-11-21T03:08:45Z is 11:08:45 in Shanghai: serial 46347 + 40125/86400.
        let time = try #require(sheet.rows[1]["H"])
        #expect(time.type == nil)
        #expect(abs(try #require(Double(time.text)) - 46347.46440972222) < 1e-9)
        #expect(book.numberFormats[book.cellFormats[time.style]] == "yyyy-mm-dd hh:mm:ss")
        // 2026-11-12T17:30:00Z is the next morning there: 2026-11-13 01:30.
        #expect(abs(Double(sheet.rows[2]["H"]!.text)! - (46339 + 1.5 / 24)) < 1e-9)
        #expect(sheet.rows[3]["H"]?.type == "inlineStr" && sheet.rows[3]["H"]?.text == "not a time")
        // first_seen: the UTC date as a date cell; quantity and amount as numbers.
        #expect(sheet.rows[1]["M"]?.text == "46346" && sheet.rows[1]["M"]?.type == nil)
        #expect(book.numberFormats[book.cellFormats[sheet.rows[1]["M"]!.style]] == "yyyy-mm-dd")
        #expect(sheet.rows[1]["E"]?.text == "2" && sheet.rows[1]["E"]?.type == nil)
        #expect(sheet.rows[1]["N"]?.text == "9.98" && sheet.rows[2]["N"]?.text == "4.995")
        #expect(sheet.rows[3]["N"] == nil)
        // Apple's proceeds: a number in its own currency's column, empty where there is none.
        #expect(sheet.rows[1]["Q"]?.type == nil && sheet.rows[1]["Q"]?.text == "6.99" && sheet.rows[2]["R"]?.text == "EUR")
        #expect(sheet.rows[3]["Q"] == nil)

        #expect(book.sheets[2].rows.count == 1 && book.sheets[2].autoFilter == "A1:K1")
        let unresolved = book.sheets[3]
        #expect(unresolved.rows.count == 2)
        #expect(unresolved.rows[1]["D"]?.text == Self.longID && unresolved.rows[1]["D"]?.type == "inlineStr")
        #expect(unresolved.rows[1]["E"]?.text == "3" && unresolved.rows[1]["E"]?.type == nil)
        #expect(unresolved.rows[1]["G"]?.text == "timeout\r\nthen <b>")
        #expect(unresolved.values(0)["H"] == "last_attempt_at (Asia/Shanghai)")
        #expect(abs(Double(unresolved.rows[1]["H"]!.text)! - 46348) < 1e-9) // midnight in Shanghai

        let summary = book.sheets[0]
        #expect(summary.frozenRows == nil && summary.autoFilter == nil)
        let pairs = summary.rows.map { ($0["A"]?.text ?? "", $0["B"]?.text ?? "") }
        #expect(pairs[0] == ("run id", "42") && pairs[1] == ("as of", "2026-11-21T03:00:00Z"))
        #expect(pairs.contains { $0 == ("time zone of times", "Asia/Shanghai") })
        #expect(pairs.contains { $0 == ("compensate", "3") })
        #expect(pairs.contains { $0 == ("duplicate_grants", "0") })
        #expect(pairs.contains { $0 == ("unresolved", "1") })
    }

    @Test func aReportPastTheRowLimitContinuesOnMoreSheets() throws {
        let (folder, rows) = try Self.makeFolder(extraCompensateRows: 4) // 7 data rows
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/reconciliation.xlsx"
        try Workbook.write(csvFolder: folder, reports: [.compensate, .unresolved], summary: [], timeZone: Self.shanghai,
                           to: path, dataRowsPerSheet: 3)
        let book = try XLSX(path: path)
        #expect(book.sheets.map(\.name) == ["Summary", "compensate", "compensate (2)", "compensate (3)", "unresolved"])
        #expect(book.sheets[1...4].map { $0.rows.count } == [4, 4, 2, 2])
        for sheet in book.sheets[1...3] {
            #expect(sheet.values(0)["F"] == "transaction_id")
            #expect(sheet.frozenRows == 1 && sheet.autoFilter != nil)
        }
        // Every row once, in order.
        let ids = book.sheets[1...3].flatMap { $0.rows.dropFirst().map { $0["F"]!.text } }
        #expect(ids == rows.map { $0[5] })
        let summary = book.sheets[0].rows.map { ($0["A"]?.text ?? "", $0["B"]?.text ?? "") }
        #expect(summary.contains { $0 == ("compensate", "7") })
    }

    /// The night passes the rows its CSV writer counted, so the reports are read once and each
    /// sheet is zipped as soon as it is written; a report holding another number is a failure.
    @Test func rowsCountedByTheCallerAreCheckedAgainstTheReports() throws {
        let (folder, _) = try Self.makeFolder(extraCompensateRows: 4) // 7 data rows
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/reconciliation.xlsx"
        try Workbook.write(csvFolder: folder, reports: [.compensate, .unresolved], dataRows: [7, 1], summary: [],
                           timeZone: Self.shanghai, to: path, dataRowsPerSheet: 3)
        let book = try XLSX(path: path)
        #expect(book.sheets.map(\.name) == ["Summary", "compensate", "compensate (2)", "compensate (3)", "unresolved"])
        #expect(book.sheets[1...4].map { $0.rows.count } == [4, 4, 2, 2])
        try FileManager.default.removeItem(atPath: path)
        for wrong in [[6, 1], [7, 0], [10, 1]] {
            do {
                try Workbook.write(csvFolder: folder, reports: [.compensate, .unresolved], dataRows: wrong, summary: [],
                                   timeZone: Self.shanghai, to: path, dataRowsPerSheet: 3)
                Issue.record("\(wrong) rows were taken for 7 and 1")
            } catch let failure as Workbook.Failure {
                #expect(failure.path.hasSuffix(wrong[0] != 7 ? "/compensate.csv" : "/unresolved.csv"))
                #expect(failure.reason.contains("rows"))
            }
            #expect(!FileManager.default.fileExists(atPath: path))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder).allSatisfy { !$0.contains(".tmp-") })
        }
    }

    @Test func aMissingReportIsAFailureNamingIt() throws {
        let (folder, _) = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(throws: Workbook.Failure.self) {
            try Workbook.write(csvFolder: folder, reports: [.refunds], summary: [], timeZone: .gmt,
                               to: folder + "/reconciliation.xlsx")
        }
        #expect(!FileManager.default.fileExists(atPath: folder + "/reconciliation.xlsx"))
    }

    /// The report reader on what a person's editor or a truncated copy may hand it, and on runs
    /// that cross its 64 KiB buffer (a quote, a doubled quote or a CRLF split between two reads).
    @Test(arguments: [
        ("\u{FEFF}a,b\r\n1,2\r\n", [["a", "b"], ["1", "2"]]),
        ("a,b\n1,2", [["a", "b"], ["1", "2"]]),
        ("\"x,\"\"y\"\"\",z\r\n", [["x,\"y\"", "z"]]),
        ("\"a\"b,c\"d\"\n", [["ab", "c\"d\""]]),
        ("\"\"\"\",\"\"x\n", [["\"", "x"]]),
        (",,\r\n\r\n", [["", "", ""], [""]]),
        ("\"open,\r\nno end", [["open,\r\nno end"]]),
        ("\"line\r\nbreak\",2\r\n", [["line\r\nbreak", "2"]]),
        ("caf\u{E9},\u{4E2D}\u{6587}\r\n", [["caf\u{E9}", "\u{4E2D}\u{6587}"]]),
    ] as [(String, [[String]])])
    func reportRecordsAsWritten(text: String, records: [[String]]) throws {
        #expect(try Self.records(of: Array(text.utf8)) == records)
    }

    @Test(arguments: [65_533, 65_534, 65_535, 65_536])
    func reportRecordsAcrossTheReadBuffer(at offset: Int) throws {
        // A first field of `offset` bytes puts what follows at the buffer's edge.
        let long = String(repeating: "a", count: offset - 1)
        let text = "\"" + long + "\"\"b\",c\r\nd,\"e\"\r\n"
        #expect(try Self.records(of: Array(text.utf8)) == [[long + "\"b", "c"], ["d", "e"]])
        let plain = String(repeating: "z", count: offset) + "\r\nq\r\n"
        #expect(try Self.records(of: Array(plain.utf8)) == [[String(repeating: "z", count: offset)], ["q"]])
    }

    @Test func reportRecordsKeepInvalidUTF8AsReplacement() throws {
        #expect(try Self.records(of: [0x61, 0xFF, 0x2C, 0xC3, 0x0D, 0x0A]) == [["a\u{FFFD}", "\u{FFFD}"]])
    }

    static func records(of bytes: [UInt8]) throws -> [[String]] {
        let path = NSTemporaryDirectory() + "records-\(UUID().uuidString).csv"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let reader = try CSVRecords(path: path)
        var all: [[String]] = []
        while let r = try reader.next() { all.append(r) }
        return all
    }

    @Test func plainTextIsCopiedOnlyWhereEscapeWouldLeaveItUnchanged() {
        let texts = ["", "abc", "2000000847061981", "a&b", "<b>", "\"", "it's", "x_x0041_y", "x_X", "_", "a_b", "ab_",
                     "中文", "café", "a\u{FFFE}b", "\u{EFFF}", "tab\there", "a\rb", "line\n", "\u{1}", "🎮 100"]
        for text in texts {
            var xml: [UInt8] = [0x3E]
            switch XMLText.plain(text, into: &xml) {
            case .ascii(let count):
                #expect(XMLText.escape(text) == text, "\(text)")
                #expect(xml == [0x3E] + Array(text.utf8) && count == text.utf8.count && text.utf8.allSatisfy { $0 < 0x80 })
            case .copied:
                #expect(XMLText.escape(text) == text, "\(text)")
                #expect(xml == [0x3E] + Array(text.utf8) && !text.utf8.allSatisfy { $0 < 0x80 })
            case .needsEscape:
                #expect(xml == [0x3E], "\(text): nothing copied")
                #expect(text.utf8.contains { $0 < 0x20 || "&<>\"'".utf8.contains($0) || $0 == 0xEF } || text.contains("_x")
                        || text.contains("_X"), "\(text)")
            }
        }
    }

    @Test func rowNumbersAreTheirDecimalDigits() {
        var numbers = [0, 1, 9, 10, 11, 99, 100, 1_048_576, 12_345_678, 99_999_999, 100_000_000, 123_456_789,
                       9_999_999_999_999_999]
        var n = 1
        while n < 1_000_000_000_000_000 { numbers += [n - 1, n, n + 7]; n *= 10 }
        for number in numbers {
            var xml: [UInt8] = [0x41]
            SheetBody.Digits(number).put(&xml)
            #expect(xml == [0x41] + Array(String(number).utf8), "\(number)")
        }
    }

    @Test func cellsPastColumnZKeepTheirColumns() throws {
        let folder = NSTemporaryDirectory() + "wb-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let header = (1...30).map { "c\($0)" }
        let rows = (1...3).map { r in (1...30).map { "v\(r)-\($0)" } }
        let text = CSV.record(header) + rows.map(CSV.record).joined()
        try Data(text.utf8).write(to: URL(fileURLWithPath: folder + "/" + ReportFile.compensate.rawValue))
        let path = folder + "/reconciliation.xlsx"
        try Workbook.write(csvFolder: folder, reports: [.compensate], summary: [], timeZone: Self.shanghai, to: path)
        let sheet = try XLSX(path: path).sheets[1]
        #expect(sheet.rows.count == 4)
        #expect(sheet.rows[0]["AD"]?.text == "c30")
        #expect(sheet.rows[3]["Z"]?.text == "v3-26" && sheet.rows[3]["AA"]?.text == "v3-27" && sheet.rows[3]["AD"]?.text == "v3-30")
        #expect(sheet.autoFilter == "A1:AD4")
    }

    @Test func xmlTextDropsWhatXMLForbidsAndKeepsExcelEscapesLiteral() {
        #expect(XMLText.escape("a\u{1}b\u{FFFE}c") == "abc")
        #expect(XMLText.escape("<&>\"'") == "&lt;&amp;&gt;&quot;&apos;")
        #expect(XMLText.escape("x_x0041_y") == "x_x005F_x0041_y")
        #expect(XMLText.escape("a\rb") == "a&#13;b")
        #expect(XMLText.escape("2000000847061981") == "2000000847061981")
    }

    @Test(arguments: [("12", ColumnKind.integer, true), ("1234567890123456", .integer, false), ("4.99", .money, true),
                      ("4.9999", .money, false), ("1e5", .money, false), ("-0.50", .money, true)])
    func numbersOnlyWhereTheyStayExact(raw: String, kind: ColumnKind, isNumber: Bool) {
        if case .number = Cell.from(raw, kind: kind, zone: ZoneOffsets(.gmt)) { #expect(isNumber) } else { #expect(!isNumber) }
    }

    /// Apple's revocationPercentage (thousandths of a percent) as a percentage; what Apple's range
    /// does not hold stays text.
    @Test(arguments: [("33333", "0.33333"), ("50000", "0.50000"), ("100000", "1.00000"), ("0", "0.00000"), ("5", "0.00005"),
                      ("100001", nil), ("-5", nil), ("33.5", nil), ("abc", nil), ("0033333", nil)] as [(String, String?)])
    func revocationPercentage(raw: String, value: String?) {
        switch Cell.from(raw, kind: .percentMilli, zone: ZoneOffsets(.gmt)) {
        case .number(let v, let style): #expect(v == value && style == .percent, "\(raw)")
        case .text(let t, _): #expect(value == nil && t == raw, "\(raw)")
        case .empty: Issue.record("\(raw) lost")
        }
    }
}

extension Workbook {
    /// The test's own list of what must be text: everything but the typed columns.
    enum ColumnKindProbe {
        static func isText(_ column: String) -> Bool {
            !["quantity", "attempts", "amount", "refunded_amount", "purchase_date", "granted_at", "cancellation_date",
              "revocation_date", "last_attempt_at", "first_seen", "closed_on", "revocation_percentage", "proceeds"].contains(column)
        }
    }
}
