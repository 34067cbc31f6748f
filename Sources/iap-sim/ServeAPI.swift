// `iap-sim serve`'s App Store Server API options, and `iap-sim keygen`.

import AppStoreSimulator
import ArgumentParser
import Foundation

struct APIOptions: ParsableArguments {
    @Option(name: .customLong("apple-truth"), help: ArgumentHelp(
        "Serve the App Store Server API from this truth file (written by `iap-sim seed --apple-truth`).",
        valueName: "file"))
    var appleTruth: String?

    @Option(name: .customLong("api-key"), help: ArgumentHelp("""
        The key that signs the bearer tokens: the `.p8` (PKCS#8 PEM P-256 private key, see `iap-sim keygen`) \
        or its PEM public key. Turns the Server API on. Default with --apple-truth: $IAP_PRIVATE_KEY_FILE.
        """, valueName: "file"))
    var apiKey: String?

    @Option(name: .customLong("api-key-id"), help: "The `kid` a token must carry. Default: $IAP_KEY_ID.")
    var apiKeyID: String?

    @Option(name: .customLong("api-issuer"), help: "The `iss` a token must carry. Default: $IAP_ISSUER_ID.")
    var apiIssuer: String?

    @Option(name: .customLong("api-bundle"), help: ArgumentHelp("""
        An app served, repeatable: a token's `bid` must be one of them (else 401), and every answer \
        shows only the token's app (another app's transaction: 404 4040010; its notifications: not \
        listed; rate limits counted per app and environment). Default: the first of $IAP_BUNDLE_IDS, \
        else com.example.game.
        """, valueName: "bundle-id"))
    var apiBundle: [String] = []

    @Option(name: .customLong("api-key-for"), help: ArgumentHelp("""
        A key of its own for one app served, repeatable: its tokens must be signed by this key (a .p8 \
        or a PEM public key, as --api-key) and carry --api-key-id-for's key id (default --api-key-id); \
        --api-key is then refused for it. Default: --api-key for every app.
        """, valueName: "bundle-id=file"))
    var apiKeyFor: [String] = []

    @Option(name: .customLong("api-key-id-for"), help: ArgumentHelp(
        "The `kid` the tokens of one app with --api-key-for must carry, repeatable. Default: --api-key-id.",
        valueName: "bundle-id=kid"))
    var apiKeyIDFor: [String] = []

    @Option(name: .customLong("refuse-app"), help: ArgumentHelp("""
        Apple refuses this app's key, repeatable: every token for it gets 401 (call log `401:refused`), \
        however good; the other apps are answered. The app must be one of --api-bundle.
        """, valueName: "bundle-id"))
    var refuseApp: [String] = []

    @Option(name: .customLong("stray-401"), help: ArgumentHelp("""
        Apple's occasional stray 401: the N-th Server API request (1-based; counting every request \
        that reaches the token check, whatever its endpoint, app or environment, since the start) gets \
        401 once although its token is good (call log `401:stray`); the next request with the same \
        token is answered. Default: never.
        """, valueName: "n"))
    var stray401: Int?

    @Option(name: .customLong("api-rate"), help: ArgumentHelp("""
        Production requests per second of one endpoint over a sliding second (0: no limit; the sandbox \
        gets a tenth, at least 1), repeatable. Endpoints: transaction_info, transaction_history, \
        refund_history, notification_history, order_lookup, consumption (Send Consumption Information). \
        Default: Apple's 50, 50, 10, 50, 10, 50.
        """, valueName: "endpoint=n"))
    var apiRate: [String] = []

    @Option(name: .customLong("consumption-log"), help: ArgumentHelp("""
        Append one JSON line per accepted Send Consumption Information answer, flushed per line: \
        {"receivedMs":…,"environment":"production","transactionId":"…","put":N,"body":{"customerConsented":…,\
        "deliveryStatus":…,"consumptionPercentage":…,"sampleContentProvided":…,"refundPreference":…}} \
        (put: the n-th accepted answer for that transaction; absent fields left out).
        """, valueName: "file"))
    var consumptionLog: String?

    @Option(help: ArgumentHelp("""
        Folder of the test PKI that signs the Server API's transactions (created when missing, the same as \
        `iap-sim seed --pki`); the job needs IAP_ROOT_CERTIFICATES=<folder>/root.pem. Default: a new PKI in \
        a temporary folder, named on stderr.
        """, valueName: "folder"))
    var pki: String?

    var enabled: Bool { apiKey != nil || appleTruth != nil }

    func validate() throws {
        for r in apiRate where SimAPIEndpoint.parseRate(r) == nil && Self.consumptionRate(r) == nil {
            throw ValidationError("--api-rate: '\(r)' is not ENDPOINT=N; endpoints: \(SimAPIEndpoint.allCases.map(\.rawValue).joined(separator: ", ")), consumption")
        }
        if let stray401, stray401 < 1 { throw ValidationError("--stray-401 must be 1 or more") }
        let bundles = servedBundles
        guard Set(bundles).count == bundles.count else { throw ValidationError("--api-bundle: an app is named twice") }
        for b in bundles where b.isEmpty || b.contains(where: { $0 == "," || $0 == "=" || $0.isWhitespace }) {
            throw ValidationError("--api-bundle: '\(b)' is not a bundle id")
        }
        for r in refuseApp where !bundles.contains(r) {
            throw ValidationError("--refuse-app \(r): not an app served (--api-bundle: \(bundles.joined(separator: ", ")))")
        }
        for (name, list) in [("--api-key-for", apiKeyFor), ("--api-key-id-for", apiKeyIDFor)] {
            var seen = Set<String>()
            for item in list {
                guard let (bundle, value) = Self.pair(item), !value.isEmpty else {
                    throw ValidationError("\(name): '\(item)' is not BUNDLE=VALUE")
                }
                guard bundles.contains(bundle) else {
                    throw ValidationError("\(name) \(bundle): not an app served (--api-bundle: \(bundles.joined(separator: ", ")))")
                }
                guard seen.insert(bundle).inserted else { throw ValidationError("\(name): \(bundle) is named twice") }
            }
        }
        let keyed = Set(apiKeyFor.compactMap { Self.pair($0)?.0 })
        for item in apiKeyIDFor {
            guard let bundle = Self.pair(item)?.0, keyed.contains(bundle) else {
                throw ValidationError("--api-key-id-for '\(item)': that app has no --api-key-for")
            }
        }
        guard enabled else { return }
        let env = ProcessInfo.processInfo.environment
        guard apiKey ?? env["IAP_PRIVATE_KEY_FILE"] != nil else { throw ValidationError("the Server API needs --api-key (or $IAP_PRIVATE_KEY_FILE)") }
        guard apiKeyID ?? env["IAP_KEY_ID"] != nil else { throw ValidationError("the Server API needs --api-key-id (or $IAP_KEY_ID)") }
        guard apiIssuer ?? env["IAP_ISSUER_ID"] != nil else { throw ValidationError("the Server API needs --api-issuer (or $IAP_ISSUER_ID)") }
    }

    /// The Server API's configuration, and where its root.pem is; nil when it is not served.
    func config() throws -> (ServerAPIConfig, rootPEM: String)? {
        guard enabled else { return nil }
        let env = ProcessInfo.processInfo.environment
        let keyPath = apiKey ?? env["IAP_PRIVATE_KEY_FILE"] ?? ""
        guard let data = FileManager.default.contents(atPath: keyPath) else {
            throw ValidationError("--api-key: cannot read \(keyPath)")
        }
        let publicKey = try APICredentials.publicKey(pem: String(decoding: data, as: UTF8.self))
        let keyID = apiKeyID ?? env["IAP_KEY_ID"] ?? ""
        let bundles = servedBundles
        let keyIDs = Dictionary(apiKeyIDFor.compactMap(Self.pair), uniquingKeysWith: { a, _ in a })
        var appKeys: [String: AppKey] = [:]
        for (bundle, path) in apiKeyFor.compactMap(Self.pair) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--api-key-for \(bundle): cannot read \(path)")
            }
            appKeys[bundle] = AppKey(keyID: keyIDs[bundle] ?? keyID,
                                     publicKey: try APICredentials.publicKey(pem: String(decoding: data, as: UTF8.self)))
        }
        let credentials = APICredentials(keyID: keyID, issuerID: apiIssuer ?? env["IAP_ISSUER_ID"] ?? "",
                                         bundleID: bundles[0], publicKey: publicKey,
                                         otherBundleIDs: Array(bundles.dropFirst()), appKeys: appKeys,
                                         refusedBundleIDs: Set(refuseApp))
        let truth = try appleTruth.map { try AppleTruth.load(path: $0) } ?? AppleTruth(rows: [])
        let folder = pki ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("iap-sim-pki-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let testPKI = try TestPKI.loadOrCreate(directory: folder)
        var rates: [SimAPIEndpoint: Int] = [:]
        var consumption: Int?
        for r in apiRate {
            if let rate = SimAPIEndpoint.parseRate(r) { rates[rate.0] = rate.1 }
            if let n = Self.consumptionRate(r) { consumption = n }
        }
        return (ServerAPIConfig(credentials: credentials, truth: truth, pki: testPKI, rates: rates,
                                consumptionRate: consumption, consumptionLogPath: consumptionLog, stray401: stray401),
                (folder as NSString).appendingPathComponent("root.pem"))
    }

    /// The apps served: --api-bundle, else the first of $IAP_BUNDLE_IDS, else com.example.game.
    var servedBundles: [String] {
        if !apiBundle.isEmpty { return apiBundle }
        let first = ProcessInfo.processInfo.environment["IAP_BUNDLE_IDS"]?.split(separator: ",").first
            .map { $0.trimmingCharacters(in: .whitespaces) }
        return [first ?? "com.example.game"]
    }

    /// `BUNDLE=VALUE` (split at the first `=`).
    static func pair(_ text: String) -> (String, String)? {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty else { return nil }
        return (parts[0], parts[1])
    }

    /// `consumption=N` (N ≥ 0) of --api-rate.
    static func consumptionRate(_ text: String) -> Int? {
        let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, parts[0] == "consumption", let n = Int(parts[1]), n >= 0 else { return nil }
        return n
    }
}

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a new App Store Server API key: a P-256 private key as PKCS#8 PEM, like App Store Connect's .p8.",
        discussion: """
        For tests and the demo: the job signs its bearer tokens with it (IAP_PRIVATE_KEY_FILE) and \
        `iap-sim serve --api-key` checks them with it. The file is created with mode 0600.
        """
    )

    @Option(help: ArgumentHelp("Where to write the key.", valueName: "file.p8"))
    var out: String

    @Flag(help: "Replace an existing file.")
    var force = false

    func run() throws {
        if FileManager.default.fileExists(atPath: out), !force {
            throw ValidationError("\(out) exists; --force replaces it")
        }
        let pem = APICredentials.newPrivateKeyPEM() + "\n"
        guard FileManager.default.createFile(atPath: out, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600])
        else {
            FileHandle.standardError.write(Data("iap-sim: cannot write \(out)\n".utf8))
            throw ExitCode(73)
        }
        FileHandle.standardError.write(Data("iap-sim: wrote a P-256 key (PKCS#8 PEM) to \(out)\n".utf8))
    }
}
