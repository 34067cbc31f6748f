import Foundation
import Logging
import Postgres
import Reconciliation

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
        try settings.configureServerAPI()
        if let url = settings.databaseURL {
            do { _ = try ConnectionString(url) } catch let e as ConnectionString.Malformed {
                throw JobError(.configuration, "DATABASE_URL is malformed: \(e.problem) (\(e.redacted)); "
                    + "fix it in the environment (see docs/contract.md, 'Environment variables')")
            }
        }
        let db: PGConnection
        do { db = try JobDatabase.connect(settings) } catch { throw JobError.from(error, doing: "connecting to the database") }
        defer { db.close() }
        var summary = RunSummary(asOf: settings.asOf, windowDays: settings.windowDays)
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
        if !summary.skippedChecks.isEmpty {
            logger.warning(settings.serverAPI == nil ? """
                without App Store Server API credentials these checks were not done: \
                \(summary.skippedChecks.joined(separator: "; ")); set IAP_ISSUER_ID, IAP_KEY_ID and \
                IAP_PRIVATE_KEY_FILE to do them (README, "StoreKit 2 and the App Store Server API")
                """ : "--no-api-sweeps: these checks were not done: \(summary.skippedChecks.joined(separator: "; "))")
        }
        return summary
    }

    private func stagesOfTheNight(_ stages: Stages, command: String, db: PGConnection, summary: inout RunSummary) throws {
        try acquireLock(db)
        var clock = StageClock()
        logger.info("stage migrate")
        let migrated = try Migrations.apply(db, schema: settings.jobSchema)
        for version in migrated.unknownTexts {
            logger.warning("""
                the job schema's migration \(version) has no checksum, and none of the texts version \(version) has had \
                in this build's history matches what the database holds (its functions); going on: see \
                `iap-reconcile migrate --status` and docs/contract.md, 'Migrations and their checksums'
                """)
        }
        summary.stageSeconds["migrate"] = clock.lap()
        if case .migrateOnly = stages { return }

        logger.info("stage check")
        settings.listPriceColumns = try SourceCheck.verify(db, schema: settings.sourceSchema).listPrices
        summary.runID = try startLedger(db, command: command)

        if case .decideDatabaseOnly = stages {
            let rows = try DecideStage(settings: settings, runID: summary.runID, logger: logger)
                .run(db: db, databaseOnly: true).families
            try NightTables.drop(db, schema: settings.jobSchema)
            summary.stageSeconds["decide"] = clock.lap()
            summary.counts["rows"] = rows
            return
        }
        let verify: Bool
        switch stages {
        case .verifyOnly: verify = true
        case .full(let v): verify = v
        case .migrateOnly, .decideDatabaseOnly: verify = false
        }
        if verify {
            logger.info("stage verify")
            summary.verification = try VerifyStage(settings: settings, runID: summary.runID, logger: logger).run(db: db)
            summary.stageSeconds["verify"] = clock.lap()
            if let api = settings.serverAPI, settings.apiSweeps {
                logger.info("stage sweep")
                summary.sweeps = try ServerAPISweeps(settings: settings, api: api, runID: summary.runID, logger: logger).run(db: db)
                summary.stageSeconds["sweep"] = clock.lap()
            }
        }
        // Said once, at the end of a run that wrote its reports (a failing run keeps its one line).
        if settings.serverAPI == nil, case .full = stages { summary.skippedChecks = RunSummary.checksNeedingServerAPI }
        if settings.serverAPI != nil, !settings.apiSweeps { summary.skippedChecks = Array(RunSummary.checksNeedingServerAPI.prefix(2)) }
        if case .full = stages {
            logger.info("stage decide")
            let decide = DecideStage(settings: settings, runID: summary.runID, logger: logger)
            // The conservation tally in two parts, each on sessions of its own beside other work.
            // The receipts first, because unresolved.csv is their `unresolved` bucket: they read
            // only the copies and what was learned from Apple, so they can be counted once the
            // copies are made. They start when the grants' rows are sorted: from then until the
            // transactions' sort ends, only that sort would run (the grants' rows wait for the
            // merge); started with the copies' end, they took a core from that sort, the night's
            // longest chain (whole runs 23.5-27.1 s against 25.0-28.2 s). The orders, grants and
            // products read the decided findings too: they are counted through the write stage.
            // Nothing the reports hold depends on those counts, and ReportWriter checks them
            // before it moves any report into place.
            let dropOne = settings.faultDropTallyRow
            let receiptsTally = Alongside { [settings] in
                try Conservation.compute(settings: settings, relations: [.receipts], dropOne: dropOne)
            }
            defer { receiptsTally.finish() }
            let decided = try decide.run(db: db, grantsSorted: receiptsTally.start)
            summary.stageSeconds["decide"] = clock.lap()
            logger.info("stage tally")
            let counted: [SourceRelation: [String: Int]] = settings.tallyGrantsBySQL ? [:] : [.grants: decided.grantBuckets]
            let restOfTally = Alongside { [settings] in
                try Conservation.compute(settings: settings, relations: [.orders, .grants, .products],
                                         dropOne: dropOne, counted: counted)
            }
            // Counted from now, beside everything the write stage does: it reads neither the
            // reports nor the history. (Begun beside the workbook, it ended the night on one core:
            // write stage 4.6-5.3 s against 5.3-7.1 s.)
            restOfTally.start()
            defer { restOfTally.finish() }
            // The findings history on a session of its own, while the CSV files, which do not wait
            // for it (FindingsHistory.swift), are written.
            let history = NightTables.alongside(decide.historySQL, settings: settings)
            history.start()
            defer { history.finish() }
            summary.tally = try receiptsTally.value()
            summary.stageSeconds["tally"] = clock.lap()
            if let problem = Conservation.problem(summary.tally, relations: [.receipts]) {
                throw JobError(.internalCheck, problem)
            }
            logger.info("stage write")
            let settings = settings
            try ReportWriter(settings: settings, logger: logger).write(db: db, summary: &summary,
                                                                       findingsHistory: history.value) {
                let rest = try restOfTally.value()
                // Once the CSV files are written (this runs after them) and the tally counted,
                // nothing reads the working tables. Dropping them waits on the disk for seconds
                // (their files were just written), so it is done beside the workbook.
                let other = try JobDatabase.connect(settings)
                defer { other.close() }
                try NightTables.drop(other, schema: settings.jobSchema)
                return rest
            }
            summary.stageSeconds["write"] = clock.lap()
        }
    }

    /// One run at a time per job schema: a session advisory lock held on this connection until it
    /// closes. A run that finds it held tries again for `--lock-wait-seconds` (the backend of a run
    /// killed a moment ago needs up to `client_connection_check_interval` to go), then leaves.
    private func acquireLock(_ db: PGConnection) throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(settings.lockWaitSeconds) * 1_000_000_000
        while true {
            let got = try db.query("SELECT pg_try_advisory_lock(hashtext(\("iap-reconcile " + settings.jobSchema.name)))")
            if got.value(0, 0) == "t" { return }
            guard DispatchTime.now().uptimeNanoseconds < deadline else { break }
            usleep(200_000)
        }
        throw JobError(.temporary, "another iap-reconcile run holds the lock on schema \(settings.jobSchema.name) "
            + "(waited \(settings.lockWaitSeconds) s); not starting (run again when it has finished)")
    }

    private func startLedger(_ db: PGConnection, command: String) throws -> Int64 {
        let r = try db.query("""
            INSERT INTO \(settings.jobSchema.sql).runs (command, as_of) VALUES (\(command), to_timestamp(\(settings.asOf)::bigint / 1000.0))
            RETURNING run_id
            """)
        return Int64(r.value(0, 0)!)!
    }

    private func finishLedger(_ db: PGConnection, summary: RunSummary) throws {
        try db.query("""
            UPDATE \(settings.jobSchema.sql).runs SET finished_at = now(), exit_code = \(summary.exitCode), summary = \(summary.json)::jsonb
            WHERE run_id = \(summary.runID)
            """)
    }
}

/// Seconds per stage.
struct StageClock {
    private var last = Date()
    mutating func lap() -> Double {
        let now = Date()
        defer { last = now }
        return (now.timeIntervalSince(last) * 1000).rounded() / 1000
    }
}

