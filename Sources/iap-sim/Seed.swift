import AppStoreSimulator
import ArgumentParser
import Foundation
import Reconciliation
import SimulatorData

struct Seed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fill iap_products, iap_orders, iap_receipts and iap_grants with seeded scenarios.",
        discussion: """
        Drops and re-creates the four source relations of the contract (§1) in --schema as plain tables \
        without primary keys (so that bad rows with duplicate keys fit), loads them with COPY FROM STDIN \
        while generating (memory stays flat for millions of users), then adds indexes and ANALYZEs. \
        Connection: $DATABASE_URL, else the libpq variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD, \
        PGPASSFILE).

        About 70% of the users are clean (purchases delivered, granted, upload answered 0); the others play \
        one scenario each: missed orders (exact, inferred, none), partial and revoked grants, duplicate \
        grants (same transaction, restores, cross account), refunds, invalid receipts, wrong bundle, \
        transactions not found, sandbox purchases, purchases outside the window, renewals, expired \
        subscriptions (21006), malformed receipts (21002). Receipts carry simulator tokens that `iap-sim \
        serve` answers. Run the job with IAP_BUNDLE_IDS=<every --bundle, comma-separated>, the same --as-of, the default \
        --window-days 30 and --refund-window-days 90, and the simulator serving the --refunds file.

        Products have list prices (iap_products.price, currency USD); Apple's USA storefront charges \
        exactly them, so amounts do not depend on whether the job learned Apple's price. Purchases in \
        Japan (JPY) and Germany (EUR) are only made where the job certainly reads Apple's price: \
        verified StoreKit 2 uploads and purchases only the App Store Server API shows.

        Server API scenarios: consumable refunds only the notification history shows (full, \
        prorated, reversed by REFUND_REVERSED), a subscription only the customer's transaction history \
        shows, first purchases only a ONE_TIME_CHARGE notification reports (appAccountToken = the \
        order's UUID order_id, and without one: unattributed.csv). Apple's truth always holds them; \
        the expected files list them only with --apple-truth, which stands for "the job has API \
        credentials and sweeps notifications and transaction history".

        Consumption requests (with --apple-truth): a hash-chosen share of Apple's transactions \
        (mostly production consumables, granted or paid but not granted; a few non-consumables, \
        subscriptions and sandbox ones; never a refunded one, and only purchases whose verdict the \
        scenarios state exactly: granted to one user, or a compensate row) get a CONSUMPTION_REQUEST in the truth \
        (consumption_request_ms, consumption_request_reason), about 70% within the 12 hours before \
        --as-of, the rest 1 to 5 days before. The shop's side: iap_consents(user_id, consented_at) for \
        about 70% of the users asked (a few consented only after the request), iap_consumption( \
        transaction_id, consumption_percentage, delivery_status) for about 60% of the granted ones asked \
        and a few undelivered ones, iap_products.sample_content_provided (true for two products, else \
        NULL). --expected also gets consumption_requests.csv: what the night lists after `iap-reconcile \
        respond --now <as-of> --send` with its default options (sent, no_consent or expired; outcomes \
        pending, or declined for the expired ones). No other expected report changes \
        (Sources/SimulatorData/ConsumptionRequests.swift).

        --expected also gets coverage.csv: what the night (with the ASC_* variables, `iap-sim serve \
        --connect-key`, its default windows) and its rerun at the same --as-of list when they compare \
        Apple's daily sales reports of the window (the days published by the seed's wall clock, as the \
        simulator publishes them) with the purchases and refunds they learned, per report day in \
        --sales-report-timezone, product, country and currency. \
        Derived from the scenarios: a genuine signed upload, a ONE_TIME_CHARGE, REFUND or \
        REFUND_DECLINED notification, or the transaction history of a customer with an open order \
        gives country and currency; a receipt only verifyReceipt answered (verified in the window, or \
        the refund sweep's newest receipt of a holder of a durable grant) gives unknown/unknown; the \
        --unseen-share purchases are never learned \
        (Sources/SimulatorData/SalesCoverage.swift). Without --apple-truth its header only.
        """
    )

    @Option(help: "User slots to generate (a cross-account pair takes two).")
    var users: Int = 1000

    @Option(help: "Seed of every random choice: same seed, users and as-of → same data.")
    var seed: UInt64 = 1

    @Option(name: .customLong("as-of"), help: "The job's --as-of (ISO 8601, e.g. 2026-11-21T03:00:00Z); all dates are relative to it. Default: now.")
    var asOf: String?

    @Option(help: ArgumentHelp("""
        Bundle id of an app (products, receipts), repeatable; the job must run with IAP_BUNDLE_IDS set to \
        them all (and `iap-sim serve --api-bundle` naming each). With several, every user plays in one app \
        (a hash of --seed and the user slot; the bad rows in the first), buys that app's products (ids \
        prefixed with its bundle id, iap_products.bundle_id naming it) and has its receipts, Apple \
        transactions, refunds, notifications and consumption requests in that app; the expected files \
        assume the job sweeps every app. With one, the data are exactly what they always were.
        """, valueName: "bundle-id"))
    var bundle: [String] = ["com.example.game"]

    @Option(help: "Schema of the four source relations (created when missing).")
    var schema: String = "public"

    @Option(help: "Write the refund list here (lines transaction_id,cancellation_date_ms,cancellation_reason) for `iap-sim serve --refunds`. Without it the refund scenarios expect no clawback. Not <--expected>/refunds.csv: that is the expected report.")
    var refunds: String?

    @Option(name: .customLong("apple-truth"), help: "Write what Apple knows here (one Apple transaction per tab-separated line: ids, product, dates, environment, bundle, customer, Apple order id, refund, storefront, price, currency, revocation type and percentage, reversal date) for `iap-sim serve --apple-truth`. The refund list's refunds are in it only with --refunds. Also means the job sweeps the Server API: the expected files then include what only notifications and transaction histories show.")
    var appleTruth: String?

    @Option(help: "Write compensate.csv, duplicate_grants.csv, clawback.csv, input_errors.csv, refunds.csv and unattributed.csv into this folder, exactly as the job must write them on its first run with this --as-of (the simulator answering without faults, or the job retrying them away); and consumption_requests.csv as the night writes it after `iap-reconcile respond --now <as-of> --send` (empty without --apple-truth).")
    var expected: String?

    @Option(help: "Folder of the test PKI (created when missing; `iap-sim serve --pki` uses the same): with it, --storekit2-share of the users upload StoreKit 2 signed transactions, and tampered, other-app, unknown-root and sandbox ones are added. Run the job with IAP_ROOT_CERTIFICATES=<folder>/root.pem.")
    var pki: String?

    @Flag(name: .customLong("pkcs7-receipts"), help: ArgumentHelp("""
        With --pki: app receipts are PKCS#7 as Apple's, signed by the receipt PKI in the same folder         (receipt-root.pem, created when missing; SHA-1 or SHA-256 by receipt), the simulator's truth in         an undocumented type; a 21003 receipt's signature is broken; iOS 6 and 21002 receipts stay JSON         tokens. The job verifies them offline with IAP_RECEIPT_ROOT_CERTIFICATES=<folder>/receipt-root.pem;         `iap-sim serve --pki <folder>` answers them at verifyReceipt.
        """))
    var pkcs7Receipts = false

    @Option(name: .customLong("storekit2-share"), help: "Share of users (0…1) whose uploads are signed transactions (with --pki).")
    var storeKit2Share: Double = 0.25

    @Option(name: .customLong("api-bench"), help: ArgumentHelp("""
        Add N users after the others (and after the bad rows), each with a granted consumable that Apple \
        refunded (shown only by a REFUND notification) and a later open order, so that a night with \
        --apple-truth sweeps N refund notifications and asks N customers' transaction histories (the \
        Server API budget benchmark: --api-bench 2000). Each is a clawback and a refunds.csv row.
        """, valueName: "N"))
    var apiBench: Int = 0

    @Option(name: .customLong("extra-findings"), help: ArgumentHelp("""
        Every clean_consumable user (about 60% of the users) makes N more consumable purchases, each a \
        finding, alternately a missed order (the 1st, 3rd, …: an open order, a receipt naming it, no \
        grant; one compensate.csv row, match exact) and a grant repeated (the 2nd, 4th, …: one or two \
        duplicate_grants.csv rows, same_transaction). N from 0 to 17 (a user's transaction ids hold 20); \
        0 leaves the data exactly as without the option. The findings benchmark: `make bench` with \
        BENCH_EXTRA_FINDINGS.
        """, valueName: "N"))
    var extraFindings: Int = 0

    @Option(name: .customLong("unseen-share"), help: ArgumentHelp("""
        With --apple-truth: purchases Apple sold that the shop never saw, as a share (0…1) of Apple's \
        production purchases (rounded; 0: none). Customers unknown to the shop (S000000000…), \
        transaction ids 1000002…, mostly consumables, in the USA, Japan or Germany, 1 hour to 30 days \
        before --as-of; no receipt, order, grant, history of a user of ours or notification (the truth's \
        `notifications` column says `none`), so only the sales report (`iap-sim serve --connect-key`) \
        shows them. Written after every other truth line; nothing else the seed writes changes but the \
        expected coverage.csv (Apple sold them; the job never learns them).
        """, valueName: "share"))
    var unseenShare: Double = 0.01

    @Option(name: .customLong("sales-report-timezone"), help: ArgumentHelp("""
        The zone of a sales report day in the expected coverage.csv: the job's --sales-report-timezone \
        (and `iap-sim serve`'s).
        """, valueName: "zone"))
    var salesReportTimeZone = "America/Los_Angeles"

    @Flag(name: .customLong("expect-proceeds"), help: ArgumentHelp("""
        With --expected and --apple-truth: the nights read Apple's daily sales reports (the ASC_* \
        variables set, `iap-sim serve --connect-key`), so the expected compensate.csv, clawback.csv and \
        refunds.csv fill `proceeds` and `proceeds_currency`: a transaction the job learns with a \
        storefront and a signed price, whose product, country, currency and unit price Apple sold on a \
        day the nights hold, gets 70% of its unit price per unit (the simulator's Developer Proceeds) × \
        the row's units (Sources/SimulatorData/ExpectedProceeds.swift). Without it the two \
        columns are empty, as a night without the ASC_* variables writes them.
        """))
    var expectProceeds = false

    @Flag(name: .customLong("truth-table"), help: "Also write <schema>.sim_truth: one row per (receipt_id, transaction) with every Apple field, the environment, bundle, forced status and style, so that benchmarks can fill the job's tables without calling the simulator.")
    var truthTable = false

    @Flag(name: .customLong("bad-rows"), inversion: .prefixedNo, help: "Add rows that break the contract (null user_id, unknown product_id, product_type outside the four, quantity 0, receipt_data not base64, a duplicated grant_id); they are the expected input_errors.csv.")
    var badRows = true

    @Option(name: .customLong("play-users"), help: ArgumentHelp("""
        Also sell on Google Play: N Play players, after the App Store's (0: none, and the seed is \
        exactly an App Store shop's). The four relations get a `store` column (the App Store's rows \
        `app_store`, Play's `google_play`, as the contract's "Two stores in one shop" maps them): \
        Play's products under the App Store's product ids (two products each), bundle_id the \
        --play-package; the purchase token in receipt_data; Google's order id (GPA.…), else the \
        token, as transaction_id. The first players play every family once, the others are mostly \
        clean: granted and acknowledged, missed order, granted but unacknowledged, overdue, a grant \
        repeated, a second unit granted to another account, refunded (grant active, revoked or never \
        made), chargeback, refunded for want of an acknowledgement (reason 8), quantity-based partial \
        refunds (2 then 3; 2, 3, then the rest), a voided record its order contradicts, cancelled, \
        pending, a test purchase, no order id, a forged token, an App Store player buying on Play, a \
        purchase only Pub/Sub shows (its account id our order's id), one nobody owns, and bad rows. \
        With --expected every report ends with `store` and acknowledge.csv is written too, as the \
        night writes them with PLAY_SERVICE_ACCOUNT_FILE, PLAY_PACKAGE_NAMES=<--play-package> and \
        PLAY_PUBSUB_SUBSCRIPTION pointing at `iap-sim serve --play-service-account <key> --play-truth \
        <file> --play-subscription <name>` (Sources/SimulatorData/PlayScenarios.swift). Google lists \
        voided purchases and delivers notifications by its own clock: every Play time lies within \
        21 days before --as-of, and --as-of must lie between 8 days before now and now.
        """, valueName: "N"))
    var playUsers = 0

    @Option(name: .customLong("play-package"), help: ArgumentHelp(
        "The Play app's package name (with --play-users): its products' bundle_id and the job's PLAY_PACKAGE_NAMES.",
        valueName: "name"))
    var playPackage = "com.example.game"

    @Option(name: .customLong("play-truth"), help: ArgumentHelp(
        "With --play-users: write what Google knows here (purchases, orders' money, voided records, notifications) for `iap-sim serve --play-truth`.",
        valueName: "file"))
    var playTruth: String?

    @Option(help: "libpq connection string or URL (default: $DATABASE_URL, else the PG* variables).")
    var conninfo: String?

    func validate() throws {
        guard users >= 0 else { throw ValidationError("--users must not be negative") }
        guard Set(bundle).count == bundle.count else { throw ValidationError("--bundle: an app is named twice") }
        guard (0...1_000_000).contains(apiBench) else { throw ValidationError("--api-bench must be between 0 and 1000000") }
        let extra = SeedOptions.extraFindingsRange
        guard extra.contains(extraFindings) else {
            throw ValidationError("--extra-findings must be between \(extra.lowerBound) and \(extra.upperBound) "
                + "(a user's transaction ids hold 20, a clean consumable user already uses up to 3)")
        }
        if let asOf, UTC.parse(asOf) == nil { throw ValidationError("--as-of: not an ISO 8601 time: \(asOf)") }
        guard playUsers >= 0 else { throw ValidationError("--play-users must not be negative") }
        guard playUsers == 0 || playTruth != nil else {
            throw ValidationError("--play-users needs --play-truth <file>: the simulator answers for Play's purchases from it")
        }
    }

    func run() throws {
        var tv = timeval()
        gettimeofday(&tv, nil)
        let now = Int64(tv.tv_sec) * 1000 + Int64(tv.tv_usec) / 1000
        var options = SeedOptions(asOf: asOf.flatMap(UTC.parse) ?? now)
        options.users = users
        options.seed = seed
        options.bundles = bundle
        options.schema = schema
        options.refundsPath = refunds
        options.appleTruthPath = appleTruth
        options.expectedDir = expected
        options.truthTable = truthTable
        options.badRows = badRows
        options.pkiDirectory = pki
        guard !pkcs7Receipts || pki != nil else { throw ValidationError("--pkcs7-receipts needs --pki <folder>") }
        options.pkcs7Receipts = pkcs7Receipts
        guard (0...1).contains(storeKit2Share) else { throw ValidationError("--storekit2-share must be between 0 and 1") }
        options.storeKit2Share = storeKit2Share
        options.apiBench = apiBench
        options.extraFindings = extraFindings
        guard (0...1).contains(unseenShare) else { throw ValidationError("--unseen-share must be between 0 and 1") }
        options.unseenShare = unseenShare
        guard TimeZone(identifier: salesReportTimeZone) != nil else {
            throw ValidationError("--sales-report-timezone: not a time zone: \(salesReportTimeZone)")
        }
        options.salesReportTimeZone = salesReportTimeZone
        guard !expectProceeds || appleTruth != nil else {
            throw ValidationError("--expect-proceeds needs --apple-truth: the proceeds come from the sales reports served from it")
        }
        options.expectProceeds = expectProceeds
        options.conninfo = conninfo
        options.playUsers = playUsers
        options.playPackage = playPackage
        options.playTruthPath = playTruth
        options.realNow = now
        let started = Date()
        do {
            let summary = try Seeder.run(options) { FileHandle.standardError.write(Data("iap-sim: \($0)\n".utf8)) }
            var lines = ["iap-sim: seeded \(summary.users) users in schema \(schema), as of \(UTC.timestamp(options.asOf)) (\(String(format: "%.1f", Date().timeIntervalSince(started))) s)"]
            lines.append("  rows: " + summary.rows.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            lines.append("  expected: " + summary.expected.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") + " refunds=\(summary.refunds)"
                + " api-only refunds=\(summary.apiOnlyRefunds) purchases=\(summary.apiOnlyPurchases)")
            if options.appleTruthPath != nil {
                lines.append("  consumption requests: \(summary.consumptionRequests) (expired \(summary.consumptionExpired), "
                    + "granted \(summary.consumptionDelivered)); iap_consents=\(summary.consents) "
                    + "iap_consumption=\(summary.consumptionRows)")
            }
            if bundle.count > 1 {
                for app in bundle {
                    let c = summary.apps[app] ?? AppCounts()
                    lines.append("  app \(app): users=\(c.users) orders=\(c.orders) receipts=\(c.receipts) grants=\(c.grants) "
                        + "refunds=\(c.refunds) api-only purchases=\(c.apiOnlyPurchases) consumption requests=\(c.consumptionRequests); "
                        + "expected " + c.expected.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
                }
            }
            if playUsers > 0 {
                lines.append("  google play: \(summary.playPurchases) purchases, \(summary.playVoided) voided records, "
                    + "\(summary.playNotifications) notifications in \(playTruth ?? "-"); families: "
                    + summary.playFamilies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            }
            lines.append("  scenarios: " + summary.scenarios.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        } catch {
            FileHandle.standardError.write(Data("iap-sim: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
