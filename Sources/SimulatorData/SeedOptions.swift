// What `iap-sim seed` is asked (its options) and what it tells (the census it prints).

import AppStoreSimulator

/// `iap-sim seed` options.
public struct SeedOptions: Sendable {
    public var users: Int = 1000
    public var seed: UInt64 = 1
    /// The job's `--as-of`; every date is relative to it.
    public var asOf: Int64
    /// The apps (`--bundle`, repeatable), the first one first: with several, every user slot
    /// plays in one of them (`GeneratorSettings.app(ofSlot:)`), and the expected files assume the
    /// job sweeps every app.
    public var bundles: [String] = ["com.example.game"]
    /// The first app.
    public var bundle: String {
        get { bundles[0] }
        set { bundles = [newValue] + bundles.dropFirst().filter { $0 != newValue } }
    }
    public var schema: String = "public"
    /// Where to write the refund list the simulator serves (`iap-sim serve --refunds`).
    public var refundsPath: String?
    /// Where to write what Apple knows (`AppleTruthFile`) for `iap-sim serve --apple-truth`.
    public var appleTruthPath: String?
    /// Where to write the expected report files of the job's first run.
    public var expectedDir: String?
    /// Also write `<schema>.sim_truth`.
    public var truthTable: Bool = false
    public var badRows: Bool = true
    /// The test PKI's folder (`TestPKI.loadOrCreate`): with it, a share of users upload StoreKit 2
    /// signed transactions and the signed scenarios play. The job needs its root.pem in
    /// `IAP_ROOT_CERTIFICATES`.
    public var pkiDirectory: String?
    /// App receipts as PKCS#7 signed by the receipt PKI in `pkiDirectory` (SimReceiptPKCS7.swift).
    public var pkcs7Receipts = false
    /// The share of users whose uploads are signed transactions (with `pkiDirectory`).
    public var storeKit2Share = 0.25
    /// More users after the others, each with a refund only the notification history shows and
    /// an open order (so the night asks their transaction history): the Server API benchmark.
    public var apiBench = 0
    /// Every `clean_consumable` user makes this many more purchases, alternating a missed order and
    /// a duplicated grant (the findings benchmark: `make bench` with BENCH_EXTRA_FINDINGS).
    public var extraFindings = 0
    /// A user's transaction ids are `u × 20 + k` (`IDs.transaction`) and a clean consumable user
    /// already uses up to three: 17 more keep every id unique.
    public static let extraFindingsRange = 0...17
    /// Purchases Apple sold that the shop never saw, as a share of Apple's production purchases
    /// (in the truth only: UnseenPurchases.swift); 0 = none.
    public var unseenShare = 0.01
    /// `--sales-report-timezone`: the zone of the report days of the expected coverage.csv (the
    /// job's and `iap-sim serve`'s option of that name).
    public var salesReportTimeZone = "America/Los_Angeles"
    /// `--expect-proceeds`: the expected findings carry Apple's proceeds (ExpectedProceeds.swift).
    public var expectProceeds = false
    /// libpq conninfo; nil = $DATABASE_URL, else the libpq environment.
    public var conninfo: String?
    /// `--play-users`: Google Play players (PlayScenarios.swift); 0 leaves the seed an App Store
    /// shop's, byte for byte.
    public var playUsers = 0
    /// `--play-package`: the Play app's package name (its products' `bundle_id`).
    public var playPackage = "com.example.game"
    /// `--play-truth`: where to write what Google knows, for `iap-sim serve --play-truth`.
    public var playTruthPath: String?
    /// The real clock when the seed runs (Unix ms): Google lists voided purchases and delivers
    /// notifications by its own now, so a Play seed's --as-of must lie near it.
    public var realNow: Int64 = 0

    public init(asOf: Int64) { self.asOf = asOf }
}

/// What a seed run made.
public struct SeedSummary: Sendable {
    public var users: Int = 0
    public var scenarios: [String: Int] = [:]
    public var rows: [String: Int] = [:]
    public var expected: [String: Int] = [:]
    public var refunds: Int = 0
    /// Refunds and purchases only the Server API shows (in the Apple truth).
    public var apiOnlyRefunds: Int = 0
    public var apiOnlyPurchases: Int = 0
    /// Purchases only the sales report shows (`--unseen-share`), in the truth.
    public var unseenPurchases: Int = 0
    /// CONSUMPTION_REQUESTs in the Apple truth (ConsumptionRequests.swift): all, those older than
    /// 12 hours at as-of, those of granted purchases; `iap_consents` and `iap_consumption` rows.
    public var consumptionRequests = 0
    public var consumptionExpired = 0
    public var consumptionDelivered = 0
    public var consents = 0
    public var consumptionRows = 0
    /// Per app (by bundle id; the bad-row block counts in the first app): what it got.
    public var apps: [String: AppCounts] = [:]
    /// Google Play's players per family, and Google's purchases, voided records and notifications.
    public var playFamilies: [String: Int] = [:]
    public var playPurchases = 0
    public var playVoided = 0
    public var playNotifications = 0
}

/// One app's share of a seed (`SeedSummary.apps`).
public struct AppCounts: Sendable, Equatable {
    public var users = 0
    public var orders = 0
    public var receipts = 0
    public var grants = 0
    /// Refunds of the refund list and refunds only the Server API shows.
    public var refunds = 0
    public var apiOnlyPurchases = 0
    public var consumptionRequests = 0
    /// Expected report rows, by file name (compensate.csv…).
    public var expected: [String: Int] = [:]

    public init() {}
}
