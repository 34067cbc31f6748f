// `iap-sim serve`'s Google Play options (the token endpoint, the Play Developer API and Pub/Sub's
// pull subscription beside Apple's routes), the bridge from the server's routes to `PlayService`,
// and `iap-sim play-key`.

import AppStoreSimulator
import ArgumentParser
import Foundation
import PlaySimulator
import PlayStore

struct PlayOptions: ParsableArguments {
    @Option(
        name: .customLong("play-service-account"),
        help: ArgumentHelp(
            """
            Serve Google Play: POST /token (the service account's RS256 assertions, as Google's OAuth \
            endpoint checks them) and, under /androidpublisher/v3/applications/{package}/, \
            purchases/productsv2/tokens/{token}, orders:batchGet, orders/{orderId}:reviewrefund and \
            purchases/voidedpurchases, answered from --play-truth. The service-account JSON key file the \
            job uses (see `iap-sim play-key`): its public key, client_email and token_uri (the assertion's \
            aud).
            """, valueName: "file"))
    var playServiceAccount: String?

    @Option(
        name: .customLong("play-truth"),
        help: ArgumentHelp(
            "The Play purchases, voided records and notifications answered (PlayTruth TSV; default: none).",
            valueName: "file"))
    var playTruth: String?

    @Option(
        name: .customLong("play-token-lifetime"),
        help: ArgumentHelp(
            "expires_in of an access token, 60-86400 seconds.", valueName: "seconds"))
    var playTokenLifetime: Int64 = 3600

    @Option(
        name: .customLong("play-quota-per-minute"),
        help: ArgumentHelp(
            """
            Calls per quota bucket (One-time Purchases, Orders) in any 60 s window; the next gets 429 \
            RESOURCE_EXHAUSTED. Voided purchases: 30 calls per package in any 30 s, 6,000 a day.
            """, valueName: "n"))
    var playQuotaPerMinute = 3000

    @Option(
        name: .customLong("play-subscription"),
        help: ArgumentHelp(
            """
            Serve Pub/Sub's pull and acknowledge at /v1/{subscription}:pull and :acknowledge for this \
            subscription (projects/{project}/subscriptions/{id}), delivering --play-truth's notifications \
            from their publish times; the bearer token needs the pubsub scope. Not given: those paths are 404.
            """, valueName: "name"))
    var playSubscription: String?

    @Option(
        name: .customLong("play-ack-deadline"),
        help: ArgumentHelp(
            "How long a pulled message stays leased before Pub/Sub delivers it again, 10-600 seconds.",
            valueName: "seconds"))
    var playAckDeadline = 10

    @Flag(
        name: .customLong("play-refuse-assertions"),
        help: """
            Refuse every assertion 400 invalid_grant (the key was deleted in the Cloud console).
            """)
    var playRefuseAssertions = false

    @Flag(
        name: .customLong("play-string-enums"),
        help: """
            Send voidedSource and voidedReason as strings ("0"), as the Voided Purchases guide's sample \
            does; numbers otherwise, as the reference does.
            """)
    var playStringEnums = false

    func validate() throws {
        guard (60...86_400).contains(playTokenLifetime) else {
            throw ValidationError("--play-token-lifetime must be 60-86400 seconds")
        }
        guard playQuotaPerMinute >= 1 else { throw ValidationError("--play-quota-per-minute must be 1 or more") }
        guard (10...600).contains(playAckDeadline) else {
            throw ValidationError("--play-ack-deadline must be 10-600 seconds")
        }
        if let playSubscription, !PlaySimulatorConfig.isSubscriptionName(playSubscription) {
            throw ValidationError("--play-subscription must be projects/{project}/subscriptions/{id}")
        }
        if playServiceAccount == nil,
            playTruth != nil || playRefuseAssertions || playStringEnums || playSubscription != nil
        {
            throw ValidationError("the Play options need --play-service-account")
        }
    }

    /// Google Play's simulator; nil when --play-service-account is not given.
    func service() throws -> PlayService? {
        guard let path = playServiceAccount else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("--play-service-account: cannot read \(path)")
        }
        var config: PlaySimulatorConfig
        do {
            config = try PlaySimulatorConfig(keyFile: [UInt8](data))
        } catch {
            throw ValidationError("--play-service-account \(path): \(error)")
        }
        if let playTruth {
            do {
                config.truth = try PlayTruth.read(path: playTruth)
            } catch {
                throw ValidationError("--play-truth: \(error)")
            }
        }
        config.tokenLifetimeSeconds = playTokenLifetime
        config.quotaPerMinute = playQuotaPerMinute
        config.refuseAssertions = playRefuseAssertions
        config.stringEnums = playStringEnums
        config.subscription = playSubscription
        config.ackDeadlineSeconds = playAckDeadline
        config.recordCalls = false
        return PlayService(config: config)
    }
}

/// The server's extra routes answered by Google Play's simulator.
enum PlayBridge {
    static func routes(_ service: PlayService) -> @Sendable (SimRouteRequest) -> SimRouteAnswer? {
        { r in
            service.answer(
                PlayRequest(method: r.method, path: r.path, query: r.query, headers: r.headers, body: r.body)
            )
            .map { SimRouteAnswer(status: $0.status, contentType: $0.contentType, body: $0.body, headers: $0.headers) }
        }
    }
}

struct PlayKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play-key",
        abstract: "Write a new Google service-account JSON key file (RSA-2048, PKCS#8 PEM), like the Cloud console's.",
        discussion: """
            For tests and the demo: the job signs its assertions with it and `iap-sim serve \
            --play-service-account` checks them with it. token_uri is Google's; the file is created with \
            mode 0600 and the key is never printed.
            """
    )

    @Option(help: ArgumentHelp("Where to write the key file.", valueName: "file.json"))
    var out: String

    @Option(help: ArgumentHelp("The account's client_email.", valueName: "address"))
    var email = PlayKeyFile.defaultEmail

    @Flag(help: "Replace an existing file.")
    var force = false

    func validate() throws {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[1].contains("."), !email.contains(where: \.isWhitespace) else {
            throw ValidationError("--email '\(email)' is not an e-mail address")
        }
    }

    func run() throws {
        if FileManager.default.fileExists(atPath: out), !force {
            throw ValidationError("\(out) exists; --force replaces it")
        }
        let file = try PlayKeyFile.new(email: email)
        try? FileManager.default.removeItem(atPath: out)
        guard FileManager.default.createFile(atPath: out, contents: Data(file), attributes: [.posixPermissions: 0o600])
        else {
            FileHandle.standardError.write(Data("iap-sim: cannot write \(out)\n".utf8))
            throw ExitCode(73)
        }
        FileHandle.standardError.write(Data("iap-sim: wrote a service-account key file for \(email) to \(out)\n".utf8))
    }
}
