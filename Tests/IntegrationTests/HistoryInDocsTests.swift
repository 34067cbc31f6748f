import Foundation
import Testing

/// What a person reads keeps the reason, not the story: user docs (README.md, docs/, the reports
/// guide, jobs/), `--help` texts and source comments (every Sources file, read whole) name no
/// issue of the project's tracker (by number or by title), number no sessions, rounds or weeks
/// in a heading, name no commit, and cite no file outside the repository (the specification's
/// own file, a team's fact sheets, a path on one machine). Users do not have any of these.
///
/// Exempt: the frozen migration texts and their history file (their checksums are part of every
/// installed schema), the test fixtures, history/ (an archive), and docs/figures.md for commits
/// (its commit column names the build each figure was measured on). No database.
@Suite("HistoryInDocs")
struct HistoryInDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    enum Rule: String, Hashable, Sendable {
        case issueNumber = "an issue number"
        case issueTitle = "an issue named by its title"
        case historyHeading = "a heading that counts sessions, rounds or weeks"
        case commit = "a commit"
        case outside = "a file outside the repository"
    }

    /// The words the self-check's bad lines are made of, spelled apart so that this file does not
    /// read as one that names an issue or a session itself.
    static let issue = "iss" + "ue", session = "sess" + "ion"

    typealias Hit = DocsHit<Rule>

    // MARK: Which files

    /// Paths (from the repository root) never scanned.
    static let exempt = [
        "Sources/JobStore/Migrations/00", "Sources/JobStore/Migrations/MigrationHistory.swift",
        "Tests/IntegrationTests/Fixtures/", "history/",
    ]

    /// Paths scanned for every rule but the commit rule.
    static let commitsAllowed: Set<String> = ["docs/figures.md"]

    static func isScanned(_ path: String) -> Bool {
        !exempt.contains { path.hasPrefix($0) }
    }

    /// README.md, reports/README.md, docs/**/*.md, jobs/*, Sources/**/*.swift, less the exempt.
    static func scannedFiles() -> [String] {
        var paths = ["README.md", "reports/README.md"].filter {
            FileManager.default.fileExists(atPath: root.appendingPathComponent($0).path)
        }
        paths += files(under: "docs") { $0.hasSuffix(".md") }
        paths += files(under: "jobs") { _ in true }
        paths += files(under: "Sources") { $0.hasSuffix(".swift") }
        return paths.filter(isScanned).sorted()
    }

    static func files(under folder: String, _ keep: (String) -> Bool) -> [String] {
        let base = root.appendingPathComponent(folder).path
        guard let names = FileManager.default.enumerator(atPath: base) else { return [] }
        var found: [String] = []
        for case let name as String in names where keep(name) {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: base + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue {
                found.append(folder + "/" + name)
            }
        }
        return found
    }

    // MARK: The rules

    static func regex(_ pattern: String, caseInsensitive: Bool = false) -> NSRegularExpression {
        // The patterns are literals of this file: one that does not compile is this file's bug.
        try! NSRegularExpression(pattern: pattern, options: caseInsensitive ? [.caseInsensitive] : [])
    }

    struct Patterns {
        let issueNumber = HistoryInDocsTests.regex(#"\bissues?\s+#?[0-9]+"#, caseInsensitive: true)
        let issueTitle = HistoryInDocsTests.regex(#"\b[Ii]ssues?\s+["“'‘][A-Z]"#)
        let numberedHeading = HistoryInDocsTests.regex(
            #"^#{1,6}\s.*\b(week|round|pass|session|day|stop|sprint|iteration)\s+[0-9]+\b"#, caseInsensitive: true)
        let ordinalHeading = HistoryInDocsTests.regex(
            #"^#{1,6}\s.*\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[a-z]+teenth|twentieth|thirtieth|(twenty|thirty)-[a-z]+|[0-9]+(st|nd|rd|th)|morning|afternoon|evening)\s+(week|round|pass|session|sprint|iteration)\b"#,
            caseInsensitive: true)
        /// A path that starts with `../`, not inside a longer path.
        let upwardPath = HistoryInDocsTests.regex(#"(?<![A-Za-z0-9_./-])(\.\./)+[A-Za-z0-9_./-]*"#)
    }

    /// Files no user has, by a piece of their path: a path on one machine, the specification's
    /// own file, the team's fact sheets beside the repository.
    static let outsideNames = ["/work/", "spec/contract.md", "../shared/", "shared/apple/"]

    static func first(_ regex: NSRegularExpression, in line: String) -> String? {
        let whole = NSRange(line.startIndex..., in: line)
        guard let m = regex.firstMatch(in: line, range: whole), let r = Range(m.range, in: line) else { return nil }
        return String(line[r])
    }

    static func all(_ regex: NSRegularExpression, in line: String) -> [String] {
        regex.matches(in: line, range: NSRange(line.startIndex..., in: line)).compactMap {
            Range($0.range, in: line).map { String(line[$0]) }
        }
    }

    /// Whether `target`, read from the folder of `path`, leaves the repository.
    static func leavesRepository(_ target: String, from path: String) -> Bool {
        var depth = path.split(separator: "/").count - 1
        for part in target.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                depth -= 1
                if depth < 0 { return true }
            default: depth += 1
            }
        }
        return false
    }

    /// The words of `line` that may be a commit: the whole words (`\b...\b`, word characters
    /// `[A-Za-z0-9_]`) of 7 to 40 lower-case hex digits.
    static func hexWords(in line: String) -> [String] {
        var words: [String] = []
        var current: [UInt8] = []
        func flush() {
            if (7...40).contains(current.count),
               current.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
                words.append(String(decoding: current, as: UTF8.self))
            }
            current.removeAll(keepingCapacity: true)
        }
        for b in line.utf8 {
            let wordCharacter = (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b) || b == 0x5F
            if wordCharacter { current.append(b) } else { flush() }
        }
        flush()
        return words
    }

    /// The rules one file's text breaks, and its words that may name a commit (the commit rule
    /// needs git: `check`).
    static func scan(path: String, text: String, patterns: Patterns) -> (hits: [Hit], hexWords: [(line: Int, word: String)]) {
        let markdown = path.hasSuffix(".md")
        var hits: [Hit] = []
        var hex: [(line: Int, word: String)] = []
        var inFence = false
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
            let n = index + 1
            func hit(_ rule: Rule, _ match: String) { hits.append(Hit(file: path, line: n, rule: rule, match: match)) }

            if line.range(of: "issue", options: .caseInsensitive) != nil {
                for m in all(patterns.issueNumber, in: line) { hit(.issueNumber, m) }
                for m in all(patterns.issueTitle, in: line) { hit(.issueTitle, m) }
            }

            if markdown {
                let trimmed = line.drop { $0 == " " }
                if trimmed.hasPrefix("```") || trimmed.hasPrefix("~~~") {
                    inFence.toggle()
                } else if !inFence, line.hasPrefix("#") {
                    if let m = first(patterns.numberedHeading, in: line) ?? first(patterns.ordinalHeading, in: line) {
                        hit(.historyHeading, m)
                    }
                }
            }

            for name in outsideNames where line.contains(name) { hit(.outside, name) }
            if line.contains("../") {
                for target in all(patterns.upwardPath, in: line) where leavesRepository(target, from: path) {
                    hit(.outside, target)
                }
            }

            if !commitsAllowed.contains(path) {
                for word in hexWords(in: line) { hex.append((n, word)) }
            }
        }
        return (hits, hex)
    }

    // MARK: Commits

    static func hasGit(_ root: URL) -> Bool {
        FileManager.default.fileExists(atPath: root.appendingPathComponent(".git").path)
    }

    struct GitFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// git in `root` with `input` on its standard input (a file, so that no pipe fills while the
    /// other is written): its standard output.
    static func git(_ arguments: [String], input: String = "", root: URL) throws -> String {
        let inputFile = FileManager.default.temporaryDirectory
            .appendingPathComponent("history-in-docs-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        try Data(input.utf8).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["git", "-C", root.path] + arguments
        p.standardInput = try FileHandle(forReadingFrom: inputFile)
        let output = Pipe(), errors = Pipe()
        p.standardOutput = output
        p.standardError = errors
        try p.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw GitFailed(description: "git \(arguments.joined(separator: " ")): exit \(p.terminationStatus): "
                + String(decoding: err, as: UTF8.self))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Which of `words` name a commit of the repository in `root`: one `git cat-file
    /// --batch-check` for all of them, each asked as `<word>^{commit}` (a sha256 checksum or a
    /// UUID's group is not a commit, so it passes). A shallow clone knows fewer commits.
    static func commits(among words: Set<String>, root: URL) throws -> Set<String> {
        let ordered = words.sorted()
        guard !ordered.isEmpty else { return [] }
        let answer = try git(["cat-file", "--batch-check"], input: ordered.map { "\($0)^{commit}\n" }.joined(), root: root)
        let lines = answer.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        guard lines.count == ordered.count else {
            throw GitFailed(description: "git cat-file --batch-check: \(lines.count) answers to \(ordered.count) questions")
        }
        var found: Set<String> = []
        for (word, line) in zip(ordered, lines) {
            let fields = line.split(separator: " ")
            if fields.count >= 2, fields[1] == "commit" { found.insert(word) }
        }
        return found
    }

    /// Every rule that `texts` break. The commit rule only with a `.git` in `root` (`commitsChecked`).
    static func check(_ texts: [(path: String, text: String)], root: URL) throws -> (hits: [Hit], commitsChecked: Bool) {
        let patterns = Patterns()
        var hits: [Hit] = []
        var hex: [(path: String, line: Int, word: String)] = []
        for (path, text) in texts {
            let scanned = scan(path: path, text: text, patterns: patterns)
            hits += scanned.hits
            hex += scanned.hexWords.map { (path, $0.line, $0.word) }
        }
        guard hasGit(root) else { return (hits, false) }
        let named = try commits(among: Set(hex.map(\.word)), root: root)
        hits += hex.filter { named.contains($0.word) }.map { Hit(file: $0.path, line: $0.line, rule: .commit, match: $0.word) }
        return (hits.sorted { ($0.file, $0.line, $0.match) < ($1.file, $1.line, $1.match) }, true)
    }

    // MARK: Tests

    @Test("user docs, --help texts and source comments: no issue numbers, numbered sessions, commits or files outside the repository")
    func noHistoryInDocs() throws {
        let paths = Self.scannedFiles()
        #expect(paths.contains("README.md") && paths.contains("docs/contract.md") && paths.contains { $0.hasPrefix("jobs/") }
            && paths.filter { $0.hasPrefix("Sources/") }.count > 50, "the files to scan were not found under \(Self.root.path)")
        let texts: [(path: String, text: String)] = try paths.map {
            (path: $0, text: String(decoding: try Data(contentsOf: Self.root.appendingPathComponent($0)), as: UTF8.self))
        }
        let (hits, commitsChecked) = try Self.check(texts, root: Self.root)
        if !commitsChecked {
            print("HistoryInDocs: no .git in \(Self.root.path): commits not looked for")
        }
        let files = Set(hits.map(\.file)).sorted()
        #expect(hits.isEmpty, """
            \(hits.count) lines in \(files.count) files tell the story (\(files.joined(separator: ", "))); \
            say the reason instead, or point at docs/contract.md:
            \(hits.map(\.description).joined(separator: "\n"))
            """)
    }

    @Test("each rule reports its kind of line, and passes the lines that only look like it")
    func eachRuleCanFail() throws {
        let full = Self.hasGit(Self.root) ? try Self.git(["rev-parse", "HEAD"], root: Self.root)
            .trimmingCharacters(in: .whitespacesAndNewlines) : nil
        let short = full.map { String($0.prefix(7)) }
        var bad: [(line: String, rule: Rule)] = [
            ("Apple's daily Summary Sales Report (\(Self.issue) 36 item 1) is kept.", .issueNumber),
            ("Both came with \(Self.issue.capitalized)s #11 and 12.", .issueNumber),
            ("Faster since issue \"The night at Postgres's floor\".", .issueTitle),
            ("## Round 3: fewer copies", .historyHeading),
            ("### Idle cores filled, 2026-11-28, thirteenth \(Self.session)", .historyHeading),
            ("## Second pass", .historyHeading),
            ("#### Week 2", .historyHeading),
            ("The binding contract is `spec/contract.md`.", .outside),
            ("Apple's facts: [the fact sheet](../../shared/apple/server-api.md).", .outside),
            ("The design: /work/sales-design.md.", .outside),
            ("[one level too far](../../elsewhere.md)", .outside),
        ]
        if let full, let short {
            bad += [("Measured at \(short) on the benchmark's data.", .commit), ("The build \(full) made it.", .commit)]
        }
        let good = [
            "## Exit codes",
            "### The night's plan, and the first night",
            "```",
            "# Round 2 of 4: a comment in a code block, not a heading",
            "```",
            "The text's sha256 is 24e1f54d65fa0123456789abcdef0123456789abcdef0123456789abcdef0123.",
            "A request id 00000000-0000-4000-8000-000000000001, an \(Self.issue) with 3 retries, t\(Self.issue)s 12.",
            "Every column: [reports](../reports/README.md); units: [jobs](../jobs/).",
        ]
        let lines = ["# An example"] + bad.map(\.line) + good
        let text = lines.joined(separator: "\n") + "\n"
        let (hits, _) = try Self.check([("docs/example.md", text)], root: Self.root)
        let expected = Set(bad.enumerated().map { Pair(line: $0.offset + 2, rule: $0.element.rule) })
        let found = Set(hits.map { Pair(line: $0.line, rule: $0.rule) })
        #expect(found == expected, "reported:\n\(hits.map(\.description).joined(separator: "\n"))")

        // The exempt: frozen migration texts and the history are not read; figures.md may name commits.
        #expect(!Self.isScanned("Sources/JobStore/Migrations/0006-server-api-sweeps.swift"))
        #expect(!Self.isScanned("Sources/JobStore/Migrations/MigrationHistory.swift"))
        #expect(!Self.isScanned("history/benchmarks-journal.md"))
        #expect(Self.isScanned("Sources/JobStore/Migrations/Migrations.swift"))
        if let short {
            let figures = try Self.check([("docs/figures.md", "| 2026-11-28 | \(short) | 12.3 s |\n")], root: Self.root)
            #expect(figures.hits.isEmpty)
            let source = try Self.check([("Sources/X/Y.swift", "// measured at \(short)\n")], root: Self.root)
            #expect(source.hits.map(\.rule) == [.commit])
        }
    }

    struct Pair: Hashable, CustomStringConvertible {
        var line: Int
        var rule: Rule
        var description: String { "\(line): \(rule.rawValue)" }
    }
}
