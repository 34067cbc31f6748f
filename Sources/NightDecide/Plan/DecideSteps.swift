import Foundation
import JobStore
import Logging
import NightLearn
import PlayNight
import Postgres
import Reconciliation

extension DecideStage {
    /// The decide stage: the working tables side by side, the families merged and decided, the
    /// tally, then the hold check and the findings' history. `databaseOnly`: the family queries'
    /// rows read and dropped (the benchmark's floor), nothing decided.
    static func steps(_ plan: PlanSteps, databaseOnly: Bool, values: NightValues, logger: Logger) {
        @Sendable func decide() throws -> DecideStage {
            DecideStage(settings: try values.settings(), runID: values.runID, logger: logger)
        }
        tableSteps(plan, values: values, decide: decide)
        let familyReads: [Resource] =
            [NightTable.g, .r, .o, .p, .knownProducts, .unknown, .who, .crowdedKeys].map { .night($0) }
            + [.job(.appleTransactions), .job(.receiptTransactions), .job(.receiptState), .value(.catalog)]
        if databaseOnly {
            plan.add(
                "families", "decide", .main, reads: familyReads, writes: [.value(.families)],
                note: "the family queries' rows read and dropped: what Postgres alone needs (the benchmark's floor)"
            ) { c in
                values.decided.set(try decide().decideFamilies(c.db, products: try values.prepared.get().products, databaseOnly: true))
            }
            plan.add("drop working tables", "decide", .main, writes: [.night(nil)]) { c in
                try NightTables.drop(c.db, schema: values.base.jobSchema)
            }
            return
        }
        // Not in the floor: the floor's copies read the App Store's rows only, as the night's do.
        plan.add(
            "other stores' rows", "decide", .pool, reads: [.source(nil), .value(.settings)], writes: [.night(.otherStores)],
            note: "with two stores: each relation's Google Play rows and rows of no store, set aside from one scan of it "
                + "for the steps that read them"
        ) { c in
            if let sql = try decide().otherStoreRowsSQL { try c.db.run(sql) }
        }
        plan.add(
            "input errors", "decide", .pool,
            reads: [NightTable.badR, .badO, .badG, .dkR, .dkO, .dkG, .otherStores].map { .night($0) }, writes: [.job(.inputErrors)]
        ) { c in
            try decide().recordInputErrors(c.db)
        }
        plan.add("empty findings", "decide", .pool, writes: [.job(.currentFindings)]) { c in
            try FindingSink.empty(c.db, schema: values.base.jobSchema)
        }
        let decidedReports: [ReportFile] = [.compensate, .duplicateGrants, .clawback, .unattributed]
        plan.add(
            "families", "decide", .main, reads: familyReads,
            writes: decidedReports.map { .findings($0) } + [.job(.compensationSpool), .value(.families)],
            milestones: ["grants sorted", "merged"],
            note: "each kind of family row streamed sorted on a session of its own, merged and decided here; "
                + "findings written on a third session; then the inferred order match from the spool"
        ) { c in
            values.decided.set(try decide().decideFamilies(c.db, products: try values.prepared.get().products, reached: c.reached))
        }
        // refunds.csv's rows read no decided family: beside the inferred order match, which leaves a core idle.
        plan.add(
            "refunds", "decide", .pool,
            reads: [.job(.appleTransactions), .job(.receiptTransactions), .night(.r), .night(.g), .night(.p), .night(.who)],
            writes: [.findings(.refunds)], after: ["families: merged"]
        ) { c in
            try decide().writeRefunds(c.db)
        }
        if values.base.playReports {
            plan.add(
                "Google Play's purchases", "decide", .pool,
                reads: [
                    .job(.playPurchases), .job(.playPurchaseLines), .job(.playVoided), .job(.playOrders), .night(.otherStores),
                ],
                writes: [ReportFile.compensate, .duplicateGrants, .clawback, .refunds, .unattributed].map { .playFindings($0) }
                    + [.night(.play), .value(.playAcknowledge)],
                after: ["families: merged"],
                note: "what Google said of each purchase token, with the shop's Play rows, decided by the rule book's Play rules"
            ) { c in
                let settings = try values.settings()
                let result = try PlayDecide(settings: settings, logger: logger).run(c.db) {
                    let db = try JobDatabase.connect(settings)
                    try NightTables.use(db, schema: settings.jobSchema)
                    return db
                }
                values.with { $0.summary.playAcknowledgeNext = result.nextAcknowledgeBy }
            }
        }
        tallySteps(plan, values: values)
        historySteps(plan, values: values, decide: decide)
    }

    /// The working tables: the copies of the sources (side by side on the pool), the families no
    /// rule can find anything in, the unknown grants, the token orders and whose purchase each is.
    private static func tableSteps(_ plan: PlanSteps, values: NightValues, decide: @escaping @Sendable () throws -> DecideStage) {
        plan.add(
            "working tables", "decide", .main, reads: [.source(nil), .value(.settings)],
            writes: [.night(nil), .value(.catalog)],
            note: "drops an earlier run's working tables; the copies' statements depend on the source's indexes"
        ) { c in
            values.prepared.set(try decide().prepare(c.db))
        }
        for (i, relation) in [SourceRelation.receipts, .orders, .grants].enumerated() {
            guard let night = NightTable.copies(of: relation) else { continue }
            plan.add(
                "copy \(relation.rawValue)", "decide", .pool, reads: [.source(relation), .value(.catalog)],
                writes: [.night(night.copy), .night(night.bad), .night(night.dk)]
            ) { c in
                try c.db.run(try values.prepared.get().copies[i])
            }
        }
        plan.add(
            "crowded keys", "decide", .pool, reads: [.source(.grants), .job(.appleTransactions), .value(.catalog)],
            writes: [.night(.crowdedKeys)],
            note: "the families no rule can find anything in, left out of the family queries"
        ) { c in
            try c.db.run(try values.prepared.get().crowdedKeys)
        }
        plan.add(
            "unknown grants", "decide", .pool, reads: [.night(.g), .job(.appleTransactions)], writes: [.night(.unknown)]
        ) { c in
            try c.db.run(decide().unknownGrantsSQL)
        }
        plan.add(
            "token orders", "decide", .pool, reads: [.night(.o), .job(.appleTransactions)], writes: [.night(.tokenOrders)]
        ) { c in
            try decide().prepareTokenOrders(c.db)
        }
        plan.add(
            "attribution", "decide", .pool,
            reads: [.night(.r), .night(.g), .night(.o), .night(.tokenOrders), .job(.appleTransactions)],
            writes: [.night(.who)]
        ) { c in
            try c.db.run(decide().attributionSQL)
        }
    }

    /// The tally (contract §1), beside other work. The receipts first, because unresolved.csv is
    /// their `unresolved` bucket; they start when the grants' family rows are sorted: from then
    /// until the transactions' sort ends only that sort would run.
    private static func tallySteps(_ plan: PlanSteps, values: NightValues) {
        let settings = values.base
        let tallyReads: [SourceRelation: [Resource]] = [
            .receipts: [
                .night(.r), .night(.badR), .night(.dkR), .job(.receiptState), .job(.receiptTransactions),
                .job(.appleTransactions), .source(.grants), .night(.otherStores),
            ],
            .orders: [
                .night(.o), .night(.badO), .night(.dkO), .night(.g), .job(.appleTransactions),
                .findings(.compensate), .findings(.unattributed), .night(.otherStores),
            ],
            .grants: [.night(.g), .night(.badG), .night(.dkG), .value(.families), .night(.otherStores)],
            .products: [.night(.p), .source(.products), .night(.otherStores)],
        ]
        let dropOne = settings.faultDropTallyRow
        plan.add(
            "tally receipts", "tally", .own, reads: tallyReads[.receipts] ?? [],
            writes: [.night(.unresolvedIDs), .value(.tally(.receipts))],
            after: ["families: grants sorted"],
            note: "stops the night (exit 70) when a receipt is in no bucket or in two"
        ) { c in
            let t = try Conservation.tally(.receipts, db: c.db, settings: try values.settings(), dropOne: dropOne)
            try values.with {
                $0.summary.tally[SourceRelation.receipts.rawValue] = t
                if let problem = Conservation.problem($0.summary.tally, relations: [.receipts]) {
                    throw JobError(.internalCheck, problem)
                }
            }
        }
        for relation in [SourceRelation.orders, .grants, .products] {
            let bySQL = relation != .grants || settings.tallyGrantsBySQL
            plan.add(
                "tally \(relation.rawValue)", "tally", .own, reads: tallyReads[relation] ?? [],
                writes: [.value(.tally(relation))],
                note: relation == .grants && !bySQL ? "the clean grants' buckets as the rules counted them; SQL adds the input errors" : ""
            ) { c in
                let counted = bySQL ? nil : try values.decided.get().grantBuckets
                let t = try Conservation.tally(relation, db: c.db, settings: try values.settings(), dropOne: dropOne, counted: counted)
                values.with { $0.summary.tally[relation.rawValue] = t }
            }
        }
    }
}

extension DecideStage {
    /// Before the history is written, the hold check: a night that looks wrong writes none
    /// (HeldNight.swift). Then the key digests and the findings' history.
    fileprivate static func historySteps(
        _ plan: PlanSteps, values: NightValues, decide: @escaping @Sendable () throws -> DecideStage
    ) {
        // The relations' figures read no finding: beside Google Play's decisions, which leave a core idle.
        plan.add(
            "hold figures", "write", .own,
            reads: [.job(.keyDigests), .value(.runID), .value(.tally(.products))]
                + [NightTable.o, .badO, .dkO, .r, .badR, .dkR, .g, .badG, .dkG, .otherStores].map { .night($0) },
            writes: [.value(.relationFigures), .job(.heldKeyDigests)], after: ["families: merged"],
            note: "tonight's rows, input errors and rows in the window of each relation, and its sample of keys "
                + "compared with the last published night's"
        ) { c in
            let settings = try values.settings()
            let (runID, products) = values.with { ($0.summary.runID, $0.summary.tally[SourceRelation.products.rawValue]) }
            values.relationFigures.set(try HeldNight(settings: settings, runID: runID).relationFigures(c.db, products: products))
        }
        plan.add(
            "hold check", "write", .own,
            reads: [.job(.currentFindings), .job(.runs), .value(.runID), .value(.relationFigures)],
            writes: [.value(.held)],
            note: "tonight's rows, input errors and findings against the thresholds and the last published nights; "
                + "a night that looks wrong is held (exit 65, its reports under <out>/held/)"
        ) { c in
            let settings = try values.settings()
            let runID = values.with { $0.summary.runID }
            let held = HeldNight(settings: settings, runID: runID)
            let tonight = NightFigures(relations: try values.relationFigures.get(), reports: try held.reportRows(c.db))
            let reasons = NightHold.reasons(tonight: tonight, published: try held.published(c.db), thresholds: settings.hold)
            values.with {
                $0.summary.held = reasons
                $0.summary.windowRows = tonight.relations.compactMapValues(\.inWindow)
            }
        }
        plan.add(
            "key digests", "write", .own, reads: [.job(.heldKeyDigests), .value(.held)],
            writes: [.job(.keyDigests), .job(.heldKeyDigests)],
            note: "a sample of tonight's keys and what each holds, which the next night compares with; a held night's "
                + "wait for its release"
        ) { c in
            let settings = try values.settings()
            let (runID, held) = values.with { ($0.summary.runID, !$0.summary.held.isEmpty) }
            if !held { try c.db.run(HeldNight(settings: settings, runID: runID).publishKeysSQL) }
        }
        plan.add(
            "findings history", "write", .own,
            reads: [.job(.currentFindings), .job(.findings), .night(.g), .night(.play), .job(.appleTransactions), .value(.held)],
            writes: [.job(.findings), .job(.heldFindings)],
            note: "first_seen, closed_on and why (a held night's kept aside for its release); the CSV files compute "
                + "first_seen as it will set it, so they do not wait for it"
        ) { c in
            let (held, runID) = values.with { (!$0.summary.held.isEmpty, $0.summary.runID) }
            let stage = try decide()
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
    }
}
