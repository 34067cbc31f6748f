import AppStore
import ArgumentParser
import Foundation
import HTTP
import JobStore
import Logging
import NightDecide
import NightLearn
import Reconciliation

struct IAPReconcile: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iap-reconcile",
        abstract: "Find the money mistakes of iOS in-app purchases: missed orders, duplicate grants, refunds to claw back.",
        discussion: """
            A nightly batch job. It reads orders, receipts and grants from PostgreSQL, re-verifies with the \
            App Store every receipt still unresolved, matches Apple's transactions to orders and grants, \
            and writes CSV reports to <out>/<as-of date>/. Safe to run again: answers are kept, no receipt \
            with a definitive answer is sent twice (the refund sweep aside), and a rerun for the same date replaces its reports whole.

            \(environmentHelp)
            """,
        version: "\(iapReconcileVersion) (commit \(iapReconcileCommit))",
        subcommands: [
            Run.self, Verify.self, Migrate.self, CheckCommand.self, LookupCommand.self, RespondCommand.self,
            ReleaseCommand.self,
        ],
        defaultSubcommand: Run.self)
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The whole night: migrate, verify, decide, write the reports (the default).",
        discussion: environmentHelp)

    @OptionGroup var common: CommonOptions

    @Option(help: "Folder for the reports; each run writes <out>/<as-of UTC date>/.")
    var out = JobSettings.defaults.out

    @Flag(help: "Decide from the stored App Store answers only: send nothing.")
    var noVerify = false

    /// For `make bench`: run the decide stage's SQL and read every row, apply no rule, write nothing.
    @Flag(help: .hidden)
    var databaseOnly = false

    @Flag(
        help:
            "Print the night's plan and exit 0, touching nothing: each step in order, the session that runs it, what it reads and writes, and the steps it waits for (docs/contract.md, 'The night's plan')."
    )
    var plan = false

    @OptionGroup(title: "Held nights (a night that looks wrong is held, not published: exit 65, reports under <out>/held/<date>/)")
    var hold: HoldOptions

    /// For the tests: a deliberate fault. `tally-drop:RELATION` takes one row of that source
    /// relation out of the conservation tally, so the check must fail (exit 70).
    /// `tally-grants-by-sql` is not a fault but the other count: the grants' buckets from the
    /// tally's own SQL instead of from the rules, which the tests compare.
    /// `hold-source-snapshot:MS[,MS…]`: with SOURCE_DATABASE_URL, each attempt of the copy holds
    /// its snapshot on the source that many milliseconds after the first relation (the Nth number
    /// for the Nth attempt), so that a test can make the standby cancel it (a recovery conflict).
    @Option(help: .hidden)
    var injectFault: String?

    func run() throws {
        var settings = try common.settings()
        settings.out = out
        settings.hold = try hold.thresholds()
        if let injectFault {
            if injectFault == "tally-grants-by-sql" {
                settings.tallyGrantsBySQL = true
            } else if injectFault.hasPrefix("tally-drop:") {
                settings.faultDropTallyRow = String(injectFault.dropFirst("tally-drop:".count))
            } else if injectFault.hasPrefix("hold-source-snapshot:"),
                case let ms = injectFault.dropFirst("hold-source-snapshot:".count).split(separator: ",").compactMap({ Int($0) }),
                !ms.isEmpty
            {
                settings.faultHoldSourceSnapshotMs = ms
            } else {
                throw ValidationError("unknown --inject-fault \(injectFault)")
            }
        }
        if plan {
            print(
                Night.planTable(settings: settings, stages: databaseOnly ? .decideDatabaseOnly : .full(verify: !noVerify)),
                terminator: "")
            return
        }
        if databaseOnly {
            try execute(settings: settings, logger: common.logger(), stages: .decideDatabaseOnly, command: "bench-baseline")
            return
        }
        try execute(settings: settings, logger: common.logger(), stages: .full(verify: !noVerify), command: "run")
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Only the verification stage: ask the App Store about every unresolved receipt and the refund sweep.",
        discussion: environmentHelp)

    @OptionGroup var common: CommonOptions

    func run() throws {
        try execute(settings: common.settings(), logger: common.logger(), stages: .verifyOnly, command: "verify")
    }
}

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or update the job's own schema (run does this first).",
        discussion: """
            Before it applies anything, it compares the checksum recorded for each applied migration with \
            this build's: a schema migrated by a different build stops it (and run, verify, lookup) with exit 78, \
            untouched. Rows recorded before there were checksums get theirs (docs/contract.md, 'Migrations and \
            their checksums').

            With --status it changes nothing: it prints each migration, applied or pending, with its applied_at, \
            checksum and whether that is this build's text (matches, earlier, DIFFERENT, NOT-IN-BUILD, backfill, \
            UNKNOWN, pending) on stdout, and exits 0.
            """ + "\n\n" + environmentHelp)

    @Flag(help: "List the applied and pending migrations with their checksums (stdout); change nothing.")
    var status = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        guard status else {
            try execute(settings: common.settings(), logger: common.logger(), stages: .migrateOnly, command: "migrate")
            return
        }
        do {
            print(try MigrationStatus.report(settings: common.settings().database))
        } catch let error as JobError {
            FileHandle.standardError.write(Data("iap-reconcile: \(Secrets.redact(error.message))\n".utf8))
            throw ExitCode(error.code.rawValue)
        }
    }
}

/// Runs the stages and turns a `JobError` into its one line and exit code. Whatever the ending,
/// the operator's files follow: `<out>/last-run.json` for `run`, and `--metrics-file`.
func execute(settings: JobSettings, logger: Logger, stages: Night.Stages, command: String) throws {
    let started = EpochMillis(Date().timeIntervalSince1970 * 1000)
    let night = Night(settings: settings, logger: logger)
    func recordEnding(_ code: Int32, _ reason: String) {
        let ending = RunOutcome.Ending(
            exitCode: code, reason: reason, startedAt: started,
            endedAt: EpochMillis(Date().timeIntervalSince1970 * 1000), command: command,
            asOf: settings.asOf, summary: night.lastSummary)
        if case .full = stages {
            // Exit 73 already said that --out cannot be written: no second line for the same cause.
            do { try RunOutcome.writeLastRun(ending, out: settings.out) } catch {
                if code != ExitStatus.cannotWrite.rawValue {
                    logger.warning("last-run.json could not be written", metadata: ["out": "\(settings.out)", "error": "\(error)"])
                }
            }
        }
        if let path = settings.metricsFile {
            do { try RunOutcome.writeMetrics(ending, path: path) } catch {
                // A warning only: the metrics never change the exit code.
                FileHandle.standardError.write(
                    Data(
                        "iap-reconcile: warning: the metrics file \(path) could not be written (\(error)); the run's exit code is unchanged\n"
                            .utf8))
            }
        }
    }
    do {
        let summary: RunSummary
        do {
            summary = try night.run(stages, command: command)
        } catch let error as JobError {
            recordEnding(error.code.rawValue, Secrets.redact(error.message))
            throw error
        }
        recordEnding(0, "done")
        if case .full = stages {
            FileHandle.standardError.write(Data(RunReport.text(summary).utf8))
        } else if case .verifyOnly = stages {
            let v = summary.verification
            FileHandle.standardError.write(
                Data(
                    "verify: \(v.candidates) unresolved + \(v.sweep) sweep; \(v.ok) ok, \(v.rejected) rejected, \(v.unresolved) still unresolved, \(v.requests) requests; \(v.signedVerified + v.signedRejected) signed transactions (\(v.signedRejected) rejected); \(v.receiptsOffline) app receipts verified offline, \(v.receiptsOfflineRejected.values.reduce(0, +)) rejected, \(v.receiptsToVerifyReceipt.values.reduce(0, +)) sent to verifyReceipt in \(String(format: "%.1f", v.seconds)) s\n"
                        .utf8))
        }
    } catch let error as JobError {
        FileHandle.standardError.write(Data("iap-reconcile: \(Secrets.redact(error.message))\n".utf8))
        throw ExitCode(error.code.rawValue)
    }
}

HTTPGlobal.initialize()
do {
    var command = try IAPReconcile.parseAsRoot()
    try command.run()
} catch {
    // Contract §5: each exit code comes with one clear line. ArgumentParser's usage errors say
    // three; keep its first line (what is wrong) and point at --help. Help and our own exit
    // codes (already printed) go through ArgumentParser as usual.
    let code = IAPReconcile.exitCode(for: error)
    if code.rawValue == 64 {
        // Its lines folded into one: "… Please provide one of the following:" is followed by the
        // values, one per line ("- trace" …).
        let lines = IAPReconcile.message(for: error).split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        var message = lines.first ?? "bad usage"
        let values = lines.dropFirst().filter { $0.hasPrefix("- ") }.map { $0.dropFirst(2) }
        if !values.isEmpty { message += " " + values.joined(separator: ", ") }
        let text = message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message
        FileHandle.standardError.write(Data("iap-reconcile: \(text) (see iap-reconcile --help)\n".utf8))
        exit(64)
    }
    IAPReconcile.exit(withError: error)
}
