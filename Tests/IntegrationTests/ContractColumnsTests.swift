import Foundation
import Reconciliation
import Testing

/// The report files' columns are described once, in docs/contract.md, and the code's own column
/// descriptions (`ReportFile.layout`) are what the files hold: every file's header appears in the
/// contract as written, and every column table of a file names its columns in the file's order.
@Suite("docs/contract.md describes every report file's columns as the code writes them")
struct ContractColumnsTests {
    static func contract() throws -> String {
        try String(contentsOf: ContractConsistencyTests.root.appendingPathComponent("docs/contract.md"), encoding: .utf8)
    }

    /// The column names of the first `| column | … |` table under the heading that names `file`
    /// in backticks, before the next heading; nil when there is no such heading or table.
    static func table(for file: String, in markdown: String) -> [String]? {
        let lines = markdown.components(separatedBy: "\n")
        guard let heading = lines.firstIndex(where: { $0.hasPrefix("#") && $0.contains("`\(file)`") }) else { return nil }
        var names: [String] = []
        var inTable = false
        for line in lines[(heading + 1)...] {
            if line.hasPrefix("#") { break }
            if line.hasPrefix("| column |") { inTable = true; continue }
            guard inTable else { continue }
            if line.hasPrefix("|---") { continue }
            guard line.hasPrefix("| `") else { break }
            names.append(String(line.dropFirst(3).prefix { $0 != "`" }))
        }
        return inTable ? names : nil
    }

    @Test("every report file's header is written in the contract, and each column table lists the file's columns in order")
    func columnsAgree() throws {
        let text = try Self.contract()
        var tables = 0
        for file in ReportFile.allCases {
            let columns = file.columns
            #expect(!columns.isEmpty)
            let header = columns.joined(separator: ",")
            let named = text.contains("`\(header)`") || Self.table(for: file.rawValue, in: text) == columns
            #expect(named, "\(file.rawValue): docs/contract.md has neither its header `\(header)` nor a column table in that order")
            if let table = Self.table(for: file.rawValue, in: text) {
                tables += 1
                #expect(table == columns, "\(file.rawValue): the contract's table lists \(table), the file has \(columns)")
            }
        }
        #expect(tables >= 5, "\(tables) column tables found")
    }

    @Test("the table reader stops at the next heading and reads names in order")
    func tableReader() {
        let md = "## `a.csv`: x\n\ntext\n\n| column | meaning |\n|---|---|\n| `x` | one |\n| `y` | two |\n\n## `b.csv`\n| column | m |\n"
        #expect(Self.table(for: "a.csv", in: md) == ["x", "y"])
        #expect(Self.table(for: "b.csv", in: md) == [])
        #expect(Self.table(for: "c.csv", in: md) == nil)
    }
}
