import Foundation
import Testing

/// docs/contract.md is the reference: every option and environment variable the binary's
/// `--help` knows, every metric the code writes and every exit code are in it, and it names none
/// the binary does not know. Each side read from its source: `--help` of every command, the
/// metrics writer's own text, the contract's tables.
@Suite("docs/contract.md agrees with the binary: options, variables, metrics, exit codes")
struct ContractConsistencyTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static func help(_ tool: String, _ arguments: [String]) throws -> String {
        let r = try runTool(tool, arguments, environment: ProcessInfo.processInfo.environment)
        #expect(r.status == 0, "\(tool) \(arguments.joined(separator: " ")): \(r.stderr)")
        return r.stdout
    }

    /// The subcommands a root help lists under SUBCOMMANDS.
    static func subcommands(_ help: String) -> [String] {
        let lines = help.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { $0.hasPrefix("SUBCOMMANDS:") }) else { return [] }
        return lines[(start + 1)...].prefix { !$0.isEmpty }.compactMap { line in
            line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first.map(String.init) : nil
        }
    }

    /// The `--options` of a help: the first column of each option line, in every section that
    /// lists options (OPTIONS:, and the titled groups such as HELD NIGHTS).
    static func options(_ help: String) -> Set<String> {
        var out: Set<String> = []
        for line in help.components(separatedBy: "\n") where line.hasPrefix("  -") {
            let head = line.dropFirst(2).components(separatedBy: "  ").first ?? ""
            out.formUnion(matches(#"--[a-z][a-z0-9-]*[a-z0-9]"#, head))
        }
        return out.subtracting(["--help", "--version"])
    }

    /// The variables a help's ENVIRONMENT section names in its first column.
    static func variables(_ help: String) -> Set<String> {
        var out: Set<String> = []
        var inside = false
        for line in help.components(separatedBy: "\n") {
            if line == "ENVIRONMENT" { inside = true; continue }
            if !line.isEmpty, !line.hasPrefix(" ") { inside = false }
            guard inside, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            let head = line.dropFirst(2).components(separatedBy: "  ").first ?? ""
            out.formUnion(matches(#"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\bPG[A-Z]+\b"#, head))
        }
        return out
    }

    static func matches(_ pattern: String, _ text: String) -> Set<String> {
        let re = try! NSRegularExpression(pattern: pattern)
        let ns = text as NSString
        return Set(re.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range) })
    }

    /// Everything written as code in a markdown text: inline `code` and fenced blocks.
    static func code(_ markdown: String) -> String {
        var out: [String] = []
        var fenced = false
        for line in markdown.components(separatedBy: "\n") {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { fenced.toggle(); continue }
            if fenced { out.append(line); continue }
            let parts = line.components(separatedBy: "`")
            out.append(contentsOf: stride(from: 1, to: parts.count, by: 2).map { parts[$0] })
        }
        return out.joined(separator: "\n")
    }

    /// The metric families the metrics writers make: `gauge("name", …)` calls, prefixed as the
    /// function that holds them prefixes (the night's `iap_reconcile_`, respond's `iap_reconcile_respond_`).
    static func emittedMetrics() throws -> Set<String> {
        let source = try text("Sources/NightDecide/Reports/Operator.swift") + "\n"
            + (try text("Sources/Desk/Respond/RespondMetrics.swift"))
        // Over the whole text, in order: a prefix (`"iap_reconcile_…" + name`) holds until the next
        // one; a call may span lines (`gauge(` then its name on the next).
        var out: Set<String> = []
        var prefix = ""
        let pattern = try Regex(#"\"(iap_reconcile_[a-z_]*)\" \+ name|\bgauge\(\s*\"([a-z_]+)\""#)
        for match in source.matches(of: pattern) {
            if let p = match.output[1].substring {
                prefix = String(p)
            } else if let name = match.output[2].substring, !prefix.isEmpty {
                out.insert(prefix + name)
            }
        }
        return out
    }

    @Test("every option and variable of every command's --help is in the contract, and every option the contract gives iap-reconcile exists")
    func optionsAndVariables() throws {
        let contract = try Self.text("docs/contract.md")
        let contractCode = Self.code(contract)
        let root = try Self.help("iap-reconcile", ["--help"])
        let commands = Self.subcommands(root)
        #expect(commands.count >= 7 && commands.contains("respond") && commands.contains("release"), "\(commands)")
        var options = Self.options(root)
        for c in commands where c != "help" { options.formUnion(Self.options(try Self.help("iap-reconcile", ["help", c]))) }
        #expect(options.count > 40, "\(options.count) options read from --help")
        let variables = Self.variables(root)
        #expect(variables.contains("DATABASE_URL") && variables.contains("IAP_SHARED_SECRET"), "\(variables.sorted())")

        let missingOptions = options.filter { !contractCode.contains($0) }.sorted()
        #expect(missingOptions.isEmpty, "options --help knows that docs/contract.md does not name: \(missingOptions)")
        let missingVariables = variables.filter { !contractCode.contains($0) }.sorted()
        #expect(missingVariables.isEmpty, "variables --help knows that docs/contract.md does not name: \(missingVariables)")

        // The other way: an option the contract writes is iap-reconcile's, iap-sim's, or one of
        // the few of the PostgreSQL and system programs its examples run.
        var known = options.union(["--help", "--version"])
        let sim = try Self.help("iap-sim", ["--help"])
        known.formUnion(Self.options(sim))
        for c in Self.subcommands(sim) where c != "help" { known.formUnion(Self.options(try Self.help("iap-sim", ["help", c]))) }
        // `--database-only`: run's hidden flag for `make bench`, documented as such.
        let others: Set<String> = ["--database-only", "--schema", "--file", "--single-transaction", "--schema-only", "--no-owner", "--now",
                                   "--user", "--no-pager", "--quiet", "--system", "--fail"]
        // `--[no-]x` pairs are written as `--no-x` or `--x`; ArgumentParser shows both.
        let written = Self.matches(#"(?<![A-Za-z0-9_-])--[a-z][a-z0-9-]*[a-z0-9](?![a-z0-9*-])"#, contractCode)
        let unknown = written.filter { !known.contains($0) && !others.contains($0) }.sorted()
        #expect(unknown.isEmpty, "options docs/contract.md names that no command knows: \(unknown)")
        // And the variables it writes in IAP_ / ASC_ form are the binary's.
        let writtenVariables = Self.matches(#"\b(IAP|ASC)_[A-Z0-9_]+\b"#, contractCode)
        // IAP_RECONCILE_ARGS is the units' and the cron line's (jobs/), not the binary's.
        let unknownVariables = writtenVariables.subtracting(variables).subtracting(["IAP_RECONCILE_ARGS"]).sorted()
        #expect(unknownVariables.isEmpty, "variables docs/contract.md names that --help does not: \(unknownVariables)")
    }

    @Test("every metric the metrics writer makes has its row in the contract's metrics tables, and every row is a metric it makes")
    func metrics() throws {
        let emitted = try Self.emittedMetrics()
        #expect(emitted.contains("iap_reconcile_held") && emitted.contains("iap_reconcile_respond_requests"), "\(emitted.sorted())")
        #expect(emitted.count > 20, "\(emitted.count) metrics read from Operator.swift")
        let contract = try Self.text("docs/contract.md")
        let rows = Set(contract.components(separatedBy: "\n").filter { $0.hasPrefix("| `iap_reconcile_") }
            .compactMap { Self.matches(#"^\| `iap_reconcile_[a-z_]+`"#, $0).first.map { String($0.dropFirst(3).dropLast()) } })
        #expect(emitted.subtracting(rows).isEmpty, "metrics without a row in docs/contract.md: \(emitted.subtracting(rows).sorted())")
        #expect(rows.subtracting(emitted).isEmpty, "rows in docs/contract.md for metrics no code writes: \(rows.subtracting(emitted).sorted())")
    }

    @Test("the exit codes of --help are the contract's table, code for code")
    func exitCodes() throws {
        let root = try Self.help("iap-reconcile", ["--help"])
        let lines = root.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasPrefix("EXIT CODES") }, "--help has no EXIT CODES section")
        let helpCodes = Set(lines[(start + 1)...].prefix { $0.isEmpty || $0.hasPrefix(" ") }
            .compactMap { Self.matches(#"^  [0-9]+\b"#, $0).first.map { $0.trimmingCharacters(in: .whitespaces) } })
        let contract = try Self.text("docs/contract.md").components(separatedBy: "\n")
        let table = try #require(contract.firstIndex { $0 == "## Exit codes" })
        let tableCodes = Set(contract[(table + 1)...].prefix { !$0.hasPrefix("## ") }
            .compactMap { Self.matches(#"^\| [0-9]+ \|"#, $0).first.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "| ")) } })
        #expect(helpCodes.count >= 7, "\(helpCodes.sorted())")
        #expect(helpCodes == tableCodes, "--help: \(helpCodes.sorted()), docs/contract.md: \(tableCodes.sorted())")
    }

    @Test("the readers find what they are given, so the checks above can fail")
    func readersCanFail() {
        let help = "OVERVIEW: x\n\nENVIRONMENT\n  IAP_NEW_THING   what\n  PGHOST PGPORT   libpq\n\nHELD:\n  --hold-x <n>   held\n\nOPTIONS:\n  --as-of <as-of>   when --not-this\n  --sample/--no-sample\n  -h, --help        help\n"
        #expect(Self.options(help) == ["--hold-x", "--as-of", "--sample", "--no-sample"], "\(Self.options(help))")
        #expect(Self.variables(help) == ["IAP_NEW_THING", "PGHOST", "PGPORT"])
        #expect(Self.code("a `--x` b\n```\n--y\n```\n--z") == "--x\n--y")
    }
}
