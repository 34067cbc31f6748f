import ArgumentParser
import AppStore
import Foundation
import HTTP
import Logging
import ReconcileJob
import Reconciliation

/// Options shared by every stage. Options come from the command line only; the environment
/// variables listed in `environmentHelp` carry connection, App Store and secret settings.
struct CommonOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The run's 'now' (ISO 8601, e.g. 2026-11-21T03:00:00Z or 2026-11-21). Decides the windows and the report folder.",
        valueName: "time"))
    var asOf: String?

    @Option(help: "Days back from --as-of: receipts submitted and transactions purchased in this window are checked.")
    var windowDays = 30

    @Option(help: ArgumentHelp(
        "Days back from --as-of for refunds: users with non-consumable or subscription grants this recent get their newest receipt re-verified, refunds.csv lists the refunds (and reversals) of this window, and the first notification sweep reaches this far back (at most 180 days in production, 30 in the sandbox).",
        valueName: "days"))
    var refundWindowDays = 90

    @Option(help: ArgumentHelp(
        "At most this many customers' transaction history asked per night (Server API: 50 requests/s; 20000 takes about 7 minutes): users with a paid open order first, then the newest; the others wait for a later night (summary.json sweeps.history_left).",
        valueName: "n"))
    var historyLimit = 20_000

    @Option(help: ArgumentHelp(
        "Write a node_exporter textfile here on every exit, failed runs included (temporary file, then rename): run times, last success, exit code, rows per report and reason, unresolved receipts, App Store requests and answers, seconds per stage, money. A file that cannot be written is a warning, never another exit code.",
        valueName: "path"))
    var metricsFile: String?

    @Option(help: ArgumentHelp(
        "Time zone of the times in reconciliation.xlsx (an IANA name, e.g. Asia/Shanghai; each time column's header names it). The CSV files stay in UTC.",
        valueName: "zone"))
    var reportTimezone = "UTC"

    @Option(help: ArgumentHelp(
        "Time zone of the days of Apple's daily sales reports (an IANA name; default Pacific time, from Apple's older FAQ: see docs/contract.md for the conflict). Only with the ASC_* variables.",
        valueName: "zone"))
    var salesReportTimezone = "America/Los_Angeles"

    @Option(help: ArgumentHelp("Language of summary.html: en or zh.", valueName: "language"))
    var reportLanguage = "en"

    @Flag(help: "Do not run the App Store Server API sweeps (notification and transaction history) in this run, though the key is set: for a run that must ask Get Transaction Info only (the refund sweep), as in make bench-api. summary.json lists the checks skipped.")
    var noApiSweeps = false

    @Option(help: ArgumentHelp(
        "For shops whose order ids are not UUIDs: the app sets appAccountToken to the name-based UUID (version 5) of the order id in this namespace; a purchase whose token matches is that order's (match exact).",
        valueName: "uuid"))
    var accountTokenNamespace: String?

    @Option(help: "At most this many receipts re-verified by the refund sweep per run (0 turns the sweep off).")
    var sweepLimit = 1000

    @Option(help: "Hours before the sweep asks about the same receipt again (so a rerun after a crash does not).")
    var sweepIntervalHours = 20

    @Option(help: "App Store requests in flight at once.")
    var concurrency = 16

    @Option(help: "Per-request timeout in milliseconds.")
    var timeoutMs = 15_000

    @Option(help: "Requests per receipt within one run before it is left unresolved for the next run (environment switches not counted).")
    var maxAttempts = 4

    @Option(help: "Base of the in-run exponential backoff with full jitter, in milliseconds.")
    var retryBaseMs = 500

    @Option(help: "A receipt still failing after a run waits this many minutes, doubled per failed run (max one day), before it is sent again.")
    var retryDelayMinutes = 10

    @Option(help: "Schema of the four source relations (iap_products, iap_orders, iap_receipts, iap_grants).")
    var sourceSchema = "public"

    @Option(help: "The job's own schema: verification state, learned transactions, findings history, runs.")
    var jobSchema = "recon"

    @Option(help: "Seconds to wait for another run's lock before giving up with exit 75 (a run killed a moment ago lets go within a few seconds).")
    var lockWaitSeconds = 5

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevel = .notice

    @Option(help: "Progress lines on stderr: auto (when stderr is a terminal), always, never.")
    var progress: ProgressMode = .auto

    @Flag(help: "No progress lines on stderr (the same as --progress never).")
    var noProgress = false

    @Option(name: .customLong("api-rate"), help: ArgumentHelp(
        "The job's own budget for one App Store Server API endpoint, ENDPOINT=N requests per second (repeatable; the sandbox gets a tenth).",
        discussion: "Endpoints and Apple's limits: transaction_info, transaction_history, notification_history 50; refund_history, order_lookup 10. "
            + "Without this option the job uses 90% of them (45 and 9); a value given here is used as it is.",
        valueName: "endpoint=n"))
    var apiRate: [String] = []

    func settings() throws -> JobSettings {
        let env = ProcessInfo.processInfo.environment
        let asOfMillis: EpochMillis
        if let asOf {
            guard let parsed = UTC.parse(asOf) else {
                throw ValidationError("--as-of '\(asOf)' is not an ISO 8601 time (e.g. 2026-11-21T03:00:00Z)")
            }
            asOfMillis = parsed
        } else {
            asOfMillis = EpochMillis(Date().timeIntervalSince1970 * 1000)
        }
        for (name, value, minimum) in [("--window-days", windowDays, 1), ("--refund-window-days", refundWindowDays, 1),
                                       ("--sweep-limit", sweepLimit, 0), ("--concurrency", concurrency, 1),
                                       ("--timeout-ms", timeoutMs, 1), ("--max-attempts", maxAttempts, 1),
                                       ("--retry-base-ms", retryBaseMs, 0), ("--retry-delay-minutes", retryDelayMinutes, 0),
                                       ("--sweep-interval-hours", sweepIntervalHours, 0),
                                       ("--lock-wait-seconds", lockWaitSeconds, 0), ("--history-limit", historyLimit, 0)]
        where value < minimum {
            throw ValidationError("\(name) must be at least \(minimum)")
        }
        guard concurrency <= 1024 else { throw ValidationError("--concurrency must be at most 1024") }
        guard lockWaitSeconds <= 3600 else { throw ValidationError("--lock-wait-seconds must be at most 3600") }
        var s: JobSettings
        do {
            s = JobSettings(asOf: asOfMillis, jobSchema: try JobSchema(jobSchema))
            _ = try JobSchema(sourceSchema)
        } catch let e as JobError {
            throw ValidationError(e.message)
        }
        s.windowDays = windowDays
        s.refundWindowDays = refundWindowDays
        s.historyLimit = historyLimit
        s.apiSweeps = !noApiSweeps
        s.metricsFile = metricsFile
        guard TimeZone(identifier: reportTimezone) != nil else {
            throw ValidationError("--report-timezone '\(reportTimezone.prefix(60))' is not an IANA time zone name (e.g. Asia/Shanghai, UTC)")
        }
        guard ["en", "zh"].contains(reportLanguage) else {
            throw ValidationError("--report-language '\(reportLanguage.prefix(20))' must be en or zh")
        }
        s.reportTimeZone = reportTimezone
        guard TimeZone(identifier: salesReportTimezone) != nil else {
            throw ValidationError("--sales-report-timezone '\(salesReportTimezone.prefix(60))' is not an IANA time zone name (e.g. America/Los_Angeles)")
        }
        s.salesReportTimeZone = salesReportTimezone
        s.reportLanguage = reportLanguage
        if let ns = accountTokenNamespace {
            guard AccountToken.bytes(ofUUID: ns) != nil else {
                throw ValidationError("--account-token-namespace '\(ns.prefix(40))' is not a UUID (8-4-4-4-12 hexadecimal digits)")
            }
            s.accountTokenNamespace = ns
        }
        s.sweepLimit = sweepLimit
        s.sweepIntervalHours = sweepIntervalHours
        s.concurrency = concurrency
        s.timeoutMs = timeoutMs
        s.maxAttempts = maxAttempts
        s.retryBaseMs = retryBaseMs
        s.retryDelayMinutes = retryDelayMinutes
        s.sourceSchema = sourceSchema
        switch noProgress ? .never : progress {
        case .always: s.progress = true
        case .never: s.progress = false
        case .auto: s.progress = isatty(STDERR_FILENO) == 1
        }
        s.lockWaitSeconds = lockWaitSeconds
        if let v = env["DATABASE_URL"], !v.isEmpty { s.databaseURL = v }
        if let v = env["SOURCE_DATABASE_URL"], !v.isEmpty { s.sourceDatabaseURL = v }
        if let v = env["IAP_VERIFY_URL_PRODUCTION"], !v.isEmpty { s.productionURL = v }
        if let v = env["IAP_VERIFY_URL_SANDBOX"], !v.isEmpty { s.sandboxURL = v }
        if let v = env["IAP_SHARED_SECRET"], !v.isEmpty { s.sharedSecret = v }
        if let v = env["IAP_ROOT_CERTIFICATES"], !v.isEmpty { s.rootCertificateFiles = v }
        if let v = env["IAP_BUNDLE_IDS"] {
            s.bundleIDList = v.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            s.bundleIDs = Set(s.bundleIDList)
        }
        func nonEmpty(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        s.apiIssuerID = nonEmpty("IAP_ISSUER_ID")
        s.apiKeyID = nonEmpty("IAP_KEY_ID")
        s.apiPrivateKeyFile = nonEmpty("IAP_PRIVATE_KEY_FILE")
        s.apiAppKeys = nonEmpty("IAP_APP_KEYS")
        s.apiProductionURL = nonEmpty("IAP_API_URL_PRODUCTION")
        s.apiSandboxURL = nonEmpty("IAP_API_URL_SANDBOX")
        s.ascIssuerID = nonEmpty("ASC_ISSUER_ID")
        s.ascKeyID = nonEmpty("ASC_KEY_ID")
        s.ascPrivateKeyFile = nonEmpty("ASC_PRIVATE_KEY_FILE")
        s.ascVendorNumber = nonEmpty("ASC_VENDOR_NUMBER")
        s.ascAPIURL = nonEmpty("ASC_API_URL")
        for rate in apiRate {
            let parts = rate.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let endpoint = ServerAPIEndpoint(rawValue: parts[0]),
                  let n = Double(parts[1]), n >= 1, n <= 10_000 else {
                throw ValidationError("--api-rate '\(rate)' is not ENDPOINT=N with N requests per second (1…10000) and "
                    + "ENDPOINT one of " + ServerAPIEndpoint.allCases.map(\.rawValue).joined(separator: ", "))
            }
            s.apiRates[endpoint] = n
        }
        return s
    }

    func logger() -> Logger {
        let level = Logger.Level(rawValue: logLevel.rawValue) ?? .notice
        var logger = Logger(label: "iap-reconcile") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = level
        return logger
    }
}

/// `--log-level`: swift-log's levels; any other word is a usage error.
enum LogLevel: String, ExpressibleByArgument, CaseIterable {
    case trace, debug, info, notice, warning, error, critical
}

/// `--progress`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never
}


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
        version: iapReconcileVersion,
        subcommands: [Run.self, Verify.self, Migrate.self, LookupCommand.self, RespondCommand.self],
        defaultSubcommand: Run.self)
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The whole night: migrate, verify, decide, write the reports (the default).",
        discussion: environmentHelp)

    @OptionGroup var common: CommonOptions

    @Option(help: "Folder for the reports; each run writes <out>/<as-of UTC date>/.")
    var out = "reports"

    @Flag(help: "Decide from the stored App Store answers only: send nothing.")
    var noVerify = false

    /// For `make bench`: run the decide stage's SQL and read every row, apply no rule, write nothing.
    @Flag(help: .hidden)
    var databaseOnly = false

    @Flag(help: "Print the night's plan and exit 0, touching nothing: each step in order, the session that runs it, what it reads and writes, and the steps it waits for (docs/contract.md, 'The night's plan').")
    var plan = false

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
        if let injectFault {
            if injectFault == "tally-grants-by-sql" {
                settings.tallyGrantsBySQL = true
            } else if injectFault.hasPrefix("tally-drop:") {
                settings.faultDropTallyRow = String(injectFault.dropFirst("tally-drop:".count))
            } else if injectFault.hasPrefix("hold-source-snapshot:"),
                      case let ms = injectFault.dropFirst("hold-source-snapshot:".count).split(separator: ",").compactMap({ Int($0) }),
                      !ms.isEmpty {
                settings.faultHoldSourceSnapshotMs = ms
            } else {
                throw ValidationError("unknown --inject-fault \(injectFault)")
            }
        }
        if plan {
            print(Night.planTable(settings: settings, stages: databaseOnly ? .decideDatabaseOnly : .full(verify: !noVerify)),
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
            print(try MigrationStatus.report(settings: common.settings()))
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
        let ending = RunOutcome.Ending(exitCode: code, reason: reason, startedAt: started,
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
                FileHandle.standardError.write(Data("iap-reconcile: warning: the metrics file \(path) could not be written (\(error)); the run's exit code is unchanged\n".utf8))
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
            FileHandle.standardError.write(Data(
                "verify: \(v.candidates) unresolved + \(v.sweep) sweep; \(v.ok) ok, \(v.rejected) rejected, \(v.unresolved) still unresolved, \(v.requests) requests; \(v.signedVerified + v.signedRejected) signed transactions (\(v.signedRejected) rejected) in \(String(format: "%.1f", v.seconds)) s\n".utf8))
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
