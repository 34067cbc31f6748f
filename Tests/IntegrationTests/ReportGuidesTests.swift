import Foundation
import Reconciliation
import Testing

/// The first 120 lines of reports/README.md hold a page for customer service and
/// one for finance, in English and in Chinese, each naming every file and sheet a person opens.
/// The files and sheets come from `ReportFile.allCases`: a new report fails this test until the
/// four guides name it. No database.
@Suite("ReportGuides")
struct ReportGuidesTests {
    static let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("reports").appendingPathComponent("README.md")

    /// The guides' headings, as written in reports/README.md (other pages link to their anchors).
    static let headings = [
        "## Customer service: your page", "## Finance: your page", "## 客服：你的一页", "## 财务：你的一页",
    ]

    /// How far down the guides must be over.
    static let firstLines = 120

    /// What each guide names, each in a code span (`compensate.csv` for the file, `compensate` for
    /// its sheet): the workbook, its "Summary" sheet (Sources/Workbook/Workbook.swift), the page,
    /// and every report's file and sheet (a report's sheet is named `ReportFile.name`).
    static var names: [String] {
        ["reconciliation.xlsx", "Summary", "summary.html"] + ReportFile.allCases.flatMap { [$0.rawValue, $0.name] }
    }

    /// Each heading's guide within the first `firstLines` lines of `text`: from its heading to the
    /// next heading of level 1 or 2, or nil when the heading is not there or the guide runs past
    /// those lines.
    static func guides(in text: String) -> [String: String?] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(firstLines)
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        var found: [String: String?] = [:]
        for heading in headings {
            guard let start = lines.firstIndex(of: heading),
                  let end = lines[(start + 1)...].firstIndex(where: { $0.hasPrefix("# ") || $0.hasPrefix("## ") })
            else {
                found[heading] = .some(nil)
                continue
            }
            found[heading] = lines[start..<end].joined(separator: "\n")
        }
        return found
    }

    /// The names `guide` does not mention in a code span.
    static func missing(in guide: String) -> [String] {
        names.filter { !guide.contains("`\($0)`") }
    }

    @Test("the first 120 lines hold the four guides, each naming every file and sheet a person opens")
    func guidesNameEveryFileAndSheet() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        for (heading, guide) in Self.guides(in: text).sorted(by: { $0.key < $1.key }) {
            let body = try #require(guide, "\(heading): not a whole guide within the first \(Self.firstLines) lines")
            #expect(Self.missing(in: body) == [], "\(heading) does not name them")
        }
    }

    @Test("the check fails for a guide that drops a file or sheet, or runs past line 120")
    func theCheckCanFail() throws {
        let text = try String(contentsOf: Self.readme, encoding: .utf8)
        let english = try #require(Self.guides(in: text)[Self.headings[0]] ?? nil)
        let last = try #require(ReportFile.allCases.last)
        #expect(Self.missing(in: english.replacingOccurrences(of: "`\(last.rawValue)`", with: "")) == [last.rawValue])
        #expect(Self.missing(in: english.replacingOccurrences(of: "`Summary`", with: "")) == ["Summary"])

        // The same page with the guides pushed down by 120 lines.
        let pushed = text.replacingOccurrences(of: "\n## Customer service: your page",
                                               with: String(repeating: "\n", count: Self.firstLines) + "## Customer service: your page")
        for (heading, guide) in Self.guides(in: pushed) { #expect(guide == nil, "\(heading)") }
    }
}
