import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// The stages of a night, in order, with the lock and the ledger around them.
public final class Night {
    public enum Stages: Sendable {
        case migrateOnly, verifyOnly, full(verify: Bool)
        /// The benchmark's baseline: the decide stage's SQL with every row read and dropped.
        case decideDatabaseOnly
    }

    private(set) var settings: JobSettings
    let logger: Logger
    /// What the last `run` got to, failed or not (for last-run.json and the metrics file); nil
    /// when it failed before it reached the database.
    public private(set) var lastSummary: RunSummary?

    public init(settings: JobSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Runs the stages; returns the summary. Throws `JobError` with the contract's exit code.
    public func run(_ stages: Stages, command: String) throws -> RunSummary {
        if let list = settings.rootCertificateFiles { try settings.useRootCertificates(pemFiles: list) }
        if let list = settings.receiptRootCertificateFiles { try settings.useReceiptRootCertificates(pemFiles: list) }
        try settings.configureServerAPI()
        try settings.configureAppStoreConnect()
        try settings.configurePlay()
        if settings.serverAPI != nil { settings.nightApps = NightApps(apps: settings.bundleIDList) }
        if let url = settings.databaseURL {
            do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
                throw JobError(
                    .configuration,
                    "DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                        + "fix it in the environment (see docs/contract.md, 'Environment variables')")
            }
        }
        try SourceDatabase.checkURL(settings)
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        var summary = RunSummary(asOf: settings.asOf, windowDays: settings.windowDays)
        summary.receiptsMode = settings.receipts.rawValue
        do {
            try stagesOfTheNight(stages, command: command, db: db, summary: &summary)
            summary.exitCode = 0
        } catch {
            let failure = JobError.from(error, doing: "the run")
            summary.exitCode = failure.code.rawValue
            lastSummary = summary
            if summary.runID > 0 { try? finishLedger(db, summary: summary) }
            throw failure
        }
        lastSummary = summary
        if summary.runID > 0 { try finishLedger(db, summary: summary) }
        if let refused = settings.nightApps?.refusedApps, !refused.isEmpty {
            logger.warning(
                """
                the App Store Server API refused the key of \(refused.joined(separator: ", ")) (HTTP 401, again with a \
                fresh token a second later): nothing more was asked for \(refused.count == 1 ? "that app" : "those apps") \
                tonight, the other apps were swept; check that the In-App Purchase key (IAP_KEY_ID, or IAP_APP_KEYS) may \
                be used for \(refused.count == 1 ? "it" : "them") in App Store Connect
                """)
        }
        if let reason = summary.salesReports?.skipped {
            logger.warning(
                """
                Apple's sales reports were not downloaded tonight (skipped_checks): \(reason); the days not held are \
                asked again next night, every other report is tonight's (ASC_ISSUER_ID, ASC_KEY_ID, \
                ASC_PRIVATE_KEY_FILE, ASC_VENDOR_NUMBER)
                """)
        }
        if let play = summary.skippedChecks.first(where: { $0.hasPrefix(RunSummary.otherStoreCheckPrefix) }) {
            logger.warning(
                """
                \(play.dropFirst(RunSummary.otherStoreCheckPrefix.count + 1).dropLast()); they are counted in the tally \
                (google_play) and left out of every report (docs/contract.md, "Two stores in one shop")
                """)
        }
        for check in summary.skippedChecks where check.hasPrefix(RunSummary.playCheckPrefix) {
            logger.warning("Google Play: \(check.dropFirst(RunSummary.playCheckPrefix.count)); the App Store's reports are tonight's")
        }
        let skipped = summary.skippedChecks.filter {
            !$0.hasPrefix(RunSummary.refusedAppCheckPrefix) && !$0.hasPrefix(SalesReports.checkPrefix)
                && !$0.hasPrefix(RunSummary.otherStoreCheckPrefix) && !$0.hasPrefix(RunSummary.playCheckPrefix)
                && !RunSummary.checksWithReceiptsOffline.contains($0)
        }
        if summary.skippedChecks.contains(where: RunSummary.checksWithReceiptsOffline.contains) {
            logger.warning(
                """
                --receipts offline: verifyReceipt was asked nothing, so these checks were not done: \
                \(RunSummary.checksWithReceiptsOffline.joined(separator: "; ")) (docs/contract.md, "What offline \
                cannot know"; --receipts auto asks verifyReceipt for them)
                """)
        }
        if !skipped.isEmpty {
            logger.warning(
                settings.serverAPI == nil
                    ? """
                    without App Store Server API credentials these checks were not done: \
                    \(skipped.joined(separator: "; ")); set IAP_ISSUER_ID, IAP_KEY_ID and \
                    IAP_PRIVATE_KEY_FILE to do them (README, "StoreKit 2 and the App Store Server API")
                    """ : "--no-api-sweeps: these checks were not done: \(skipped.joined(separator: "; "))")
        }
        return summary
    }

    /// The plan of a run (`iap-reconcile run --plan` prints its table).
    func plan(_ stages: Stages, command: String, values: NightValues) -> Plan {
        NightPlan.make(stages, command: command, values: values, logger: logger)
    }

    /// The table `iap-reconcile run --plan` prints: the plan these settings and stages would run
    /// (the sweeps only with the Server API's key set).
    public static func planTable(settings: JobSettings, stages: Stages) -> String {
        var settings = settings
        try? settings.configureServerAPI()
        try? settings.configureAppStoreConnect()
        try? settings.configurePlay()
        let values = NightValues(settings: settings, summary: RunSummary(asOf: settings.asOf, windowDays: settings.windowDays))
        return """
            The night's plan. Every step runs under the job schema's advisory lock, held by the run's own \
            session (main); a step starts once the steps it waits for (those before it that write what \
            it reads or writes, or read what it writes) have ended and the milestones it names are reached.\n

            """ + NightPlan.make(stages, command: "run", values: values, logger: Logger(label: "plan")).table
    }

    /// When each step of the last run ran (a traced night's test reads it).
    private(set) var lastTrace: [StepTrace] = []
    /// The plan of the last run.
    private(set) var lastPlan: Plan?

    private func stagesOfTheNight(_ stages: Stages, command: String, db: PGConnection, summary: inout RunSummary) throws {
        try acquireLock(db)
        // Said in summary.json, and once on stderr at the end of a run that wrote its reports (a
        // failing run keeps its one line).
        if settings.serverAPI == nil, case .full = stages { summary.skippedChecks = RunSummary.checksNeedingServerAPI }
        if settings.serverAPI != nil, !settings.apiSweeps {
            summary.skippedChecks = Array(RunSummary.checksNeedingServerAPI.prefix(2))
        }
        if settings.receipts == .offline {
            switch stages {
            case .verifyOnly, .full(verify: true): summary.skippedChecks += RunSummary.checksWithReceiptsOffline
            default: break
            }
        }
        let values = NightValues(settings: settings, summary: summary)
        let plan = plan(stages, command: command, values: values)
        lastPlan = plan
        defer { summary = values.summary }
        do {
            lastTrace = try plan.run(main: db, settings: settings, logger: logger)
        } catch {
            if case .full = stages { ReportWriter(settings: values.base, logger: logger).removeFolder() }
            throw error
        }
        values.with { $0.summary.stageSeconds = StepTrace.stageSeconds(lastTrace, plan: plan) }
        if case .decideDatabaseOnly = stages {
            let families = try values.decided.get().families
            values.with { $0.summary.counts["rows"] = families }
        }
    }

    /// One run at a time per job schema: a session advisory lock held on this connection until it
    /// closes. A run that finds it held tries again for `--lock-wait-seconds` (the backend of a run
    /// killed a moment ago needs up to `client_connection_check_interval` to go), then leaves.
    private func acquireLock(_ db: PGConnection) throws { try Self.acquireLock(db, settings: settings) }

    /// The lock of the job schema (a night's, and `release`'s), waited for `--lock-wait-seconds`.
    static func acquireLock(_ db: PGConnection, settings: JobSettings) throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(settings.lockWaitSeconds) * 1_000_000_000
        while true {
            let got = try db.query("SELECT pg_try_advisory_lock(hashtext(\("iap-reconcile " + settings.jobSchema.name)))")
            if got.value(0, 0) == "t" { return }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { break }
            usleep(200_000)
        }
        throw JobError(
            .temporary,
            "another iap-reconcile run holds the lock on schema \(settings.jobSchema.name) "
                + "(waited \(settings.lockWaitSeconds) s); not starting (run again when it has finished)")
    }

    static func startLedger(_ db: PGConnection, settings: JobSettings, command: String) throws -> Int64 {
        let r = try db.query(
            """
            INSERT INTO \(settings.jobSchema.sql).runs (command, as_of) VALUES (\(command), to_timestamp(\(settings.asOf)::bigint / 1000.0))
            RETURNING run_id
            """)
        return Int64(r.value(0, 0)!)!
    }

    private func finishLedger(_ db: PGConnection, summary: RunSummary) throws {
        try db.query(
            """
            UPDATE \(settings.jobSchema.sql).runs SET finished_at = now(), exit_code = \(summary.exitCode), summary = \(summary.json)::jsonb,
                held = \(summary.held.isEmpty ? nil : summary.heldJSON)::jsonb
            WHERE run_id = \(summary.runID)
            """)
    }
}

extension StepTrace {
    /// Seconds per stage (summary.json's `stage_seconds`): from the end of the stages before it
    /// to the end of its last step, so the figures add up to the night.
    static func stageSeconds(_ trace: [StepTrace], plan: Plan) -> [String: Double] {
        let stageOf = Dictionary(plan.steps.map { ($0.name, $0.stage) }, uniquingKeysWith: { a, _ in a })
        var ends: [String: UInt64] = [:]
        for t in trace { if let s = stageOf[t.step] { ends[s] = max(ends[s] ?? 0, t.ended) } }
        var seconds: [String: Double] = [:]
        var before: UInt64 = 0
        for stage in plan.steps.map(\.stage) where seconds[stage] == nil {
            guard let end = ends[stage] else { continue }
            seconds[stage] = (Double(end > before ? end - before : 0) / 1_000_000).rounded() / 1000
            before = max(before, end)
        }
        return seconds
    }
}
