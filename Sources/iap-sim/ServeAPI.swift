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

    @Option(name: .customLong("api-bundle"), help: "The `bid` a token must carry; only this app's transactions are shown. Default: the first of $IAP_BUNDLE_IDS, else com.example.game.")
    var apiBundle: String?

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
        let bundle = apiBundle ?? env["IAP_BUNDLE_IDS"]?.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }
            ?? "com.example.game"
        let credentials = APICredentials(keyID: apiKeyID ?? env["IAP_KEY_ID"] ?? "", issuerID: apiIssuer ?? env["IAP_ISSUER_ID"] ?? "",
                                         bundleID: bundle, publicKey: publicKey)
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
                                consumptionRate: consumption, consumptionLogPath: consumptionLog),
                (folder as NSString).appendingPathComponent("root.pem"))
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
