import Foundation
import Postgres

/// A PostgreSQL cluster of one test's own, beside the one the Makefile started: a primary, or a
/// streaming hot standby of one (`pg_basebackup -R`). In a temporary folder, on a unix socket in
/// that folder only (no TCP), with a port number of its own; as the postgres user when the tests
/// run as root (initdb and postgres refuse root), as the test's user otherwise. `stop` ends the
/// server and removes the folder.
final class ScratchCluster: Sendable {
    /// PostgreSQL's server programs (`pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin),
    /// or nil when they are not installed.
    static let bindir: String? = {
        var candidates: [String] = []
        if let out = try? shell(["pg_config", "--bindir"]), !out.isEmpty { candidates.append(out) }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        return candidates.first { dir in
            ["initdb", "pg_ctl", "pg_basebackup", "postgres"].allSatisfy { FileManager.default.isExecutableFile(atPath: "\(dir)/\($0)") }
        }
    }()

    static var available: Bool { bindir != nil }
    static let isRoot = getuid() == 0

    let dir: String
    let port: Int
    var data: String { dir + "/data" }
    var logFile: String { dir + "/server.log" }

    private init(dir: String, port: Int) {
        self.dir = dir
        self.port = port
    }

    /// A new primary with `settings` added to postgresql.conf (streaming replication allowed).
    static func primary(_ settings: [String: String] = [:]) throws -> ScratchCluster {
        let c = ScratchCluster(dir: try ownedTemporaryFolder(), port: Int.random(in: 20_000...29_999))
        try c.asOwner([bin("initdb"), "-D", c.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"])
        try c.configure(["wal_level": "replica", "max_wal_senders": "4", "hot_standby": "on"].merging(settings) { $1 })
        try c.start()
        return c
    }

    /// A streaming hot standby of `primary`, made by `pg_basebackup -R`, with `settings` added.
    static func standby(of primary: ScratchCluster, _ settings: [String: String] = [:]) throws -> ScratchCluster {
        let c = ScratchCluster(dir: try ownedTemporaryFolder(), port: primary.port + 1)
        try c.asOwner([bin("pg_basebackup"), "-h", primary.dir, "-p", String(primary.port), "-U", "postgres",
                       "-D", c.data, "-R", "-X", "stream", "-c", "fast"])
        try c.configure(["hot_standby": "on"].merging(settings) { $1 })
        try c.start()
        return c
    }

    /// libpq keywords for a database of this cluster.
    func conninfo(_ database: String, user: String = "postgres") -> String {
        "host=\(dir) port=\(port) dbname=\(database) user=\(user)"
    }

    /// libpq's variables for a child process (`iap-sim seed`) to reach a database of this cluster.
    func environment(_ database: String) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["PGHOST"] = dir
        env["PGPORT"] = String(port)
        env["PGDATABASE"] = database
        env["PGUSER"] = "postgres"
        env.removeValue(forKey: "DATABASE_URL")
        return env
    }

    func connect(_ database: String = "postgres") throws -> PGConnection { try PGConnection(conninfo: conninfo(database)) }

    /// Runs `sql` on a database of this cluster as postgres, on a session of its own.
    func execute(_ database: String, _ sql: SQL) throws {
        let db = try connect(database)
        defer { db.close() }
        try db.execute(sql)
    }

    func serverLog() -> String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    func stop() {
        _ = try? asOwner([Self.bin("pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: dir)
    }

    private func configure(_ settings: [String: String]) throws {
        let base = ["listen_addresses": "''", "unix_socket_directories": "'\(dir)'", "port": String(port),
                    "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "40",
                    "shared_buffers": "32MB"]
        let lines = base.merging(settings) { $1 }.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }
        let conf = data + "/postgresql.conf"
        let old = try String(contentsOfFile: conf, encoding: .utf8)
        try (old + "\n# ScratchCluster\n" + lines.joined(separator: "\n") + "\n").write(toFile: conf, atomically: false, encoding: .utf8)
    }

    private func start() throws {
        try asOwner([Self.bin("pg_ctl"), "-D", data, "-l", logFile, "-w", "-t", "60", "start"])
    }

    private static func bin(_ program: String) -> String { (bindir ?? "") + "/" + program }

    /// A temporary folder the server's user owns (mode 0700 as postgres wants its data's parent).
    private static func ownedTemporaryFolder() throws -> String {
        let dir = "/tmp/iap-scratch-pg-" + UUID().uuidString.prefix(8).lowercased()
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        if isRoot { try shell(["chown", "postgres:postgres", dir]) }
        return dir
    }

    @discardableResult
    private func asOwner(_ arguments: [String]) throws -> String {
        try Self.shell(Self.isRoot ? ["runuser", "-u", "postgres", "--"] + arguments : arguments)
    }

    /// Runs a program (found on PATH), waits, and returns its stdout; throws with its stderr when
    /// it fails. By posix_spawn and waitpid: Foundation's Process missed the end of `runuser`
    /// (left a zombie, waited forever) when the child leaves a daemon behind (`pg_ctl start`).
    @discardableResult
    static func shell(_ arguments: [String]) throws -> String {
        let dir = try Harness.scratchDirectory("cluster-cmd")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out").path, err = dir.appendingPathComponent("err").path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv: [UnsafeMutablePointer<CChar>?] = (["/usr/bin/env"] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, environ)
        guard spawned == 0 else { throw ClusterError(message: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let stdout = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        let exited = (status & 0x7f) == 0, code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw ClusterError(message: "\(arguments.joined(separator: " ")) failed (status \(status)): "
                + ((try? String(contentsOfFile: err, encoding: .utf8)) ?? ""))
        }
        return stdout
    }
}

struct ClusterError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
