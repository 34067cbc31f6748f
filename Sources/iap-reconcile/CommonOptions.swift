import AppStore
import ArgumentParser
import Foundation
import HTTP
import JobStore
import Logging
import NightLearn
import Reconciliation
import StoreIO
import TransportCore

/// Options shared by every stage. Options come from the command line only; the environment
/// variables listed in `environmentHelp` carry connection, App Store and secret settings.
struct CommonOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The run's 'now' (ISO 8601, e.g. 2026-11-21T03:00:00Z or 2026-11-21). Decides the windows and the report folder.",
            valueName: "time"))
    var asOf: String?

    @Option(help: "Days back from --as-of: receipts submitted and transactions purchased in this window are checked.")
    var windowDays = JobSettings.defaults.windowDays

    @Option(
        help: ArgumentHelp(
            "Days back from --as-of for refunds: users with non-consumable or subscription grants this recent get their newest receipt re-verified, refunds.csv lists the refunds (and reversals) of this window, and the first notification sweep reaches this far back (at most 180 days in production, 30 in the sandbox).",
            valueName: "days"))
    var refundWindowDays = JobSettings.defaults.refundWindowDays

    @Option(
        help: ArgumentHelp(
            "At most this many customers' transaction history asked per night (Server API: 50 requests/s; 20000 takes about 7 minutes): users with a paid open order first, then the newest; the others wait for a later night (summary.json sweeps.history_left).",
            valueName: "n"))
    var historyLimit = JobSettings.defaults.historyLimit

    @Option(
        help: ArgumentHelp(
            "Write a node_exporter textfile here on every exit, failed runs included (temporary file, then rename): run times, last success, exit code, rows per report and reason, unresolved receipts, App Store requests and answers, seconds per stage, money. A file that cannot be written is a warning, never another exit code.",
            valueName: "path"))
    var metricsFile: String?

    @Option(
        help: ArgumentHelp(
            "Time zone of the times in reconciliation.xlsx (an IANA name, e.g. Asia/Shanghai; each time column's header names it). The CSV files stay in UTC.",
            valueName: "zone"))
    var reportTimezone = JobSettings.defaults.reportTimeZone

    @Option(
        help: ArgumentHelp(
            "Time zone of the days of Apple's daily sales reports (an IANA name; default Pacific time, from Apple's older FAQ: see docs/contract.md for the conflict). Only with the ASC_* variables.",
            valueName: "zone"))
    var salesReportTimezone = JobSettings.defaults.salesReportTimeZone

    @Option(help: ArgumentHelp("Language of summary.html: en or zh.", valueName: "language"))
    var reportLanguage = JobSettings.defaults.reportLanguage

    @Flag(
        help:
            "Do not run the App Store Server API sweeps (notification and transaction history) in this run, though the key is set: for a run that must ask Get Transaction Info only (the refund sweep), as in make bench-api. summary.json lists the checks skipped."
    )
    var noApiSweeps = !JobSettings.defaults.apiSweeps

    @Option(
        help: ArgumentHelp(
            "For shops whose order ids are not UUIDs: the app sets appAccountToken to the name-based UUID (version 5) of the order id in this namespace; a purchase whose token matches is that order's (match exact).",
            valueName: "uuid"))
    var accountTokenNamespace: String?

    @Option(
        help: ArgumentHelp(
            "Where app receipts are verified: auto (on this machine first, verifyReceipt for what it cannot settle), offline (never verifyReceipt), verify-receipt (always verifyReceipt). Default: $IAP_RECEIPTS, else auto.",
            discussion:
                "offline checks Apple's signature against Apple Root CA (or $IAP_RECEIPT_ROOT_CERTIFICATES) with no request; "
                + "what it cannot know (later refunds without the Server API, renewals, 21010/211xx) is named in skipped_checks.",
            valueName: "mode"))
    var receipts: ReceiptsMode?

    @Option(help: "At most this many receipts re-verified by the refund sweep per run (0 turns the sweep off).")
    var sweepLimit = JobSettings.defaults.sweepLimit

    @Option(help: "Hours before the sweep asks about the same receipt again (so a rerun after a crash does not).")
    var sweepIntervalHours = JobSettings.defaults.sweepIntervalHours

    @Option(
        help: ArgumentHelp(
            "Warn when a Play package's voided purchases position is older than this many days (1-29).",
            discussion: "Google lists voided purchases 30 days back: a position older than that has lost records for good."))
    var playVoidedAlertDays = JobSettings.defaults.playVoidedAlertDays

    @Option(
        name: .customLong("play-account-id"),
        help: ArgumentHelp(
            "What the Play app sets as obfuscatedExternalAccountId: order (our order id) or user (our user id).",
            discussion: """
                Either as it is or as its lowercase hex SHA-256 (64 characters, as Google asks: no cleartext \
                personal data). order ties the purchase to that order (an exact match); user to that user (the \
                order match is then inferred among the user's open orders).
                """,
            valueName: "order|user"))
    var playAccountID = JobSettings.defaults.playAccountID.rawValue

    @Option(help: "App Store requests in flight at once.")
    var concurrency = JobSettings.defaults.concurrency

    @Option(help: "Per-request timeout in milliseconds.")
    var timeoutMs = JobSettings.defaults.timeoutMs

    @Option(help: "Requests per receipt within one run before it is left unresolved for the next run (environment switches not counted).")
    var maxAttempts = JobSettings.defaults.maxAttempts

    @Option(help: "Base of the in-run exponential backoff with full jitter, in milliseconds.")
    var retryBaseMs = JobSettings.defaults.retryBaseMs

    @Option(
        help: "A receipt still failing after a run waits this many minutes, doubled per failed run (max one day), before it is sent again.")
    var retryDelayMinutes = JobSettings.defaults.retryDelayMinutes

    @Option(help: "Schema of the four source relations (iap_products, iap_orders, iap_receipts, iap_grants).")
    var sourceSchema = JobSettings.defaults.sourceSchema

    @Option(help: "The job's own schema: verification state, learned transactions, findings history, runs.")
    var jobSchema = JobSchema.standard.name

    @Option(
        help:
            "Seconds to wait for another run's lock before giving up with exit 75 (a run killed a moment ago lets go within a few seconds)."
    )
    var lockWaitSeconds = JobSettings.defaults.lockWaitSeconds

    @Option(help: "Log level on stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevel = .notice

    @Option(help: "Progress lines on stderr: auto (when stderr is a terminal), always, never.")
    var progress: ProgressMode = .auto

    @Flag(help: "No progress lines on stderr (the same as --progress never).")
    var noProgress = false

    @Option(
        name: .customLong("api-rate"),
        help: ArgumentHelp(
            "The job's own budget for one App Store Server API endpoint, ENDPOINT=N requests per second (repeatable; the sandbox gets a tenth).",
            discussion:
                "Endpoints and Apple's limits: transaction_info, transaction_history, notification_history 50; refund_history, order_lookup 10. "
                + "Without this option the job uses 90% of them (45 and 9); a value given here is used as it is.",
            valueName: "endpoint=n"))
    var apiRate: [String] = []

    @Option(
        name: .customLong("play-rate"),
        help: ArgumentHelp(
            "The job's own budget for one Google Play bucket, BUCKET=N queries a minute (repeatable).",
            discussion:
                "Buckets and Google's quotas: one_time_purchases and orders 3,000 a minute per project, voided_purchases 30 in "
                + "any 30 s per package. Without this option the job uses 2,640, 2,640 and 60 (one a second, the least it paces). "
                + "A value given here is used as it is (for a quota Google raised).",
            valueName: "bucket=n"))
    var playRate: [String] = []

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
        for (name, value, minimum) in [
            ("--window-days", windowDays, 1), ("--refund-window-days", refundWindowDays, 1),
            ("--sweep-limit", sweepLimit, 0), ("--concurrency", concurrency, 1),
            ("--timeout-ms", timeoutMs, 1), ("--max-attempts", maxAttempts, 1),
            ("--retry-base-ms", retryBaseMs, 0), ("--retry-delay-minutes", retryDelayMinutes, 0),
            ("--sweep-interval-hours", sweepIntervalHours, 0),
            ("--lock-wait-seconds", lockWaitSeconds, 0), ("--history-limit", historyLimit, 0),
            ("--play-voided-alert-days", playVoidedAlertDays, 1),
        ]
        where value < minimum {
            throw ValidationError("\(name) must be at least \(minimum)")
        }
        guard playVoidedAlertDays <= 29 else { throw ValidationError("--play-voided-alert-days must be at most 29") }
        guard let account = JobSettings.PlayAccountID(rawValue: playAccountID) else {
            throw ValidationError("--play-account-id must be order or user")
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
            throw ValidationError(
                "--report-timezone '\(reportTimezone.prefix(60))' is not an IANA time zone name (e.g. Asia/Shanghai, UTC)")
        }
        guard ["en", "zh"].contains(reportLanguage) else {
            throw ValidationError("--report-language '\(reportLanguage.prefix(20))' must be en or zh")
        }
        s.reportTimeZone = reportTimezone
        guard TimeZone(identifier: salesReportTimezone) != nil else {
            throw ValidationError(
                "--sales-report-timezone '\(salesReportTimezone.prefix(60))' is not an IANA time zone name (e.g. America/Los_Angeles)")
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
        s.playVoidedAlertDays = playVoidedAlertDays
        s.playAccountID = account
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
        if let v = env["IAP_RECEIPT_ROOT_CERTIFICATES"], !v.isEmpty { s.receiptRootCertificateFiles = v }
        if let receipts {
            s.receipts = receipts
        } else if let v = env["IAP_RECEIPTS"], !v.isEmpty {
            guard let mode = ReceiptsMode(rawValue: v) else {
                throw ValidationError("IAP_RECEIPTS '\(v.prefix(30))' must be offline, verify-receipt or auto")
            }
            s.receipts = mode
        }
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
        for name in JobSettings.playVariableNames { s.playVariables[name] = nonEmpty(name) }
        for rate in apiRate {
            let parts = rate.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let endpoint = ServerAPIEndpoint(rawValue: parts[0]),
                let n = Double(parts[1]), n >= 1, n <= 10_000
            else {
                throw ValidationError(
                    "--api-rate '\(rate)' is not ENDPOINT=N with N requests per second (1…10000) and "
                        + "ENDPOINT one of " + ServerAPIEndpoint.allCases.map(\.rawValue).joined(separator: ", "))
            }
            s.apiRates[endpoint] = n
        }
        for rate in playRate {
            let parts = rate.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let bucket = PlayRows.buckets.first(where: { $0.option == parts[0] }),
                let n = Double(parts[1]), n >= 1, n <= 1_000_000
            else {
                throw ValidationError(
                    "--play-rate '\(rate)' is not BUCKET=N with N queries a minute (1…1000000) and BUCKET one of "
                        + PlayRows.buckets.map(\.option).joined(separator: ", "))
            }
            s.transport.playRates[bucket.budget.name] = n / 60
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

/// `--receipts`: any other word is a usage error (exit 64).
extension ReceiptsMode: ExpressibleByArgument {}

/// `--progress`.
enum ProgressMode: String, ExpressibleByArgument, CaseIterable {
    case auto, always, never
}
