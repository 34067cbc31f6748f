import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import StoreIO

extension VerifyStage {
    /// What the night learns from Apple: the receipts verified, the Server API swept (with its key
    /// and `--api-sweeps`), and Apple's sales reports (with the ASC_* variables, on a full night).
    static func steps(_ plan: PlanSteps, salesReports: Bool, values: NightValues, logger: Logger) {
        let settings = values.base
        plan.add(
            "verify receipts", "verify", .main,
            reads: [.source(.receipts), .job(.receiptState), .value(.settings), .value(.runID)],
            writes: [
                .job(.receiptState), .job(.verifyAttempts), .job(.appleTransactions), .job(.receiptTransactions),
                .value(.verification),
            ],
            note: "receipts to Apple over HTTP, signed transactions on the verifier threads; answers written on a session of its own"
        ) { c in
            let settings = try values.settings()
            do {
                let counts = try VerifyStage(settings: settings, runID: values.runID, logger: logger).run(db: c.db)
                values.with { $0.summary.verification = counts }
            } catch let error as JobError where Self.appStoreMaySkip(error, settings) {
                Self.skipAppStore(RunSummary.appStoreVerificationCheck, error, values: values, logger: logger)
            }
        }
        playSteps(plan, values: values, logger: logger)
        if let api = settings.serverAPI, settings.apiSweeps {
            plan.add(
                "sweep the Server API", "sweep", .main,
                reads: [
                    .job(.notificationSweeps), .job(.historyCustomers), .job(.receiptTransactions), .value(.settings), .value(.runID),
                    .source(.orders), .source(.receipts),
                ],
                writes: [
                    .job(.notifications), .job(.notificationSweeps), .job(.historyCustomers), .job(.appleTransactions),
                    .value(.sweeps),
                ],
                note: "notification history and customers' transaction histories, over HTTP"
            ) { c in
                let settings = try values.settings()
                do {
                    let s = try ServerAPISweeps(settings: settings, api: api, runID: values.runID, logger: logger).run(db: c.db)
                    values.with { $0.summary.sweeps = s }
                } catch let error as JobError where Self.appStoreMaySkip(error, settings) {
                    Self.skipAppStore(RunSummary.appStoreSweepsCheck, error, values: values, logger: logger)
                }
            }
        }
        if settings.transport.play != nil {
            plan.add(
                "the stores answered", "verify", .main,
                reads: [.value(.verification), .value(.googlePlay), .value(.googlePlayVoided), .value(.sweeps)], writes: [],
                note: "with Google Play configured: exit 75 when the App Store did not answer and Google Play did not either"
            ) { _ in
                try someStoreAnswered(values.summary)
            }
        }
        guard salesReports, let connect = settings.appStoreConnect else { return }
        // After the sweeps (their Apple traffic first), beside the decide stage on a session of its
        // own: it writes only its own tables, and never fails the night (a 401/403 or an
        // unreachable App Store Connect ends this step alone: skipped_checks).
        plan.add(
            "sales reports", "sales", .own,
            reads: [.job(.salesReportDays), .source(.products), .value(.settings), .value(.runID), .value(.sweeps)],
            writes: [.job(.salesReportDays), .job(.salesReportRows), .job(.salesReportErrors), .value(.salesReports)],
            note: "Apple's daily Summary Sales Report of every day of the window not held yet, over HTTP; a day stored "
                + "in one transaction"
        ) { c in
            let counts = SalesReportStep(settings: try values.settings(), connect: connect, runID: values.runID, logger: logger)
                .run(db: c.db)
            values.with {
                $0.summary.salesReports = counts
                if let reason = counts.skipped {
                    $0.summary.skippedChecks.append(SalesReports.checkPrefix + "(" + reason + ")")
                }
            }
        }
    }

    /// With Google Play configured and its rows mapped, the App Store not answering is no reason to
    /// stop the night (contract "Exit codes": 75 only when every store is unreachable): its
    /// receipts stay unresolved, its positions where they were, and Play's lists are written.
    static func appStoreMaySkip(_ error: JobError, _ settings: JobSettings) -> Bool {
        error.unreachableStore != nil && settings.transport.play != nil && settings.storeRows != nil
    }

    /// After every step that asks a store: the App Store's part skipped for an outage is fine only
    /// when Google Play answered (its tokens asked and its voided purchases swept, neither skipped).
    static func someStoreAnswered(_ s: RunSummary) throws {
        guard let apple = s.appStoreUnreachable else { return }
        let play = s.googlePlay == nil ? "not asked" : s.googlePlay?.skipped ?? s.googlePlayVoided?.skipped
        guard let play else { return }
        throw JobError(.temporary, "neither store answered tonight: \(apple); Google Play: \(play)")
    }

    /// Records the App Store's part skipped (`skipped_checks` `check (…)`, a warning).
    static func skipAppStore(_ check: (String) -> String, _ error: JobError, values: NightValues, logger: Logger) {
        logger.warning("\(error.message); the App Store's part is skipped tonight, Google Play's goes on")
        values.with {
            $0.summary.appStoreUnreachable = $0.summary.appStoreUnreachable ?? error.message
            $0.summary.skippedChecks.append(check(error.message))
        }
    }

    /// Google Play's purchase tokens asked and its voided purchases swept (with `PLAY_*` set and
    /// Play's rows mapped): after the App Store's receipts, on the run's session.
    static func playSteps(_ plan: PlanSteps, values: NightValues, logger: Logger) {
        guard let play = values.base.transport.play else { return }
        plan.add(
            "verify Play purchases", "verify", .main,
            reads: [
                .source(.receipts), .source(.orders), .source(.products), .job(.playPurchases), .job(.playMessages), .value(.settings),
                .value(.runID),
            ],
            writes: [
                .job(.playPurchases), .job(.playPurchaseLines), .job(.playAttempts), .job(.playOrders), .job(.playMessages),
                .job(.playRefundReviews), .value(.googlePlay),
            ],
            note: "Play's notifications pulled (with PLAY_PUBSUB_SUBSCRIPTION), each stored before it is acknowledged; then "
                + "Google Play's purchase tokens not settled yet, asked productsv2 over HTTP, then the money of their orders "
                + "(orders.batchget); nothing without Play's rows mapped"
        ) { c in
            try verifyPlay(c.db, play: play, values: values, logger: logger)
        }
        plan.add(
            "sweep Play's voided purchases", "sweep", .main,
            reads: [.job(.playVoidedPositions), .value(.settings), .value(.runID)],
            writes: [.job(.playVoided), .job(.playVoidedPositions), .value(.googlePlayVoided)],
            note: "each package's voided purchases from its position, every page, over HTTP; nothing without Play's rows mapped"
        ) { c in
            try sweepPlayVoided(c.db, play: play, values: values, logger: logger)
        }
    }

    /// The "verify Play purchases" step: Play's notifications first (the tokens they name are asked
    /// with tonight's), the tokens, then their orders' money; 75 when the App Store did not answer
    /// either.
    static func verifyPlay(_ db: PGConnection, play: PlaySettings, values: NightValues, logger: Logger) throws {
        let settings = try values.settings()
        guard settings.storeRows != nil else { return }
        let notifications =
            play.subscription == nil
            ? nil : try PlayNotificationPull(settings: settings, play: play, runID: values.runID, logger: logger).run(db: db)
        var counts = try PlayPurchases(settings: settings, play: play, runID: values.runID, logger: logger).run(db: db)
        counts.notifications = notifications
        if counts.skipped == nil {
            counts.orders = try PlayOrderMoney(settings: settings, play: play, runID: values.runID, logger: logger).run(db: db)
        }
        values.with {
            $0.summary.googlePlay = counts
            if let reason = counts.skipped {
                $0.summary.skippedChecks.append(RunSummary.playSkippedCheck(reason))
            } else {
                for package in counts.refusedPackages {
                    $0.summary.skippedChecks.append(RunSummary.playRefusedPackageCheck(package))
                }
            }
            for package in counts.doubtedPackages {
                $0.summary.skippedChecks.append(RunSummary.playDoubtedPackageCheck(package))
            }
            if let reason = notifications?.skipped {
                $0.summary.skippedChecks.append(RunSummary.playNotificationsCheck(reason))
            }
        }
    }

    /// The "sweep Play's voided purchases" step, and its warnings: a span Google no longer lists,
    /// a position older than `--play-voided-alert-days`.
    static func sweepPlayVoided(_ db: PGConnection, play: PlaySettings, values: NightValues, logger: Logger) throws {
        let settings = try values.settings()
        guard settings.storeRows != nil else { return }
        let counts = try PlayVoidedNight(settings: settings, play: play, runID: values.runID, logger: logger).run(db: db)
        values.with {
            $0.summary.googlePlayVoided = counts
            if let reason = counts.skipped, !$0.summary.skippedChecks.contains(RunSummary.playSkippedCheck(reason)) {
                $0.summary.skippedChecks.append(RunSummary.playSkippedCheck(reason))
            }
        }
        for (package, span) in counts.lost.sorted(by: { $0.key < $1.key }) {
            logger.warning(
                """
                Google Play: the voided purchases of \(package) from \(span) are no longer listed by Google (it keeps 30 \
                days) and were never swept: refunds and chargebacks of that span are lost for good
                """)
        }
        for package in counts.stale where counts.lost[package] == nil {
            logger.warning(
                """
                Google Play: the voided purchases of \(package) had not been swept for more than \
                \(settings.playVoidedAlertDays) days (--play-voided-alert-days); Google keeps 30
                """)
        }
    }
}
