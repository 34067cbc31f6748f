import AppStore
import Foundation
import JobStore
import Reconciliation
import StoreIO
import TransportCore

/// Everything a run needs, gathered from options and environment by the command.
public struct JobSettings: Sendable {
    /// JobStore's slice: the job's database and schema.
    public var database: DatabaseSettings
    /// StoreIO's slice: how the transport reaches Apple.
    public var transport = TransportSettings()
    public var asOf: EpochMillis
    public var windowDays = 30
    public var refundWindowDays = 90
    public var sweepLimit = 1000
    public var sourceSchema = "public"
    public var out = "reports"
    public var sweepIntervalHours = 20
    /// `$IAP_SHARED_SECRET`. Never printed: `description` of this struct leaves it out.
    public var sharedSecret: String?
    public var bundleIDs: Set<String> = []
    /// `$SOURCE_DATABASE_URL` when set and not empty (may hold a password: never printed): the
    /// database the four source relations are read from, only read (a hot standby will do). The
    /// night copies them into the job's database first (`SourceCopy`); lookup and respond read
    /// them there directly. nil: they are read from the job's own database.
    public var sourceDatabaseURL: String?
    /// The tables of keys the night's copy of a source database counted there, at the source's
    /// indexes (`SourceCopy.duplicatedKeys`, `SourceCopy.namedTwice`): the decide stage reads them
    /// from the copy's schema instead of counting the copy again. Set by the copy step.
    package var sourceKeysCounted: Set<String> = []
    /// Contract §1, "Two stores in one shop": the schema holding the four relations whole (the
    /// source schema, or the night's copy of it) when one of them has the `store` column; then
    /// `sourceSchema` names the App Store's views over them (`StoreViews`). nil: one store.
    package var storeRows: String?
    /// The relations of `storeRows` that have the `store` column.
    package var storeColumns: Set<SourceRelation> = []
    public var progress = true
    /// `--lock-wait-seconds`: how long a run waits for another run's lock before exit 75.
    public var lockWaitSeconds = 5
    /// When a night is held instead of published (`run`'s `--hold-*` and `--first-night`; the
    /// contract's "Held nights").
    public var hold = HoldThresholds()
    /// A deliberate fault for the tests (hidden option): the conservation tally of this source
    /// relation loses one row, so the check must fail with exit 70.
    public var faultDropTallyRow: String?
    /// For the tests (hidden option): the grants' tally buckets counted by the tally's own SQL
    /// (`Conservation.bucketSQL`) instead of by the decide stage's rules, so that a test can
    /// compare the two independent counts on the same data.
    public var tallyGrantsBySQL = false
    /// A deliberate pause for the tests (hidden option): with SOURCE_DATABASE_URL, the copy's
    /// Nth attempt holds its snapshot on the source this many milliseconds after copying the first
    /// relation, idle in its transaction, so that a test can provoke a recovery conflict.
    public var faultHoldSourceSnapshotMs: [Int] = []
    /// Verifies StoreKit 2 uploads against the pinned roots: Apple Root CA - G3, embedded, unless
    /// `$IAP_ROOT_CERTIFICATES` names others (`useRootCertificates`).
    public var signedData = SignedDataVerifier(roots: [SignedDataVerifier.appleRootCAG3])
    /// Where the roots came from, for the line of exit 78 when none of them verifies an upload.
    public var rootCertificatesSource = "Apple Root CA - G3, embedded"
    /// `$IAP_ROOT_CERTIFICATES` as given; read by the run (`useRootCertificates`), so a bad file is
    /// an exit 78 with its line like any other configuration error.
    public var rootCertificateFiles: String?
    /// `--receipts` / `$IAP_RECEIPTS`: where an app receipt is verified (`ReceiptsMode`).
    public var receipts = ReceiptsMode.auto
    /// Verifies app receipts on our own machine against the pinned root: Apple Root CA, embedded,
    /// unless `$IAP_RECEIPT_ROOT_CERTIFICATES` names others (`useReceiptRootCertificates`).
    public var appReceipts = AppReceiptVerifier()
    /// Where the receipts' roots came from, for the line of exit 78.
    public var receiptRootsSource = "Apple Root CA, embedded"
    /// `$IAP_RECEIPT_ROOT_CERTIFICATES` as given; read by the night, so a bad file is an exit 78.
    public var receiptRootCertificateFiles: String?
    /// `IAP_BUNDLE_IDS` in the order given: the apps whose sweeps the night runs, each with its
    /// own token (`bid`), positions and budgets; `lookup` and `respond` ask them in this order.
    public var bundleIDList: [String] = []
    /// `IAP_APP_KEYS` as given: `BUNDLE=KEY_ID:FILE` items, comma separated, for the apps with an
    /// In-App Purchase key of their own (read by `configureServerAPI`).
    public var apiAppKeys: String?
    /// `IAP_ISSUER_ID`, `IAP_KEY_ID`, `IAP_PRIVATE_KEY_FILE` as given; the run reads the key
    /// (`configureServerAPI`). All three set: the App Store Server API is used.
    public var apiIssuerID: String?
    public var apiKeyID: String?
    public var apiPrivateKeyFile: String?
    /// `IAP_API_URL_PRODUCTION`, `IAP_API_URL_SANDBOX` (nil: Apple's hosts).
    public var apiProductionURL: String?
    public var apiSandboxURL: String?
    /// `--api-rate ENDPOINT=N`: the job's own budget per endpoint (requests per second).
    public var apiRates: [ServerAPIEndpoint: Double] = [:]
    /// `iap_products` has the optional `price` and `currency` columns (found by the source check).
    public package(set) var listPriceColumns = false
    /// `--metrics-file`: the node_exporter textfile written on every exit (nil: none).
    public var metricsFile: String?
    /// `--report-timezone` (IANA name) and `--report-language` (en, zh): the workbook and the HTML page.
    public var reportTimeZone = "UTC"
    public var reportLanguage = "en"
    /// `--no-api-sweeps` turns the nightly Server API sweeps off (they run when the key is set).
    public var apiSweeps = true
    /// `--history-limit`: customers whose transaction history one night asks for, at most.
    public var historyLimit = 20_000
    /// `--account-token-namespace`: order ids are not UUIDs; the app sets `appAccountToken` to the
    /// name-based UUID (version 5) of the order id in this namespace.
    public var accountTokenNamespace: String?
    /// `ASC_ISSUER_ID`, `ASC_KEY_ID`, `ASC_PRIVATE_KEY_FILE`, `ASC_VENDOR_NUMBER` as given: an App
    /// Store Connect API team key (not the In-App Purchase key) and the vendor number whose daily
    /// Summary Sales Report the night downloads. All four set: the reports are
    /// downloaded; none: not; some: exit 78 (`configureAppStoreConnect`).
    public var ascIssuerID: String?
    public var ascKeyID: String?
    public var ascPrivateKeyFile: String?
    public var ascVendorNumber: String?
    /// `ASC_API_URL` (nil: Apple's host).
    public var ascAPIURL: String?
    /// `--sales-report-timezone` (IANA name): the zone of a sales report's day (Apple's older FAQ:
    /// Pacific time for the Americas and worldwide; docs/contract.md names the conflict).
    public var salesReportTimeZone = "America/Los_Angeles"

    /// Every setting's default, stated once: the command's options take theirs from here.
    public static let defaults = JobSettings(asOf: 0, jobSchema: .standard)

    public init(asOf: EpochMillis, jobSchema: JobSchema) {
        self.asOf = asOf
        self.database = DatabaseSettings(jobSchema: jobSchema)
    }

    // The slices' settings under the names the night's code has always read.
    public var jobSchema: JobSchema {
        get { database.jobSchema }
        set { database.jobSchema = newValue }
    }
    public var databaseURL: String? {
        get { database.databaseURL }
        set { database.databaseURL = newValue }
    }
    public var concurrency: Int {
        get { transport.concurrency }
        set { transport.concurrency = newValue }
    }
    public var timeoutMs: Int {
        get { transport.timeoutMs }
        set { transport.timeoutMs = newValue }
    }
    public var maxAttempts: Int {
        get { transport.maxAttempts }
        set { transport.maxAttempts = newValue }
    }
    public var retryBaseMs: Int {
        get { transport.retryBaseMs }
        set { transport.retryBaseMs = newValue }
    }
    public var retryDelayMinutes: Int {
        get { transport.retryDelayMinutes }
        set { transport.retryDelayMinutes = newValue }
    }
    public var productionURL: String {
        get { transport.productionURL }
        set { transport.productionURL = newValue }
    }
    public var sandboxURL: String {
        get { transport.sandboxURL }
        set { transport.sandboxURL = newValue }
    }
    public internal(set) var serverAPI: ServerAPISettings? {
        get { transport.serverAPI }
        set { transport.serverAPI = newValue }
    }
    public internal(set) var appStoreConnect: AppStoreConnectSettings? {
        get { transport.appStoreConnect }
        set { transport.appStoreConnect = newValue }
    }
    /// Set by the night once the Server API is configured.
    public package(set) var nightApps: NightApps? {
        get { transport.nightApps }
        set { transport.nightApps = newValue }
    }

    /// The night's parameters as the rules take them, and its windows (one formula:
    /// `DecisionSettings.windowStart`).
    public var decisionSettings: DecisionSettings {
        DecisionSettings(asOf: asOf, windowDays: windowDays, refundWindowDays: refundWindowDays)
    }

    /// The window's first instant (`DecisionSettings.windowStart`).
    package var windowStart: EpochMillis { decisionSettings.windowStart }
    /// The refund window's first instant.
    package var refundWindowStart: EpochMillis { decisionSettings.refundWindowStart }

    /// `--play-voided-alert-days`: a package whose voided purchases position is older than this
    /// many days is warned about (Google lists 30 days back).
    public var playVoidedAlertDays = 20

    /// What a Play purchase's `obfuscatedExternalAccountId` holds (`--play-account-id`).
    public enum PlayAccountID: String, Sendable, CaseIterable {
        /// Our order id, or the lowercase hex SHA-256 of it: the purchase's order.
        case order
        /// Our user id, or the lowercase hex SHA-256 of it: the purchase's user.
        case user
    }
    /// `--play-account-id`.
    public var playAccountID = PlayAccountID.order

    /// The `PLAY_*` variables (and `GOOGLE_APPLICATION_CREDENTIALS`) as the environment gave them,
    /// not empty; read by `configurePlay`.
    public var playVariables: [String: String] = [:]

    /// Google Play's settings (`PlaySettings.load`) from `playVariables`: nil (no Play) when neither
    /// `PLAY_SERVICE_ACCOUNT_FILE` nor `PLAY_PACKAGE_NAMES` is set; a bad one is exit 78 naming it.
    package mutating func configurePlay() throws {
        let v = playVariables
        transport.play = try PlaySettings.load(
            keyFile: v["PLAY_SERVICE_ACCOUNT_FILE"], applicationCredentials: v["GOOGLE_APPLICATION_CREDENTIALS"],
            packageNames: v["PLAY_PACKAGE_NAMES"], apiURL: v["PLAY_API_URL"], tokenURL: v["PLAY_TOKEN_URL"],
            subscription: v["PLAY_PUBSUB_SUBSCRIPTION"], pubsubURL: v["PLAY_PUBSUB_URL"])
    }

    /// The names `playVariables` holds.
    public static let playVariableNames = [
        "PLAY_SERVICE_ACCOUNT_FILE", "GOOGLE_APPLICATION_CREDENTIALS", "PLAY_PACKAGE_NAMES", "PLAY_API_URL", "PLAY_TOKEN_URL",
        "PLAY_PUBSUB_SUBSCRIPTION", "PLAY_PUBSUB_URL",
    ]

    /// Reads the `.p8` key when `IAP_ISSUER_ID`, `IAP_KEY_ID` and `IAP_PRIVATE_KEY_FILE` are set.
    /// Some but not all of them, a key file that cannot be read or is not a P-256 key, or no
    /// `IAP_BUNDLE_IDS`: exit 78 with one line that names the variable, never the key.
    package mutating func configureServerAPI() throws {
        let given = [("IAP_ISSUER_ID", apiIssuerID), ("IAP_KEY_ID", apiKeyID), ("IAP_PRIVATE_KEY_FILE", apiPrivateKeyFile)]
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == 3 { return }
        guard missing.isEmpty, let issuer = apiIssuerID, let keyID = apiKeyID, let file = apiPrivateKeyFile else {
            throw JobError(
                .configuration,
                "the App Store Server API needs IAP_ISSUER_ID, IAP_KEY_ID and "
                    + "IAP_PRIVATE_KEY_FILE together; missing: \(missing.joined(separator: ", "))")
        }
        guard let bundle = bundleIDList.first else {
            throw JobError(.configuration, "the App Store Server API needs IAP_BUNDLE_IDS (the apps whose sweeps run)")
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw JobError(
                .configuration,
                "IAP_PRIVATE_KEY_FILE \(file) cannot be read (\(Self.reason(error))); "
                    + "it must be the .p8 file of an In-App Purchase key")
        }
        let jwt: AppStoreJWT
        do {
            jwt = try AppStoreJWT(privateKeyPEM: pem, keyID: keyID, issuerID: issuer, bundleID: bundle)
        } catch {
            throw JobError(.configuration, "IAP_PRIVATE_KEY_FILE \(file): \(error)")
        }
        var api = ServerAPISettings(jwt: jwt)
        if let list = apiAppKeys { api.appKeys = try Self.appKeys(list, issuer: issuer, apps: bundleIDList) }
        if let url = apiProductionURL { api.productionURL = url }
        if let url = apiSandboxURL { api.sandboxURL = url }
        api.rates = apiRates
        serverAPI = api
    }

    /// The variables of the App Store Connect API's team key, in the order a line names them.
    static let ascVariables = ["ASC_ISSUER_ID", "ASC_KEY_ID", "ASC_PRIVATE_KEY_FILE", "ASC_VENDOR_NUMBER"]

    /// Reads the team key when `ASC_ISSUER_ID`, `ASC_KEY_ID`, `ASC_PRIVATE_KEY_FILE` and
    /// `ASC_VENDOR_NUMBER` are set (independently of the In-App Purchase key). Some but not all of
    /// them, a key file that cannot be read or is not a P-256 key, or a vendor number that is not
    /// digits: exit 78 with one line naming the variable, never the key.
    package mutating func configureAppStoreConnect() throws {
        let given = zip(Self.ascVariables, [ascIssuerID, ascKeyID, ascPrivateKeyFile, ascVendorNumber])
        let missing = given.filter { $0.1 == nil }.map(\.0)
        if missing.count == Self.ascVariables.count { return }
        guard missing.isEmpty, let issuer = ascIssuerID, let keyID = ascKeyID, let file = ascPrivateKeyFile,
            let vendor = ascVendorNumber
        else {
            throw JobError(
                .configuration,
                "Apple's sales reports need ASC_ISSUER_ID, ASC_KEY_ID, ASC_PRIVATE_KEY_FILE and "
                    + "ASC_VENDOR_NUMBER together (an App Store Connect API team key); missing: \(missing.joined(separator: ", "))")
        }
        guard !vendor.isEmpty, vendor.utf8.count <= 20, vendor.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw JobError(
                .configuration,
                "ASC_VENDOR_NUMBER must be the vendor number's digits (App Store Connect, "
                    + "Payments and Financial Reports)")
        }
        let pem: String
        do {
            pem = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw JobError(
                .configuration,
                "ASC_PRIVATE_KEY_FILE \(file) cannot be read (\(Self.reason(error))); "
                    + "it must be the .p8 file of an App Store Connect API team key")
        }
        let key: AppStoreJWT
        do {
            key = try AppStoreJWT.teamKey(privateKeyPEM: pem, keyID: keyID, issuerID: issuer)
        } catch {
            throw JobError(.configuration, "ASC_PRIVATE_KEY_FILE \(file): \(error)")
        }
        var connect = AppStoreConnectSettings(teamKey: key, vendorNumber: vendor)
        if let url = ascAPIURL { connect.baseURL = url }
        appStoreConnect = connect
    }

    /// `IAP_APP_KEYS`: `BUNDLE=KEY_ID:FILE` items, comma separated (spaces around items ignored),
    /// each an In-App Purchase key of the team (`IAP_ISSUER_ID`) for one app of IAP_BUNDLE_IDS. A
    /// malformed item, an app not in IAP_BUNDLE_IDS, an app named twice or a key that cannot be
    /// read: exit 78 naming the item, never the key.
    static func appKeys(_ list: String, issuer: String, apps: [String]) throws -> [String: AppStoreJWT] {
        var keys: [String: AppStoreJWT] = [:]
        for item in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            guard let eq = item.firstIndex(of: "="), let colon = item[eq...].firstIndex(of: ":") else {
                throw JobError(.configuration, "IAP_APP_KEYS: \"\(item)\" is not BUNDLE=KEY_ID:FILE")
            }
            let app = String(item[..<eq]), keyID = String(item[item.index(after: eq)..<colon])
            let file = String(item[item.index(after: colon)...])
            guard apps.contains(app) else {
                throw JobError(.configuration, "IAP_APP_KEYS names \(app), which is not in IAP_BUNDLE_IDS")
            }
            guard keys[app] == nil else { throw JobError(.configuration, "IAP_APP_KEYS names \(app) twice") }
            guard !keyID.isEmpty, !file.isEmpty else {
                throw JobError(.configuration, "IAP_APP_KEYS: \"\(item)\" is not BUNDLE=KEY_ID:FILE")
            }
            let pem: String
            do { pem = try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw JobError(
                    .configuration,
                    "IAP_APP_KEYS: the key file of \(app), \(file), cannot be read (\(reason(error))); "
                        + "it must be the .p8 file of an In-App Purchase key")
            }
            do { keys[app] = try AppStoreJWT(privateKeyPEM: pem, keyID: keyID, issuerID: issuer, bundleID: app) } catch {
                throw JobError(.configuration, "IAP_APP_KEYS: the key file of \(app), \(file): \(error)")
            }
        }
        return keys
    }

    /// The operating system's words for a file error, without the file's content.
    static func reason(_ error: Error) -> String {
        let e = error as NSError
        if let posix = e.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return e.code == NSFileReadNoSuchFileError ? "No such file or directory" : "unreadable"
    }

    /// `$IAP_ROOT_CERTIFICATES`: a comma list of PEM files whose certificates replace the pinned
    /// Apple root (tests, the demo, a future Apple root). A file that cannot be read or holds no
    /// certificate is a configuration error (exit 78) naming the file.
    package mutating func useRootCertificates(pemFiles list: String) throws {
        let roots = try Result { try SignedDataVerifier.roots(fromPEMFiles: list) }.mapError {
            JobError(.configuration, "\($0)")
        }.get()
        guard !roots.isEmpty else { throw JobError(.configuration, "IAP_ROOT_CERTIFICATES names no certificate") }
        signedData = SignedDataVerifier(roots: roots)
        rootCertificatesSource = "IAP_ROOT_CERTIFICATES=\(list)"
    }
}

/// Where the night verifies app receipts (the base64 PKCS#7 receipts of StoreKit 1), contract
/// "App receipts on our own machine".
public enum ReceiptsMode: String, Sendable, CaseIterable {
    /// On our machine only: nothing goes to verifyReceipt, not even the refund sweep; what cannot
    /// be settled offline stays unresolved with its reason.
    case offline
    /// Every receipt asked of verifyReceipt, as before the offline verifier.
    case verifyReceipt = "verify-receipt"
    /// On our machine first; verifyReceipt for what offline cannot settle or cannot know (the
    /// default).
    case auto
}

extension JobSettings {
    /// `$IAP_RECEIPT_ROOT_CERTIFICATES`: a comma list of PEM (or DER) files whose certificates
    /// replace the pinned Apple Root CA for app receipts (tests, the demo). A file that cannot be
    /// read or holds no certificate is a configuration error (exit 78) naming the file.
    package mutating func useReceiptRootCertificates(pemFiles list: String) throws {
        let variable = "IAP_RECEIPT_ROOT_CERTIFICATES"
        let roots = try Result { try SignedDataVerifier.roots(fromPEMFiles: list, variable: variable) }
            .mapError { JobError(.configuration, "\($0)") }.get()
        guard !roots.isEmpty else { throw JobError(.configuration, "\(variable) names no certificate") }
        appReceipts = AppReceiptVerifier(roots: roots)
        receiptRootsSource = "\(variable)=\(list)"
    }
}

extension JobSettings: CustomStringConvertible {
    public var description: String {
        "JobSettings(asOf: \(UTC.timestamp(asOf)), windowDays: \(windowDays), concurrency: \(concurrency), "
            + "sharedSecret: \(sharedSecret == nil ? "unset" : "set"))"
    }
}
