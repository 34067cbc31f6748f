import Foundation
import Testing

/// Every relative link of the user docs resolves: the file is in the repository, and an
/// `#anchor` is a heading of that page (GitHub's anchors: lower case, punctuation dropped,
/// spaces as hyphens, a repeated heading numbered).
@Suite("Links in the docs resolve")
struct DocsLinksTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        return ["README.md", "CHANGELOG.md", "reports/README.md"] + docs.sorted()
    }

    /// GitHub's anchor of a heading's text.
    static func anchor(_ heading: String) -> String {
        var out = ""
        for ch in heading.lowercased() {
            if ch == " " { out.append("-") } else if ch.isLetter || ch.isNumber || ch == "-" || ch == "_" { out.append(ch) }
        }
        return out
    }

    /// The anchors of a markdown text's headings (outside fenced code), repeated ones numbered.
    static func anchors(_ markdown: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var out: Set<String> = []
        var fenced = false
        for line in markdown.components(separatedBy: "\n") {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, line.hasPrefix("#") else { continue }
            let text = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            let base = anchor(text)
            let n = seen[base, default: 0]
            seen[base] = n + 1
            out.insert(n == 0 ? base : "\(base)-\(n)")
        }
        return out
    }

    /// The targets of `[text](target)` links outside fenced code, with their line numbers.
    static func links(_ markdown: String) -> [(line: Int, target: String)] {
        var out: [(Int, String)] = []
        var fenced = false
        let re = try! NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        for (i, line) in markdown.components(separatedBy: "\n").enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced else { continue }
            let ns = line as NSString
            for m in re.matches(in: line, range: NSRange(location: 0, length: ns.length)) {
                out.append((i + 1, ns.substring(with: m.range(at: 1))))
            }
        }
        return out
    }

    /// What is wrong with each relative link of `page` (empty: all resolve).
    static func broken(page: String, text: String, read: (String) -> String?) -> [String] {
        var problems: [String] = []
        for (line, target) in links(text) {
            if target.contains("://") || target.hasPrefix("mailto:") { continue }
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let file = parts[0], fragment = parts.count > 1 ? parts[1] : nil
            let path: String
            if file.isEmpty {
                path = page
            } else {
                let base = URL(fileURLWithPath: "/repo/" + page).deletingLastPathComponent()
                path = String(base.appendingPathComponent(file).standardized.path.dropFirst("/repo/".count))
            }
            guard let target = read(path) else {
                problems.append("\(page):\(line): \(file) does not exist")
                continue
            }
            if let fragment, path.hasSuffix(".md"), !anchors(target).contains(fragment) {
                problems.append("\(page):\(line): \(path) has no heading #\(fragment)")
            }
        }
        return problems
    }

    static func read(_ path: String) -> String? {
        let url = root.appendingPathComponent(path)
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDir) else { return nil }
        return isDir.boolValue ? "" : (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }

    @Test("every relative link of README, CHANGELOG, reports/README.md and docs/ names a file and heading that exist")
    func linksResolve() throws {
        var problems: [String] = []
        var count = 0
        for page in try Self.pages() {
            let text = try #require(Self.read(page))
            count += Self.links(text).count
            problems += Self.broken(page: page, text: text, read: Self.read)
        }
        #expect(count > 100, "\(count) links read")
        #expect(problems.isEmpty, "\(problems.count) broken links:\n\(problems.joined(separator: "\n"))")
    }

    @Test("the reader finds a missing file, a missing heading, and GitHub's anchors")
    func readerCanFail() {
        #expect(Self.anchor("`check`: before the first night") == "check-before-the-first-night")
        #expect(Self.anchor("管理者：你的一页") == "管理者你的一页")
        #expect(Self.anchors("# A\n## A\n```\n# B\n```\n") == ["a", "a-1"])
        let pages = ["docs/x.md": "# Here\n", "docs/y.md": "[a](x.md#here) [b](x.md#gone) [c](z.md) [d](#top) [e](https://a.b/c)\n# Top\n"]
        let problems = Self.broken(page: "docs/y.md", text: pages["docs/y.md"]!, read: { pages[$0] })
        #expect(problems == ["docs/y.md:1: docs/x.md has no heading #gone", "docs/y.md:1: z.md does not exist"], "\(problems)")
    }
}
