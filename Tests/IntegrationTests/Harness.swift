import Foundation
import Postgres
import Testing

/// The real parts the integration tests run against: the throwaway Postgres the Makefile
/// started (libpq variables in the environment), and the built `iap-reconcile` and `iap-sim`
/// executables (`$IAP_BIN_DIR`, set by `make test`).
enum Harness {
    static var binDir: URL {
        if let dir = ProcessInfo.processInfo.environment["IAP_BIN_DIR"], !dir.isEmpty {
            return URL(fileURLWithPath: dir)
        }
        // `swift test` without the Makefile: the executables sit beside the test bundle.
        return Bundle.main.bundleURL.deletingLastPathComponent()
    }

    static var hasDatabase: Bool { ProcessInfo.processInfo.environment["PGHOST"] != nil || ProcessInfo.processInfo.environment["DATABASE_URL"] != nil }

    static func scratchDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("iap-test-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A database of its own for one test, dropped at the end.
final class TestDatabase {
    let name: String
    let db: PGConnection

    init(_ label: String) throws {
        name = "t_\(label)_\(UInt32.random(in: 0...UInt32.max))"
        let admin = try PGConnection(conninfo: "dbname=postgres")
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(ident: name)")
        db = try PGConnection(conninfo: "dbname=\(name)")
    }

    /// Environment for child processes: libpq variables pointing at this database.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["PGDATABASE"] = name
        env.removeValue(forKey: "DATABASE_URL")
        for (k, v) in extra { env[k] = v }
        return env
    }

    func scalar(_ sql: SQL) throws -> String? {
        let r = try db.query(sql)
        return r.rowCount > 0 ? r.value(0, 0) : nil
    }

    func int(_ sql: SQL) throws -> Int { Int(try scalar(sql) ?? "0") ?? 0 }

    /// A schema of views over the four source relations in `public`; `overrides` gives the
    /// SELECT of some of them (a missing column, a slow read).
    func sourceViews(_ schema: String, _ overrides: [String: SQL] = [:]) throws {
        var sql: SQL = "CREATE SCHEMA \(ident: schema);"
        for relation in ["iap_products", "iap_orders", "iap_receipts", "iap_grants"] {
            sql += " CREATE VIEW \(ident: schema).\(ident: relation) AS \(overrides[relation] ?? "SELECT * FROM public.\(ident: relation)");"
        }
        try db.execute(sql)
    }

    func drop() {
        db.close()
        if let admin = try? PGConnection(conninfo: "dbname=postgres") {
            try? admin.execute("DROP DATABASE IF EXISTS \(ident: name) WITH (FORCE)")
            admin.close()
        }
    }
}

/// A finished child process.
struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var killedBySignal: Bool
}

/// Runs an executable from the build folder, waiting for it.
@discardableResult
func runTool(_ tool: String, _ arguments: [String], environment: [String: String], timeout: TimeInterval = 300)
    throws -> ProcessResult {
    let p = try startTool(tool, arguments, environment: environment)
    return p.wait(timeout: timeout)
}

/// A child process whose output is collected into files (no pipe to fill up and block it).
final class RunningTool {
    let process: Process
    let outURL: URL
    let errURL: URL

    init(process: Process, outURL: URL, errURL: URL) {
        self.process = process
        self.outURL = outURL
        self.errURL = errURL
    }

    func wait(timeout: TimeInterval) -> ProcessResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus, stdout: read(outURL), stderr: read(errURL),
                             killedBySignal: process.terminationReason == .uncaughtSignal)
    }

    func output() -> String { read(outURL) }
    func errors() -> String { read(errURL) }

    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func terminate() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    private func read(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
}

func startTool(_ tool: String, _ arguments: [String], environment: [String: String]) throws -> RunningTool {
    try startProcess(Harness.binDir.appendingPathComponent(tool), arguments, environment: environment)
}

/// Any program (`bash`, another build's binary), its output collected as `startTool`'s; `directory`:
/// its working directory (else the test's).
func startProcess(_ executable: URL, _ arguments: [String], environment: [String: String], directory: URL? = nil)
    throws -> RunningTool {
    let p = Process()
    p.executableURL = executable
    p.arguments = arguments
    p.environment = environment
    if let directory { p.currentDirectoryURL = directory }
    let dir = try Harness.scratchDirectory("proc")
    let out = dir.appendingPathComponent("stdout")
    let err = dir.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    p.standardOutput = try FileHandle(forWritingTo: out)
    p.standardError = try FileHandle(forWritingTo: err)
    try p.run()
    return RunningTool(process: p, outURL: out, errURL: err)
}

/// The App Store simulator as a separate process on loopback.
final class SimulatorProcess {
    let tool: RunningTool
    let port: Int
    let callLog: URL

    init(_ arguments: [String] = [], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let dir = try Harness.scratchDirectory("sim")
        callLog = dir.appendingPathComponent("calls.tsv")
        let portFile = dir.appendingPathComponent("port")
        tool = try startTool("iap-sim", ["serve", "--port", "0", "--port-file", portFile.path, "--call-log", callLog.path]
                             + arguments, environment: environment)
        let deadline = Date().addingTimeInterval(20)
        var found: Int?
        while found == nil && Date() < deadline {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
               let p = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) { found = p } else { usleep(50_000) }
        }
        guard let found else {
            tool.terminate()
            throw SimulatorStartError(message: "iap-sim did not start: \(tool.errors())")
        }
        port = found
    }

    var productionURL: String { "http://127.0.0.1:\(port)/production/verifyReceipt" }
    var sandboxURL: String { "http://127.0.0.1:\(port)/sandbox/verifyReceipt" }

    var urls: [String: String] { ["IAP_VERIFY_URL_PRODUCTION": productionURL, "IAP_VERIFY_URL_SANDBOX": sandboxURL] }

    /// The call log: (unix ms, environment, receipt id, outcome).
    func calls() -> [(ms: Int64, env: String, rid: String, outcome: String)] {
        let text = (try? String(contentsOf: callLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 4, let ms = Int64(f[0]) else { return nil }
            return (ms, f[1], f[2], f[3])
        }
    }

    func stop() { tool.terminate() }
}

struct SimulatorStartError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A report's records, header first: RFC 4180 as the job writes it (quotes, doubled quotes, CRLF).
func csvRecords(_ url: URL) throws -> [[String]] {
    let text = try String(contentsOf: url, encoding: .utf8)
    var records: [[String]] = [], field = "", record: [String] = [], quoted = false
    var chars = Array(text)[...]
    while let c = chars.popFirst() {
        if quoted {
            if c == "\"" {
                if chars.first == "\"" { field.append("\""); chars.removeFirst() } else { quoted = false }
            } else { field.append(c) }
        } else if c == "\"" {
            quoted = true
        } else if c == "," {
            record.append(field); field = ""
        } else if c == "\r\n" || c == "\n" {
            record.append(field); field = ""; records.append(record); record = []
        } else { field.append(c) }
    }
    return records
}
