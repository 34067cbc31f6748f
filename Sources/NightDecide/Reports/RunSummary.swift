import Foundation
import NightLearn
import PlayNight
import Reconciliation

/// What a run did: the ledger row and `summary.json`.
public struct RunSummary: Sendable {
    public var runID: Int64 = 0
    public var asOf: EpochMillis
    public var windowDays: Int
    public var verification = VerifyCounts()
    public var counts: [String: Int] = [:]
    public var reasons: [String: [String: Int]] = [:]
    public var stageSeconds: [String: Double] = [:]
    public var exitCode: Int32?
    public var reportFolder: String?
    /// Per source relation, where every row went (contract §1 "exactly one place").
    public var tally: [String: RelationTally] = [:]
    /// When summary.json was written.
    public var writtenAt: EpochMillis?
    /// The Server API sweeps (nil: not run).
    public var sweeps: SweepCounts?
    /// Apple's daily sales reports (nil: the ASC_* variables are not set, or not a full night).
    public var salesReports: SalesReportCounts?
    /// The Google Play stage (with `PLAY_*` set and Play's rows mapped); nil: not run.
    public var googlePlay: PlayCounts?
    /// The sweep of Google Play's voided purchases; nil: not run.
    public var googlePlayVoided: PlayVoidedCounts?
    /// Why the App Store's part was skipped tonight (it did not answer, Google Play did); nil: asked.
    public var appStoreUnreachable: String?
    /// The nearest acknowledgement deadline not passed yet among Play's decided purchases (nil: none).
    public var playAcknowledgeNext: EpochMillis?
    /// Apple's sales reports against the purchases the job learned (nil: the ASC_* variables are not set).
    public var coverage: SalesCoverage?
    /// Checks not done in this run, and why (no Server API credentials).
    public var skippedChecks: [String] = []
    /// `--receipts` of the night (`auto`, `offline`, `verify-receipt`).
    public var receiptsMode = "auto"
    /// Per currency, per kind (`owed`, `claw_back`, `refunded`, `refunded_still_granted`,
    /// `refund_declined`; Apple's `proceeds_owed`, `proceeds_claw_back`, `proceeds_refunded`,
    /// `proceeds_refunded_still_granted` under the proceeds currency): milliunits.
    public var money: [String: [String: Int64]] = [:]
    /// Refund defense (consumption_requests.csv counted): requests, answers, outcomes, rates.
    public var refundRequests = RefundFunnel()
    /// Per app of IAP_BUNDLE_IDS (empty without it; `otherApp`: rows whose product names none).
    public var apps: [String: AppFigures] = [:]
    /// Why the night was held (empty: it was not; docs/contract.md, "Held nights").
    public var held: [HoldReason] = []
    /// Per source relation with a time column, its clean rows inside the window: what the next
    /// night's hold rules compare with.
    public var windowRows: [String: Int] = [:]

    /// One app's night.
    /// With Google Play configured: per `store` (`app_store`, `google_play`), each report's rows
    /// (0 when none) and the money of them, as `counts` and `money` are for both.
    public var stores: [String: StoreFigures] = [:]
    public struct StoreFigures: Sendable, Equatable {
        public var counts: [String: Int] = [:]
        public var money: [String: [String: Int64]] = [:]
    }

    public struct AppFigures: Sendable, Equatable {
        /// Rows per report with a `product_id`, money as `money`.
        public var counts: [String: Int] = [:]
        public var money: [String: [String: Int64]] = [:]
        /// App Store Server API requests sent for the app, per endpoint.
        public var requests: [String: Int] = [:]
        public var notifications = 0
        public var historyCustomers = 0
        /// Apple refused the app's key tonight (a 401 confirmed with a fresh token); the pieces of
        /// work (receipts, pages, customers) then left unasked for the next night.
        public var refused = false
        public var notAsked = 0
    }

    /// Money totals (currency → kind → milliunits) as text in each currency's minor units.
    public static func texts(_ money: [String: [String: Int64]]) -> [String: [String: String]] {
        Dictionary(
            uniqueKeysWithValues: money.map { currency, kinds in
                (currency, kinds.mapValues { Money.text($0, currency: currency) })
            })
    }

    /// The `apps` key of rows whose product's `bundle_id` is no app of IAP_BUNDLE_IDS.
    public static let otherApp = "(other)"

    /// The `skipped_checks` line of an app whose key Apple refused.
    static func refusedAppCheck(_ app: String) -> String {
        refusedAppCheckPrefix + "\(app) (the App Store Server API refused its key: HTTP 401, confirmed with a fresh token)"
    }
    static let refusedAppCheckPrefix = "app_sweeps "

    /// `skipped_checks` when source rows name Google Play (contract §1, "Two stores in one shop").
    static func otherStoreCheck(rows: Int) -> String {
        otherStoreCheckPrefix + "(\(rows) source row\(rows == 1 ? "" : "s") name google_play: "
            + "this night reads the App Store's rows only; set PLAY_SERVICE_ACCOUNT_FILE and PLAY_PACKAGE_NAMES to check them with Google)"
    }
    static let otherStoreCheckPrefix = "google_play "

    /// `skipped_checks` when Google Play was skipped for the night (refused, unreachable).
    static func playSkippedCheck(_ reason: String) -> String { playCheckPrefix + "(" + reason + ")" }
    /// `skipped_checks` for a package where Google called every token asked unknown.
    static func playDoubtedPackageCheck(_ package: String) -> String {
        playCheckPrefix + "\(package) (Google knows none of the tokens asked in this package, HTTP 404: its 404s are not "
            + "believed tonight; check PLAY_PACKAGE_NAMES and that the service account is the app's)"
    }
    /// `skipped_checks` for a package Google refused the service account for.
    static func playRefusedPackageCheck(_ package: String) -> String {
        playCheckPrefix + "\(package) (Google refused the service account for this package, HTTP 401 or 403 confirmed with "
            + "a fresh token: its tokens were not asked; give the account access to the app in Play Console)"
    }
    static let playCheckPrefix = "google_play_verification "
    /// `skipped_checks` when the App Store did not answer and Google Play's part went on.
    static func appStoreVerificationCheck(_ reason: String) -> String { "app_store_verification (" + reason + ")" }
    static func appStoreSweepsCheck(_ reason: String) -> String { "app_store_sweeps (" + reason + ")" }
    /// `skipped_checks` when Play's notifications were not all pulled (the tokens of the receipts were still asked).
    static func playNotificationsCheck(_ reason: String) -> String { "google_play_notifications (" + reason + ")" }

    /// What a night without App Store Server API credentials cannot check.
    public static let checksNeedingServerAPI = [
        "refunds_app_wide (consumable refunds from notification history)",
        "purchases_never_uploaded (ONE_TIME_CHARGE notifications, transaction history)",
        "signed_transaction_refunds (Get Transaction Info)",
    ]

    /// The checks only verifyReceipt does for app receipts, not done under `--receipts offline`
    /// (docs/contract.md, "What offline cannot know").
    public static let checksWithReceiptsOffline = [
        "receipt_refunds (--receipts offline: verifyReceipt's refund sweep of app receipts)",
        "receipt_renewals (--receipts offline: renewals after a receipt was issued, in verifyReceipt's latest_receipt_info)",
        "receipt_statuses (--receipts offline: 21010 and 211xx, trial flag and cancellation reason, which only verifyReceipt answers)",
    ]

    public init(asOf: EpochMillis, windowDays: Int) {
        self.asOf = asOf
        self.windowDays = windowDays
    }

    /// summary.json: `JSONEncoder` with sorted keys, so the same run gives the same bytes.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every field is a plain value: encoding cannot fail.
        return String(decoding: try! encoder.encode(Document(self)), as: UTF8.self)
    }

    /// `held` as a JSON array (the ledger's `runs.held`).
    var heldJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(held)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// The document's shape; its keys are the contract's.
    private struct Document: Encodable {
        struct Window: Encodable { var days: Int; var from: String; var to: String }
        struct Verification: Encodable {
            var candidates, sweep, requests, ok, reject, `switch`, retry, unresolved, config: Int
            /// StoreKit 2 uploads verified offline (not in `ok`/`reject`, which count App Store answers).
            var signed_ok, signed_reject: Int
            var receipts_offline: ReceiptsOffline
        }
        /// App receipts verified on our machine (`--receipts`).
        struct ReceiptsOffline: Encodable {
            var mode: String
            var verified: Int
            var rejected: [String: Int]
            var unresolved: Int
            var to_verify_receipt: [String: Int]
        }
        var run_id: Int64
        var as_of: String
        var written_at: String?
        var window: Window
        var counts: [String: Int]
        var reasons: [String: [String: Int]]
        var verification: Verification
        var seconds: [String: Double]
        var tally: [String: [String: Int]]
        var exit_code: Int32?
        var money: [String: [String: String]]
        var skipped_checks: [String]
        var sweeps: Sweeps?
        var refund_requests: RefundFunnel
        var apps: [String: App]?
        var stores: [String: Store]?
        struct Store: Encodable {
            var counts: [String: Int]
            var money: [String: [String: String]]
        }
        var sales_reports: SalesReports?
        var google_play: GooglePlayJSON?
        var coverage: Coverage?
        var held: [HoldReason]?
        var window_rows: [String: Int]?
        struct Coverage: Encodable {
            struct Product: Encodable {
                var product_id: String
                var apple_units_sold, job_units_sold, apple_units_refunded, job_units_refunded: Decimal
                var percent_known: String?
                var days_differing: [String]
            }
            var time_zone, from, to: String
            var days_held: Int
            var apple_units_sold, job_units_sold, apple_units_refunded, job_units_refunded: Decimal
            var percent_known: String?
            var products: [Product]
        }
        struct SalesReports: Encodable {
            struct Window: Encodable { var from, to, time_zone: String }
            struct DayError: Encodable { var date, reason: String }
            var vendor_number: String
            var window: Window
            var held_before, asked: Int
            var held, empty, not_yet_published, not_asked: [String]
            var errors: [DayError]
            var rows_kept: Int
            var version: String
            var requests, rate_limited, retried: Int
            var skipped: String?
        }
        struct App: Encodable {
            var counts: [String: Int]
            var money: [String: [String: String]]
            var requests: [String: Int]
            var notifications, history_customers: Int
            var refused: Bool
            var not_asked: Int
        }
        struct Sweeps: Encodable {
            var notifications: [String: Int]
            var notifications_rejected: Int
            var history_customers, history_left, history_transactions, history_rejected: Int
            var requests: [String: Int]
            var rate_limited, retried, abandoned: Int
        }

        init(_ s: RunSummary) {
            run_id = s.runID
            as_of = UTC.timestamp(s.asOf)
            written_at = s.writtenAt.map(UTC.timestamp)
            window = Window(
                days: s.windowDays, from: UTC.timestamp(s.asOf - EpochMillis(s.windowDays) * 86_400_000),
                to: UTC.timestamp(s.asOf))
            counts = s.counts
            reasons = s.reasons
            let v = s.verification
            verification = Verification(
                candidates: v.candidates, sweep: v.sweep, requests: v.requests, ok: v.ok,
                reject: v.rejected, switch: v.switched, retry: v.retried,
                unresolved: v.unresolved, config: v.config,
                signed_ok: v.signedVerified, signed_reject: v.signedRejected,
                receipts_offline: ReceiptsOffline(
                    mode: s.receiptsMode, verified: v.receiptsOffline, rejected: v.receiptsOfflineRejected,
                    unresolved: v.receiptsOfflineUnsettled, to_verify_receipt: v.receiptsToVerifyReceipt))
            seconds = s.stageSeconds
            tally = s.tally.mapValues { $0.buckets.merging(["rows": $0.rows]) { $1 } }
            exit_code = s.exitCode
            money = RunSummary.texts(s.money)
            skipped_checks = s.skippedChecks
            refund_requests = s.refundRequests
            held = s.held.isEmpty ? nil : s.held
            window_rows = s.windowRows.isEmpty ? nil : s.windowRows
            apps =
                s.apps.isEmpty
                ? nil
                : s.apps.mapValues {
                    App(
                        counts: $0.counts, money: RunSummary.texts($0.money), requests: $0.requests,
                        notifications: $0.notifications, history_customers: $0.historyCustomers, refused: $0.refused,
                        not_asked: $0.notAsked)
                }
            stores = s.stores.isEmpty ? nil : s.stores.mapValues { Store(counts: $0.counts, money: RunSummary.texts($0.money)) }
            sales_reports = s.salesReports.map {
                SalesReports(
                    vendor_number: $0.vendorNumber, window: .init(from: $0.from, to: $0.to, time_zone: $0.timeZone),
                    held_before: $0.heldBefore, asked: $0.asked, held: $0.held.sorted(), empty: $0.empty.sorted(),
                    not_yet_published: $0.notYetPublished.sorted(), not_asked: $0.notAsked.sorted(),
                    errors: $0.errors.sorted { $0.key < $1.key }.map { SalesReports.DayError(date: $0.key, reason: $0.value) },
                    rows_kept: $0.rowsKept, version: $0.version, requests: $0.requests,
                    rate_limited: $0.rateLimited, retried: $0.retried, skipped: $0.skipped)
            }
            google_play = s.googlePlay.map {
                GooglePlayJSON($0, voided: s.googlePlayVoided, acknowledgeNext: s.playAcknowledgeNext)
            }
            coverage = s.coverage.map { c in
                Coverage(
                    time_zone: c.timeZone, from: c.from, to: c.to, days_held: c.daysHeld,
                    apple_units_sold: c.appleSold, job_units_sold: c.jobSold, apple_units_refunded: c.appleRefunded,
                    job_units_refunded: c.jobRefunded, percent_known: SalesCoverage.percent(c.jobSold, of: c.appleSold),
                    products: c.products.map {
                        Coverage.Product(
                            product_id: $0.productID, apple_units_sold: $0.appleSold, job_units_sold: $0.jobSold,
                            apple_units_refunded: $0.appleRefunded, job_units_refunded: $0.jobRefunded,
                            percent_known: SalesCoverage.percent($0.jobSold, of: $0.appleSold),
                            days_differing: $0.daysDiffering)
                    })
            }
            sweeps = s.sweeps.map {
                Sweeps(
                    notifications: $0.notifications, notifications_rejected: $0.notificationsRejected,
                    history_customers: $0.historyCustomers, history_left: $0.historyLeft,
                    history_transactions: $0.historyTransactions, history_rejected: $0.historyRejected,
                    requests: $0.pager.requests, rate_limited: $0.pager.rateLimited, retried: $0.pager.retried,
                    abandoned: $0.pager.abandoned)
            }
        }
    }
}
