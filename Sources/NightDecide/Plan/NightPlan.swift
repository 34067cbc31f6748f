import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation

/// The night as one declared plan: every step of `iap-reconcile run`, what it reads and writes,
/// and which session runs it (`iap-reconcile run --plan` prints it). The scheduler (`Plan.run`)
/// starts each step once every step before it that writes what it reads has ended; the order of
/// the list is the order a step is preferred in when sessions are short.
///
/// Each stage declares its own steps beside its work (`Night.sourceSteps`, `VerifyStage.steps`,
/// `DecideStage.steps`, `ReportWriter.steps`); this only composes them in the night's order.
/// Names: `Resource` (`job.X` a table of the job schema, `source.X` a source relation, `night.X` a
/// working table of the decide stage, `folder: X` a file of tonight's temporary report folder,
/// `value: X` what one step hands another in memory).
enum NightPlan {
    static func make(_ stages: Night.Stages, command: String, values: NightValues, logger: Logger) -> Plan {
        let plan = PlanSteps()
        Night.migrateStep(plan, values: values, logger: logger)
        if case .migrateOnly = stages { return Plan(plan.steps) }
        Night.sourceSteps(plan, command: command, values: values, logger: logger)

        let full: Bool, verify: Bool, databaseOnly: Bool
        switch stages {
        case .verifyOnly: (full, verify, databaseOnly) = (false, true, false)
        case .full(let v): (full, verify, databaseOnly) = (true, v, false)
        case .decideDatabaseOnly: (full, verify, databaseOnly) = (false, false, true)
        case .migrateOnly: (full, verify, databaseOnly) = (false, false, false)
        }
        if verify { VerifyStage.steps(plan, salesReports: full, values: values, logger: logger) }
        guard full || databaseOnly else { return Plan(plan.steps) }
        DecideStage.steps(plan, databaseOnly: databaseOnly, values: values, logger: logger)
        if databaseOnly { return Plan(plan.steps) }
        ReportWriter.steps(plan, values: values, logger: logger)
        return Plan(plan.steps)
    }
}

/// The steps of a plan in the order they are declared (`NightPlan.make` and the stages' parts of it).
final class PlanSteps {
    private(set) var steps: [PlanStep] = []

    /// Declares a step after those declared so far (`PlanStep` says what each argument means).
    func add(
        _ name: String, _ stage: String, _ session: PlanStep.Session, reads: [Resource] = [], writes: [Resource] = [],
        after: [String] = [], milestones: [String] = [], note: String = "",
        _ work: @escaping @Sendable (StepContext) throws -> Void
    ) {
        steps.append(
            PlanStep(
                name: name, stage: stage, session: session, reads: reads, writes: writes, after: after,
                milestones: milestones, note: note, work: work))
    }
}

extension Night {
    /// The job schema brought up to this build's migrations.
    static func migrateStep(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        plan.add(
            "migrate", "migrate", .main, reads: [.job(.schemaMigrations)], writes: [.job(nil)],
            note: "stops with exit 78 when a migration's checksum differs from this build's"
        ) { c in
            let migrated = try Migrations.apply(c.db, schema: values.base.jobSchema) { version, attempt in
                logger.warning(
                    """
                    migration \(version) waited \(Migrations.lockWaitMs / 1000) s for a table another session (respond, \
                    lookup) holds; trying again (\(attempt) of \(Migrations.lockTries))
                    """)
            }
            for version in migrated.unknownTexts {
                logger.warning(
                    """
                    the job schema's migration \(version) has no checksum, and none of the texts version \(version) has had \
                    in this build's history matches what the database holds (its functions); going on: see \
                    `iap-reconcile migrate --status` and docs/contract.md, 'Migrations and their checksums'
                    """)
            }
        }
    }

    /// The sources checked (or checked on SOURCE_DATABASE_URL and copied here), and the run's row
    /// in the ledger. What the check finds is `value: settings` (`SourceFound`): the run's
    /// settings never change.
    static func sourceSteps(_ plan: PlanSteps, command: String, values: NightValues, logger: Logger) {
        if values.base.sourceDatabaseURL != nil {
            // SOURCE_DATABASE_URL: the sources checked there and copied here, in one snapshot;
            // from here on `source.X` is the copy (`SourceFound.schema` names its schema).
            plan.add(
                "copy sources", "copy", .main, reads: [.sourceDatabase], writes: Resource.everySource + [.value(.settings)],
                note: "checks the source relations on SOURCE_DATABASE_URL and streams them by COPY, in one read-only "
                    + "REPEATABLE READ snapshot read by three sessions side by side, into <job schema>_source, with the keys the "
                    + "decide stage counts counted there from the source's indexes; a recovery conflict is read again once, "
                    + "then exit 75"
            ) { c in
                let copied = try SourceCopy(settings: values.base, logger: logger).run(c.db)
                var found = SourceFound(schema: copied.schema.name, keysCounted: copied.keysCounted, listPrices: copied.shape.listPrices)
                if !copied.shape.storeColumns.isEmpty {
                    // Two stores: the keys are per store, so the copy's counts of whole relations do not hold.
                    found.keysCounted = []
                    try found.readStores(c.db, rows: copied.schema.name, jobSchema: values.base.jobSchema, shape: copied.shape)
                }
                values.source.set(found)
            }
        } else {
            plan.add("check sources", "check", .main, reads: Resource.everySource, writes: [.value(.settings)]) { c in
                let shape = try SourceCheck.verify(c.db, schema: values.base.sourceSchema)
                var found = SourceFound(listPrices: shape.listPrices)
                if !shape.storeColumns.isEmpty {
                    try found.readStores(c.db, rows: values.base.sourceSchema, jobSchema: values.base.jobSchema, shape: shape)
                }
                values.source.set(found)
            }
        }
        plan.add("start the ledger", "check", .main, writes: [.job(.runs), .value(.runID)]) { c in
            let id = try Night.startLedger(c.db, settings: values.base, command: command)
            values.with { $0.summary.runID = id }
        }
    }
}
