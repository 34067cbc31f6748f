import Foundation
import Testing

/// `iap-reconcile --version` prints the release CHANGELOG.md's newest heading names, and the
/// commit the build was made from.
@Suite("--version and CHANGELOG.md")
struct VersionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The version of CHANGELOG.md's first `## <version> — <date>` heading.
    static func newestRelease(_ changelog: String) -> (version: String, date: String)? {
        for line in changelog.split(separator: "\n") where line.hasPrefix("## ") {
            let parts = line.dropFirst(3).components(separatedBy: " — ")
            guard parts.count == 2 else { return nil }
            return (parts[0], parts[1])
        }
        return nil
    }

    @Test("--version is CHANGELOG.md's newest release and a commit of this repository")
    func versionIsTheNewestRelease() throws {
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = try #require(Self.newestRelease(changelog), "CHANGELOG.md has no `## <version> — <date>` heading")
        #expect(newest.version.split(separator: ".").count == 3 && newest.version.allSatisfy { $0.isNumber || $0 == "." })
        #expect(newest.date.count == 10 && newest.date.hasPrefix("20"), "\(newest.date)")
        let r = try runTool("iap-reconcile", ["--version"], environment: ProcessInfo.processInfo.environment)
        #expect(r.status == 0)
        let printed = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(printed.hasPrefix(newest.version + " (commit "), "--version prints \(printed); CHANGELOG.md's newest is \(newest.version)")
        let commit = String(printed.drop { $0 != "(" }.dropFirst("(commit ".count).dropLast())
        if FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(".git").path) {
            #expect(commit.count == 12 && commit.allSatisfy(\.isHexDigit), "\(printed)")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["git", "-C", Self.root.path, "cat-file", "-e", commit + "^{commit}"]
            try p.run()
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "\(commit) is not a commit of this repository")
        } else {
            #expect(commit == "unknown", "\(printed)")
        }
    }

    @Test("the heading reader takes the first release and refuses a heading without its date")
    func headingReader() {
        #expect(Self.newestRelease("# Changelog\n\n## 1.2.3 — 2026-12-05\n\n## 1.2.2 — 2026-12-01\n")?.version == "1.2.3")
        #expect(Self.newestRelease("# Changelog\n\n## Unreleased\n") == nil)
    }
}
