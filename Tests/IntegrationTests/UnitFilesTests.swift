import Foundation
import Testing

/// The files in jobs/ that schedule the job: systemd accepts every unit as written, each file's
/// exit-code comments name exactly the contract's codes, a failed check of the job's own results
/// (70) is never restarted, and the failure notice carries the failed command's own result.
@Suite("UnitFiles")
struct UnitFilesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let jobs = root.appendingPathComponent("jobs")
    static let installedBinary = "/usr/local/bin/iap-reconcile"

    static func text(_ name: String) throws -> String {
        try String(contentsOf: jobs.appendingPathComponent(name), encoding: .utf8)
    }

    static var unitNames: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: jobs.path)) ?? [])
            .filter { $0.hasSuffix(".service") || $0.hasSuffix(".timer") }.sorted()
    }

    struct Ran { var status: Int32; var output: String }

    static func run(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Ran {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = arguments
        if let environment { p.environment = environment }
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return Ran(status: p.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }

    static let systemdAnalyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    // MARK: The contract's codes

    static func contract() throws -> String {
        try String(contentsOf: root.appendingPathComponent("docs/contract.md"), encoding: .utf8)
    }

    /// The codes of the contract's "Exit codes" table (`run`, `verify`, `migrate`).
    static func runCodes() throws -> Set<Int> {
        let text = try contract()
        let section = try #require(text.range(of: "\n## Exit codes\n"))
        var codes = Set<Int>()
        for line in text[section.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            if line.hasPrefix("| "), cells.count > 2, let code = Int(cells[1].trimmingCharacters(in: .whitespaces)) {
                codes.insert(code)
            }
        }
        return codes
    }

    /// The codes `respond` names in its section: "Exit codes: 0 done; 64 …; 75 …; 78 …."
    static func respondCodes() throws -> Set<Int> {
        let text = try contract()
        let section = try #require(text.range(of: "### `respond`"))
        let rest = text[section.upperBound...]
        let start = try #require(rest.range(of: "Exit codes:"))
        let sentence = rest[start.upperBound...].prefix { $0 != "." }
        return Set(sentence.split(separator: ";").compactMap { part in
            Int(part.drop { $0 == " " || $0 == "\n" }.prefix { $0.isNumber })
        })
    }

    /// The codes of a file's comment block headed `Exit codes of <command> (docs/contract.md…`:
    /// its lines `#   <code>[, <code>…]  text`, up to the first line that is not indented comment.
    static func commentCodes(_ text: String, command: String) -> Set<Int>? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let head = lines.firstIndex(where: { $0.contains("Exit codes of \(command) (docs/contract.md") }) else { return nil }
        var codes = Set<Int>()
        for line in lines[(head + 1)...] {
            guard line.hasPrefix("#  ") else { break }
            let body = line.dropFirst().drop { $0 == " " }
            guard let first = body.first, first.isNumber else { continue }
            let list = body.prefix { $0.isNumber || $0 == "," || $0 == " " }
            for part in list.split(separator: ",") { if let n = Int(part.trimmingCharacters(in: .whitespaces)) { codes.insert(n) } }
        }
        return codes
    }

    /// A unit's setting, its continuation lines joined (nil when absent).
    static func setting(_ key: String, in text: String) -> String? {
        var joined: [String] = []
        var current = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") { continue }
            if line.hasSuffix("\\") { current += line.dropLast() + " "; continue }
            joined.append(current + line)
            current = ""
        }
        return joined.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
    }

    @Test("the contract's own lists read as expected (the other tests compare with them)")
    func contractCodes() throws {
        #expect(try Self.runCodes() == [0, 1, 64, 65, 70, 73, 75, 78])
        #expect(try Self.respondCodes() == [0, 64, 75, 78])
    }

    @Test("each file's exit-code comments name exactly the contract's codes")
    func exitCodeComments() throws {
        let run = try Self.runCodes(), respond = try Self.respondCodes()
        let expected: [(file: String, command: String, codes: Set<Int>)] = [
            ("iap-reconcile.service", "run", run), ("iap-reconcile.cron", "run", run),
            ("iap-reconcile.cron", "respond", respond), ("iap-reconcile-respond.service", "respond", respond),
            ("iap-reconcile-respond@.service", "respond", respond),
        ]
        for e in expected {
            let codes = Self.commentCodes(try Self.text(e.file), command: e.command)
            #expect(codes == e.codes, "\(e.file), \(e.command): \(codes.map { $0.sorted().description } ?? "no block")")
        }
        // The night's template says its codes are the single unit's.
        #expect(try Self.text("iap-reconcile@.service").contains("Exit codes, restarts and the failure notice are those of jobs/iap-reconcile.service"))
        // The parser sees a code left out.
        let trimmed = try Self.text("iap-reconcile.service").replacingOccurrences(of: "#   70  ", with: "#   ")
        #expect(Self.commentCodes(trimmed, command: "run") != run)
    }

    @Test("a night is restarted for 75 alone; respond is never restarted and takes 75 as success")
    func restarts() throws {
        let run = try Self.runCodes()
        for file in ["iap-reconcile.service", "iap-reconcile@.service"] {
            let text = try Self.text(file)
            let prevent = try #require(Self.setting("RestartPreventExitStatus", in: text), "\(file)")
            #expect(Set(prevent.split(separator: " ").compactMap { Int($0) }) == run.subtracting([0, 75]), "\(file): \(prevent)")
            #expect(Self.setting("Restart", in: text) == "on-failure", "\(file)")
            #expect(Self.setting("SuccessExitStatus", in: text) == "", "\(file)")
        }
        for file in ["iap-reconcile-respond.service", "iap-reconcile-respond@.service"] {
            let text = try Self.text(file)
            #expect(Self.setting("Restart", in: text) == nil, "\(file)")
            #expect(Self.setting("SuccessExitStatus", in: text) == "75", "\(file)")
            #expect(Self.setting("OnFailure", in: text) == "iap-reconcile-notify@%n.service", "\(file)")
        }
    }

    @Test("each instance writes metrics of its own, labelled with its name")
    func perInstanceMetrics() throws {
        for (file, collected) in [("iap-reconcile@.service", "iap-reconcile@%i.prom"),
                                  ("iap-reconcile-respond@.service", "iap-reconcile-respond@%i.prom")] {
            let text = try Self.text(file)
            let start = try #require(Self.setting("ExecStart", in: text))
            #expect(start.contains("--metrics-file /var/lib/iap-reconcile/%i/"), "\(file)")
            let post = try #require(Self.setting("ExecStopPost", in: text), "\(file)")
            #expect(post.contains("/var/lib/prometheus/node-exporter/" + collected) && post.contains("iap_instance"), "\(file)")
        }
        #expect(try Self.text("iap-reconcile-respond@.timer").contains("Unit=iap-reconcile-respond@%i.service"))
    }

    @Test("systemd accepts every unit, with ExecStart= pointing at the built binary",
          .enabled(if: systemdAnalyze != nil, "systemd-analyze is not installed here: the units are not verified"))
    func systemdVerifies() throws {
        let analyze = try #require(Self.systemdAnalyze)
        let dir = try Harness.scratchDirectory("units")
        defer { try? FileManager.default.removeItem(at: dir) }
        let binary = Harness.binDir.appendingPathComponent("iap-reconcile").path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build first: \(binary)")
        var names: [String] = []
        var pointed = 0
        for name in Self.unitNames {
            var text = try Self.text(name)
            if text.contains("ExecStart=" + Self.installedBinary) {
                text = text.replacingOccurrences(of: Self.installedBinary, with: binary)
                pointed += 1
            }
            try text.write(to: dir.appendingPathComponent(name), atomically: true, encoding: .utf8)
            // A template is verified as one of its instances.
            names.append(name.contains("@.") ? name.replacingOccurrences(of: "@.", with: "@test.") : name)
        }
        #expect(pointed == 4, "units that start the binary: \(pointed)")
        var environment = ProcessInfo.processInfo.environment
        environment["SYSTEMD_UNIT_PATH"] = dir.path + ":"
        environment["SYSTEMD_LOG_COLOR"] = "0"
        let ran = try Self.run(analyze, ["verify", "--man=no"] + names, environment: environment)
        #expect(ran.status == 0 && ran.output.isEmpty, "systemd-analyze verify: exit \(ran.status)\n\(ran.output)")
        // It does say so when a unit is wrong: a unit whose binary is missing.
        let broken = dir.appendingPathComponent("iap-reconcile.service")
        try (try String(contentsOf: broken, encoding: .utf8)).replacingOccurrences(of: binary, with: dir.path + "/absent")
            .write(to: broken, atomically: true, encoding: .utf8)
        let refused = try Self.run(analyze, ["verify", "--man=no", "iap-reconcile.service"], environment: environment)
        #expect(refused.status != 0 && refused.output.contains("absent"), "\(refused.output)")
    }

    @Test("the failure notice mails the failed command's own result, never another command's")
    func notifierMailsTheFailedCommandsResult() throws {
        let unit = try Self.text("iap-reconcile-notify@.service")
        let start = try #require(Self.setting("ExecStart", in: unit))
        // ExecStart=/bin/sh -c '<script>' sh %i, systemd's escapes undone.
        let open = try #require(start.range(of: "/bin/sh -c '")), close = try #require(start.range(of: "' sh %i", options: .backwards))
        var script = String(start[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "$$", with: "$").replacingOccurrences(of: "%%", with: "%")
            .replacingOccurrences(of: "\\\\", with: "\\")
        let dir = try Harness.scratchDirectory("notify")
        defer { try? FileManager.default.removeItem(at: dir) }
        script = script.replacingOccurrences(of: "/var/lib/", with: dir.path + "/var/lib/")
            .replacingOccurrences(of: "/usr/sbin/sendmail", with: dir.path + "/bin/sendmail")
        // journalctl and sendmail stand-ins: the journal says which unit, the mail goes to a file.
        let bin = dir.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try "#!/bin/sh\necho \"journal of $2\"\n".write(to: bin.appendingPathComponent("journalctl"), atomically: true, encoding: .utf8)
        try "#!/bin/sh\ncat > \"$(dirname \"$0\")/mail\"\n".write(to: bin.appendingPathComponent("sendmail"), atomically: true, encoding: .utf8)
        for tool in ["journalctl", "sendmail"] {
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: bin.appendingPathComponent(tool).path)
        }
        // Each command's result, each with a marker of its own.
        let results: [(unit: String, path: String)] = [
            ("iap-reconcile.service", "var/lib/iap-reconcile/reports/last-run.json"),
            ("iap-reconcile@games.service", "var/lib/iap-reconcile/games/reports/last-run.json"),
            ("iap-reconcile-respond.service", "var/lib/prometheus/node-exporter/iap-reconcile-respond.prom"),
            ("iap-reconcile-respond@games.service", "var/lib/iap-reconcile/games/iap-reconcile-respond.prom"),
        ]
        for r in results {
            let file = dir.appendingPathComponent(r.path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try "result of \(r.unit)\n".write(to: file, atomically: true, encoding: .utf8)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = bin.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        for r in results {
            try? FileManager.default.removeItem(at: bin.appendingPathComponent("mail"))
            let ran = try Self.run("/bin/sh", ["-c", script, "sh", r.unit], environment: environment)
            #expect(ran.status == 0, "\(r.unit): \(ran.output)")
            let mail = (try? String(contentsOf: bin.appendingPathComponent("mail"), encoding: .utf8)) ?? ""
            #expect(mail.hasPrefix("Subject: \(r.unit) failed on "), "\(mail)")
            #expect(mail.contains("result of \(r.unit)\n") && mail.contains("journal of \(r.unit)"), "\(r.unit): \(mail)")
            for other in results where other.unit != r.unit {
                #expect(!mail.contains("result of \(other.unit)\n"), "\(r.unit)'s mail carries \(other.unit)'s result")
            }
        }
    }
}
