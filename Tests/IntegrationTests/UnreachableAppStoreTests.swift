import Foundation
import Postgres
import Testing

/// No failure path spins: an App Store that gives no HTTP answer at all costs
/// the night seconds, not the night. The chaos scenarios `host-*` try every way a host can fail
/// (docs/reliability.md); these two are the rule's ends: a host that never answered, and one that
/// dies in the middle of the night.
@Suite("An App Store that cannot be reached", .serialized, .enabled(if: Harness.hasDatabase))
struct UnreachableAppStoreTests {
    static let asOf = VerificationTests.asOf
    static let timeoutMs = 1000

    @Test("a host that does not resolve: exit 75 within --timeout-ms + 15 s and 5 CPU-s, one line, nothing believed")
    func unresolvableHost() throws {
        let t = try TestDatabase("unresolvable")
        defer { t.drop() }
        try VerificationTests.seed(t, users: 600, receipts: 300)
        let out = try Harness.scratchDirectory("unresolvable-reports")
        let limit = Double(Self.timeoutMs) / 1000 + 15
        let night = try runMeasured("iap-reconcile", ["run", "--as-of", Self.asOf, "--out", out.path, "--no-progress",
                                                      "--timeout-ms", String(Self.timeoutMs)],
                                    environment: t.environment(["IAP_VERIFY_URL_PRODUCTION": "https://apple.invalid/verifyReceipt",
                                                                "IAP_VERIFY_URL_SANDBOX": "https://apple.invalid/verifyReceipt"]),
                                    timeout: 4 * limit)
        #expect(night.status == 75, "\(night.stderr)")
        let lines = night.stderr.split(separator: "\n").filter { $0.hasPrefix("iap-reconcile:") }
        #expect(lines.count == 1 && lines[0].contains("the App Store is unreachable (Could not resolve host: apple.invalid"),
                "\(night.stderr)")
        #expect(night.seconds <= limit, "took \(night.seconds) s")
        #expect(night.cpuSeconds <= 5, "took \(night.cpuSeconds) CPU-s")
        // Nothing believed, and every receipt is asked again by the next night.
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE definitive OR next_eligible_at > now()") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE failed_runs > 0") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.verify_attempts") <= 16)
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("2026-11-21").path))
    }

    @Test("the host dies after answering a while: exit 75 once two waves got no answer; the answers stay stored")
    func hostDiesMidRun() throws {
        let t = try TestDatabase("hostdies")
        defer { t.drop() }
        try VerificationTests.seed(t, users: 800, receipts: 400)
        let sim = try SimulatorProcess(["--latency-ms", "100"])
        let job = try startTool("iap-reconcile", ["verify", "--as-of", Self.asOf, "--concurrency", "4", "--no-progress",
                                                  "--timeout-ms", String(Self.timeoutMs), "--sweep-limit", "0"],
                                environment: t.environment(sim.urls))
        // 400 receipts at 4 in flight and 100 ms each: about 10 s. The host goes after 40 answers.
        let deadline = Date().addingTimeInterval(60)
        while sim.calls().count < 40 && Date() < deadline { usleep(20_000) }
        sim.stop()
        let died = Date()
        let result = job.wait(timeout: 120)
        let afterDeath = Date().timeIntervalSince(died)
        #expect(result.status == 75, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("iap-reconcile:") }
        #expect(lines.count == 1 && lines[0].contains("the App Store stopped answering (")
                && lines[0].contains("127.0.0.1:\(sim.port)") && lines[0].contains("the answers received are kept"),
                "\(result.stderr)")
        #expect(afterDeath <= Double(Self.timeoutMs) / 1000 + 15, "ended \(afterDeath) s after the host died")
        // What the host answered is kept; what it did not is asked again by the next night.
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE definitive") >= 20)
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE NOT definitive AND last_status IS NULL "
                          + "AND next_eligible_at > now()") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE definitive") < 400)
    }
}

/// A finished child process and what it cost, from `wait4`'s resource usage (all its threads).
struct MeasuredResult {
    var status: Int32
    var stderr: String
    var seconds: Double
    var cpuSeconds: Double
}

/// Runs an executable from the build folder with `posix_spawn`, waits with `wait4` and reports its
/// wall and CPU seconds; killed (status -9) after `timeout` seconds. Foundation's `Process` reaps
/// its children itself, without their resource usage.
func runMeasured(_ tool: String, _ arguments: [String], environment: [String: String], timeout: TimeInterval)
    throws -> MeasuredResult {
    let err = try Harness.scratchDirectory("measured").appendingPathComponent("stderr")
    let path = Harness.binDir.appendingPathComponent(tool).path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, err.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let started = Date()
    let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard spawned == 0 else { throw SimulatorStartError(message: "posix_spawn \(path): errno \(spawned)") }
    var status: Int32 = 0
    var usage = rusage()
    var killed = false
    while wait4(pid, &status, WNOHANG, &usage) == 0 {
        if Date().timeIntervalSince(started) > timeout {
            kill(pid, SIGKILL)
            killed = true
            _ = wait4(pid, &status, 0, &usage)
            break
        }
        usleep(10_000)
    }
    let seconds = Date().timeIntervalSince(started)
    let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1_000_000
    // WIFEXITED / WEXITSTATUS are macros Swift does not import: the low 7 bits are the signal.
    let exitStatus = killed || status & 0x7f != 0 ? -(status & 0x7f) : (status >> 8) & 0xff
    return MeasuredResult(status: exitStatus, stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "",
                          seconds: seconds, cpuSeconds: cpu)
}
