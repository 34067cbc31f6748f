import Foundation
import Testing

/// One table of figures: every measured figure lives in docs/figures.md (written by the bench
/// targets and the demo) or, with the measurements behind the design, in docs/benchmarks.md.
/// Every other page a person reads (README.md, CHANGELOG.md, reports/README.md, jobs/*, docs/*.md)
/// names the figures table's row instead of restating a number that the next run would change.
///
/// The rules look for the units measured figures come in: a decimal time or size (`14.05 s`,
/// `57.6 MB`), a rate of things per second (`1,259 receipts/s`, `44.8/s`), CPU seconds
/// (`0.065 CPU s`), and a ratio to a floor (`2.9 times the floor`, `57% of the ES256 floor`).
/// Configured defaults and published limits are written as whole numbers (`5 s`, `12 hours`,
/// `45/s`) or in words (`50 requests a second`), and pass. Fenced code blocks of Markdown files
/// are skipped. No database.
@Suite("FiguresInDocs")
struct FiguresInDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The pages that may carry measured figures.
    static let figurePages: Set<String> = ["docs/figures.md", "docs/benchmarks.md"]

    enum Rule: String, Hashable, Sendable, CaseIterable {
        case timeOrSize = "a decimal time or size"
        case rate = "a rate per second"
        case cpu = "CPU seconds"
        case floor = "a ratio to a floor"

        var pattern: String {
            switch self {
            case .timeOrSize:
                #"\b[0-9]+\.[0-9]+ ?(s|ms|min|h|MB|GB|KB|MiB|GiB|KiB)\b"#
            case .rate:
                #"[0-9][0-9,.]* ?(receipts|uploads|rows|calls|requests|verifications|answers)/s\b|\b[0-9]+\.[0-9]+/s\b"#
            case .cpu:
                #"\b[0-9][0-9.]* ?CPU([ -]s\b|[ -]?sec(ond)?s?\b)|\b[0-9]+\.[0-9]+ ?CPU\b"#
            case .floor:
                #"\b[0-9][0-9.,]* ?(×|x|times|%( of)?) (the |its )?([A-Za-z0-9-]+ )?floor"#
            }
        }
    }

    typealias Hit = DocsHit<Rule>

    static func rules() -> [(Rule, NSRegularExpression)] {
        // The patterns are literals of this file: one that does not compile is this file's bug.
        Rule.allCases.map { ($0, try! NSRegularExpression(pattern: $0.pattern, options: [.caseInsensitive])) }
    }

    /// README.md, CHANGELOG.md, reports/README.md, jobs/*, docs/*.md, less the figure pages.
    static func scannedFiles() throws -> [String] {
        let manager = FileManager.default
        var paths = ["README.md", "CHANGELOG.md", "reports/README.md"].filter {
            manager.fileExists(atPath: root.appendingPathComponent($0).path)
        }
        paths += try manager.contentsOfDirectory(atPath: root.appendingPathComponent("jobs").path)
            .filter { !$0.hasPrefix(".") }.map { "jobs/" + $0 }
        paths += try manager.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        return paths.filter { !figurePages.contains($0) }.sorted()
    }

    /// The measured figures of one file's text; in Markdown, outside fenced code blocks.
    static func scan(path: String, text: String, rules: [(Rule, NSRegularExpression)]) -> [Hit] {
        let markdown = path.hasSuffix(".md")
        var hits: [Hit] = []
        var inFence = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
            if markdown {
                let trimmed = line.drop { $0 == " " }
                if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                    inFence.toggle()
                    continue
                }
                if inFence { continue }
            }
            let whole = NSRange(line.startIndex..., in: line)
            for (rule, regex) in rules {
                for m in regex.matches(in: line, range: whole) {
                    if let r = Range(m.range, in: line) {
                        hits.append(Hit(file: path, line: index + 1, rule: rule, match: String(line[r])))
                    }
                }
            }
        }
        return hits
    }

    @Test("no measured rate, run time, CPU time, floor ratio or RSS outside docs/figures.md and docs/benchmarks.md")
    func figuresOnlyInTheTable() throws {
        let paths = try Self.scannedFiles()
        #expect(paths.contains("README.md") && paths.contains("docs/operations.md") && paths.contains("docs/reliability.md")
            && paths.filter { $0.hasPrefix("jobs/") }.count > 5 && !paths.contains("docs/figures.md"),
            "the files to scan were not found under \(Self.root.path): \(paths)")
        let rules = Self.rules()
        var hits: [Hit] = []
        for path in paths {
            let text = String(decoding: try Data(contentsOf: Self.root.appendingPathComponent(path)), as: UTF8.self)
            hits += Self.scan(path: path, text: text, rules: rules)
        }
        let files = Set(hits.map(\.file)).sorted()
        #expect(hits.isEmpty, """
            \(hits.count) measured figures in \(files.count) files (\(files.joined(separator: ", "))): \
            name the row of docs/figures.md instead (e.g. "the `make bench` row 'the night without \
            verification' in [figures](figures.md)"), or write a derived result as a formula of that row:
            \(hits.map(\.description).joined(separator: "\n"))
            """)
    }

    @Test("each rule reports its kind of figure, and passes defaults, limits and versions that only look like one")
    func eachRuleCanFail() {
        let bad: [(line: String, rule: Rule)] = [
            ("The night took 14.05 s on 2 cores.", .timeOrSize),
            ("Its peak RSS was 57.6 MB.", .timeOrSize),
            ("PASS crash-loop        27.8s  kills=32", .timeOrSize),
            ("The copy takes 8.3 min at 100M.", .timeOrSize),
            ("verifyReceipt ran at 1,259 receipts/s while verifying.", .rate),
            ("transaction history ran at 44.0/s, no 429.", .rate),
            ("job CPU 0.065 CPU s per 1,000 uploads", .cpu),
            ("took 47 s and 35.16 CPU-seconds", .cpu),
            ("server_api=75 0.04cpu", .cpu),
            ("The night is 2.9 times the floor.", .floor),
            ("the job at 2.91 × the floor of reading every row once", .floor),
            ("57% of the ES256 floor", .floor),
        ]
        let good = [
            "A second run waits `--lock-wait-seconds` (5 s by default), then exits 75.",
            "iap-reconcile release 2026-11-21 --lock-wait-seconds 5",
            "Apple waits 12 hours for an answer; respond runs every 15 minutes.",
            "Apple allows 50 requests a second per app; the job's default is `--api-rate` 45/s.",
            "45 pages/s for the app's eight sweeps together; 1,000 ÷ 45/s ≈ 22 s at most.",
            "16 in flight at R = 100 ms gives 160 a second; three apps get 3 × 45/s of history.",
            "The job schema of version 0.5.0 is migrated by `iap-reconcile migrate`.",
            "RestartSec=20min, TimeoutStartSec=6h, StartLimitIntervalSec=12h",
            "the peak RSS stays under 100 MB; the floor is reading every row once.",
            "measured on 2 CPUs: the ES256 checks on every core against their floor",
            "decide time at 10M ≈ 10 × the `make bench` row 'the night without verification'",
        ]
        let fence = ["```", "PASS load 35.2s rate=693/s peak_rss=33.8MB", "```"]
        let text = (bad.map(\.line) + good + fence).joined(separator: "\n")
        let hits = Self.scan(path: "docs/example.md", text: text, rules: Self.rules())

        let found = Set(hits.map { "\($0.line) \($0.rule)" })
        let wanted = Set(bad.enumerated().map { "\($0.offset + 1) \($0.element.rule)" })
        #expect(found == wanted, """
            missed: \(wanted.subtracting(found).sorted()); over-fired: \
            \(hits.filter { !wanted.contains("\($0.line) \($0.rule)") }.map(\.description))
            """)
        #expect(hits.first?.description == "docs/example.md:1: a decimal time or size: 14.05 s")

        // Outside Markdown there are no fences: the same block in a unit file is read.
        let unit = Self.scan(path: "jobs/iap-reconcile.service", text: fence.joined(separator: "\n"), rules: Self.rules())
        #expect(unit.map(\.match) == ["35.2s", "33.8MB"], "\(unit)")
    }
}
