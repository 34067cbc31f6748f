import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import SummaryPage
import Synchronization

/// The night as one declared plan: every step of `iap-reconcile run`, what it reads and writes,
/// and which session runs it (`iap-reconcile run --plan` prints it). The scheduler (`Plan.run`)
/// starts each step once every step before it that writes what it reads has ended; the order of
/// the list is the order a step is preferred in when sessions are short.
///
/// Names: `job.X` a table of the job schema (`job` alone: all of them), `source.X` a source
/// relation, `night.X` a working table of the decide stage (NightTables.swift; `night` alone: all of
/// them), `folder: X` a file of tonight's temporary report folder, `value: X` what one step hands
/// another in memory.
enum NightPlan {
    static func make(_ stages: Night.Stages, command: String, values: NightValues, logger: Logger) -> Plan {
        let plan = PlanSteps()
        func add(
            _ name: String, _ stage: String, _ session: PlanStep.Session, reads: [String] = [], writes: [String] = [],
            after: [String] = [], milestones: [String] = [], note: String = "",
            _ work: @escaping @Sendable (StepContext) throws -> Void
        ) {
            plan.add(
                name, stage, session, reads: reads, writes: writes, after: after, milestones: milestones, note: note, work)
        }
        let source = SourceRelation.allCases.map { "source." + $0.rawValue }
        @Sendable func decide() -> DecideStage {
            let v = values.with { ($0.settings, $0.summary.runID) }
            return DecideStage(settings: v.0, runID: v.1, logger: logger)
        }

        add(
            "migrate", "migrate", .main, reads: ["job.schema_migrations"], writes: ["job"],
            note: "stops with exit 78 when a migration's checksum differs from this build's"
        ) { c in
            let migrated = try Migrations.apply(c.db, schema: values.settings.jobSchema) { version, attempt in
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
        if case .migrateOnly = stages { return Plan(plan.steps) }

        if values.settings.sourceDatabaseURL != nil {
            // SOURCE_DATABASE_URL: the sources checked there and copied here, in one snapshot;
            // from here on `source.X` is the copy (`settings.sourceSchema` names its schema).
            add(
                "copy sources", "copy", .main, reads: ["source database"], writes: source + ["value: settings"],
                note: "checks the source relations on SOURCE_DATABASE_URL and streams them by COPY, in one read-only "
                    + "REPEATABLE READ snapshot read by three sessions side by side, into <job schema>_source, with the keys the "
                    + "decide stage counts counted there from the source's indexes; a recovery conflict is read again once, "
                    + "then exit 75"
            ) { c in
                let copied = try SourceCopy(settings: values.settings, logger: logger).run(c.db)
                values.with {
                    $0.settings.sourceSchema = copied.schema.name
                    $0.settings.sourceKeysCounted = copied.keysCounted
                    $0.settings.listPriceColumns = copied.shape.listPrices
                }
            }
        } else {
            add("check sources", "check", .main, reads: source, writes: ["value: settings"]) { c in
                let shape = try SourceCheck.verify(c.db, schema: values.settings.sourceSchema)
                values.with { $0.settings.listPriceColumns = shape.listPrices }
            }
        }
        add("start the ledger", "check", .main, writes: ["job.runs", "value: run id"]) { c in
            let id = try Night.startLedger(c.db, settings: values.settings, command: command)
            values.with { $0.summary.runID = id }
        }

        let full: Bool, verify: Bool
        switch stages {
        case .verifyOnly: (full, verify) = (false, true)
        case .full(let v): (full, verify) = (true, v)
        case .decideDatabaseOnly: (full, verify) = (false, false)
        case .migrateOnly: (full, verify) = (false, false)
        }
        let settings = values.settings
        if verify {
            add(
                "verify receipts", "verify", .main,
                reads: ["source.iap_receipts", "job.receipt_state", "value: run id"],
                writes: [
                    "job.receipt_state", "job.verify_attempts", "job.apple_transactions", "job.receipt_transactions",
                    "value: verification",
                ],
                note: "receipts to Apple over HTTP, signed transactions on the verifier threads; answers written on a session of its own"
            ) { c in
                let counts = try VerifyStage(settings: values.settings, runID: values.summary.runID, logger: logger).run(db: c.db)
                values.with { $0.summary.verification = counts }
            }
            if let api = settings.serverAPI, settings.apiSweeps {
                add(
                    "sweep the Server API", "sweep", .main,
                    reads: [
                        "job.notification_sweeps", "job.history_customers", "job.receipt_transactions", "value: run id",
                        "source.iap_orders", "source.iap_receipts",
                    ],
                    writes: [
                        "job.notifications", "job.notification_sweeps", "job.history_customers", "job.apple_transactions",
                        "value: sweeps",
                    ],
                    note: "notification history and customers' transaction histories, over HTTP"
                ) { c in
                    let s = try ServerAPISweeps(
                        settings: values.settings, api: api, runID: values.summary.runID,
                        logger: logger
                    ).run(db: c.db)
                    values.with { $0.summary.sweeps = s }
                }
            }
        }
        if full && verify, let connect = settings.appStoreConnect {
            // After the sweeps (their Apple traffic first), beside the decide stage on a session of its
            // own: it writes only its own tables, and never fails the night (a 401/403 or an
            // unreachable App Store Connect ends this step alone: skipped_checks).
            add(
                "sales reports", "sales", .own,
                reads: ["job.sales_report_days", "source.iap_products", "value: settings", "value: run id", "value: sweeps"],
                writes: ["job.sales_report_days", "job.sales_report_rows", "job.sales_report_errors", "value: sales reports"],
                note: "Apple's daily Summary Sales Report of every day of the window not held yet, over HTTP; a day stored "
                    + "in one transaction"
            ) { c in
                let counts = SalesReportStep(
                    settings: values.settings, connect: connect, runID: values.summary.runID,
                    logger: logger
                ).run(db: c.db)
                values.with {
                    $0.summary.salesReports = counts
                    if let reason = counts.skipped {
                        $0.summary.skippedChecks.append(SalesReports.checkPrefix + "(" + reason + ")")
                    }
                }
            }
        }
        guard full || isDatabaseOnly(stages) else { return Plan(plan.steps) }
        let databaseOnly = isDatabaseOnly(stages)

        // The decide stage: the working tables, side by side.
        add(
            "working tables", "decide", .main, reads: ["source", "value: settings"], writes: ["night", "value: catalog"],
            note: "drops an earlier run's working tables; the copies' statements depend on the source's indexes"
        ) { c in
            let prepared = try decide().prepare(c.db)
            values.with { $0.prepared = prepared }
        }
        let copies: [(SourceRelation, String)] = [(.receipts, "r"), (.orders, "o"), (.grants, "g")]
        for (i, (relation, copy)) in copies.enumerated() {
            add(
                "copy \(relation.rawValue)", "decide", .pool, reads: ["source." + relation.rawValue, "value: catalog"],
                writes: ["night.\(copy)", "night.bad_\(copy)", "night.dk_\(copy)"]
            ) { c in
                try c.db.run(values.with { $0.prepared!.copies[i] })
            }
        }
        add(
            "crowded keys", "decide", .pool, reads: ["source.iap_grants", "job.apple_transactions", "value: catalog"],
            writes: ["night.crowded_keys"], note: "the families no rule can find anything in, left out of the family queries"
        ) { c in
            try c.db.run(values.with { $0.prepared!.crowdedKeys })
        }
        add("unknown grants", "decide", .pool, reads: ["night.g", "job.apple_transactions"], writes: ["night.unknown"]) { c in
            try c.db.run(decide().unknownGrantsSQL)
        }
        add("token orders", "decide", .pool, reads: ["night.o", "job.apple_transactions"], writes: ["night.token_orders"]) { c in
            try decide().prepareTokenOrders(c.db)
        }
        add(
            "attribution", "decide", .pool,
            reads: ["night.r", "night.g", "night.o", "night.token_orders", "job.apple_transactions"], writes: ["night.who"]
        ) { c in
            try c.db.run(decide().attributionSQL)
        }
        let familyReads = [
            "night.g", "night.r", "night.o", "night.p", "night.known_products", "night.unknown", "night.who",
            "night.crowded_keys", "job.apple_transactions", "job.receipt_transactions", "job.receipt_state",
            "value: catalog",
        ]
        if databaseOnly {
            add(
                "families", "decide", .main, reads: familyReads, writes: ["value: families"],
                note: "the family queries' rows read and dropped: what Postgres alone needs (the benchmark's floor)"
            ) { c in
                let r = try decide().decideFamilies(c.db, products: values.with { $0.prepared!.products }, databaseOnly: true)
                values.with { $0.decided = r }
            }
            add("drop working tables", "decide", .main, writes: ["night"]) { c in
                try NightTables.drop(c.db, schema: values.settings.jobSchema)
            }
            return Plan(plan.steps)
        }
        add(
            "input errors", "decide", .pool,
            reads: ["night.bad_r", "night.bad_o", "night.bad_g", "night.dk_r", "night.dk_o", "night.dk_g"],
            writes: ["job.input_errors"]
        ) { c in
            try decide().recordInputErrors(c.db)
        }
        add("empty findings", "decide", .pool, writes: ["job.current_findings"]) { c in
            try FindingSink.empty(c.db, schema: values.settings.jobSchema)
        }
        let decidedReports: [ReportFile] = [.compensate, .duplicateGrants, .clawback, .unattributed]
        add(
            "families", "decide", .main, reads: familyReads,
            writes: decidedReports.map { "job.current_findings: " + $0.rawValue } + ["job.compensation_spool", "value: families"],
            milestones: ["grants sorted", "merged"],
            note: "each kind of family row streamed sorted on a session of its own, merged and decided here; "
                + "findings written on a third session; then the inferred order match from the spool"
        ) { c in
            let r = try decide().decideFamilies(c.db, products: values.with { $0.prepared!.products }, reached: c.reached)
            values.with { $0.decided = r }
        }
        let tallyReads: [SourceRelation: [String]] = [
            .receipts: [
                "night.r", "night.bad_r", "night.dk_r", "job.receipt_state", "job.receipt_transactions",
                "job.apple_transactions", "source.iap_grants",
            ],
            .orders: [
                "night.o", "night.bad_o", "night.dk_o", "night.g", "job.apple_transactions",
                "job.current_findings: compensate.csv", "job.current_findings: unattributed.csv",
            ],
            .grants: ["night.g", "night.bad_g", "night.dk_g", "value: families"],
            .products: ["night.p", "source.iap_products"],
        ]
        // refunds.csv's rows read no decided family: beside the inferred order match, which leaves a core idle.
        add(
            "refunds", "decide", .pool,
            reads: ["job.apple_transactions", "job.receipt_transactions", "night.r", "night.g", "night.p", "night.who"],
            writes: ["job.current_findings: refunds.csv"], after: ["families: merged"]
        ) { c in
            try decide().writeRefunds(c.db)
        }
        // The tally (contract §1), beside other work. The receipts first, because unresolved.csv is
        // their `unresolved` bucket; they start when the grants' family rows are sorted: from then
        // until the transactions' sort ends only that sort would run.
        let dropOne = settings.faultDropTallyRow
        add(
            "tally receipts", "tally", .own, reads: tallyReads[.receipts]!, writes: ["night.unresolved_ids", "value: tally: receipts"],
            after: ["families: grants sorted"],
            note: "stops the night (exit 70) when a receipt is in no bucket or in two"
        ) { c in
            let t = try Conservation.tally(.receipts, db: c.db, settings: values.settings, dropOne: dropOne)
            try values.with {
                $0.summary.tally[SourceRelation.receipts.rawValue] = t
                if let problem = Conservation.problem($0.summary.tally, relations: [.receipts]) {
                    throw JobError(.internalCheck, problem)
                }
            }
        }
        for relation in [SourceRelation.orders, .grants, .products] {
            let bySQL = relation != .grants || settings.tallyGrantsBySQL
            add(
                "tally \(relation.rawValue)", "tally", .own, reads: tallyReads[relation]!, writes: ["value: tally: \(relation.rawValue)"],
                note: relation == .grants && !bySQL ? "the clean grants' buckets as the rules counted them; SQL adds the input errors" : ""
            ) { c in
                let counted = bySQL ? nil : values.with { $0.decided.grantBuckets }
                let t = try Conservation.tally(relation, db: c.db, settings: values.settings, dropOne: dropOne, counted: counted)
                values.with { $0.summary.tally[relation.rawValue] = t }
            }
        }
        // Before the history is written: a night that looks wrong writes none (HeldNight.swift).
        add(
            "hold check", "write", .own,
            reads: ["job.current_findings", "job.runs", "job.key_digests", "value: run id", "value: tally: iap_products"]
                + ["o", "r", "g"].flatMap { ["night.\($0)", "night.bad_\($0)", "night.dk_\($0)"] },
            writes: ["value: held", "job.held_key_digests"],
            note: "tonight's rows, input errors and findings against the thresholds and the last published nights; "
                + "a night that looks wrong is held (exit 65, its reports under <out>/held/)"
        ) { c in
            let (settings, runID, products) = values.with {
                ($0.settings, $0.summary.runID, $0.summary.tally[SourceRelation.products.rawValue])
            }
            let held = HeldNight(settings: settings, runID: runID)
            let tonight = try held.figures(c.db, products: products)
            let reasons = NightHold.reasons(tonight: tonight, published: try held.published(c.db), thresholds: settings.hold)
            values.with {
                $0.summary.held = reasons
                $0.summary.windowRows = tonight.relations.compactMapValues(\.inWindow)
            }
        }
        add(
            "key digests", "write", .own, reads: ["job.held_key_digests", "value: held"],
            writes: ["job.key_digests", "job.held_key_digests"],
            note: "a sample of tonight's keys and what each holds, which the next night compares with; a held night's "
                + "wait for its release"
        ) { c in
            let (settings, runID, held) = values.with { ($0.settings, $0.summary.runID, !$0.summary.held.isEmpty) }
            if !held { try c.db.run(HeldNight(settings: settings, runID: runID).publishKeysSQL) }
        }
        add(
            "findings history", "write", .own,
            reads: ["job.current_findings", "job.findings", "night.g", "job.apple_transactions", "value: held"],
            writes: ["job.findings", "job.held_findings"],
            note: "first_seen, closed_on and why (a held night's kept aside for its release); the CSV files compute "
                + "first_seen as it will set it, so they do not wait for it"
        ) { c in
            let (held, runID) = values.with { (!$0.summary.held.isEmpty, $0.summary.runID) }
            let stage = decide()
            try c.db.transaction {
                try stage.writeClosingReasons(c.db)
                if held {
                    let held = HeldNight(settings: stage.settings, runID: runID)
                    try c.db.run(held.heldHistorySQL(closingReasons: stage.closingTable))
                } else {
                    try c.db.run(stage.historySQL)
                }
            }
        }

        addWriteSteps(plan, values: values, logger: logger)
        return Plan(plan.steps)
    }

    private static func isDatabaseOnly(_ stages: Night.Stages) -> Bool {
        if case .decideDatabaseOnly = stages { return true }
        return false
    }
}
