// Google Play's settings: when Play is on, and every way a key file or a variable can
// be wrong, each an exit 78 naming the variable and never the key.

import Foundation
import Testing
import _CryptoExtras

@testable import JobStore
@testable import PlayStore
@testable import StoreIO

@Suite("Google Play's settings")
struct PlaySettingsTests {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    /// A key file in a fresh folder; its path.
    static func keyFile(_ text: String? = nil) throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("play-settings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let pem = key.pkcs8PEMRepresentation.replacingOccurrences(of: "\n", with: "\\n")
        let json = text ?? """
            {"type":"service_account","project_id":"p","private_key_id":"k1","private_key":"\(pem)",
             "client_email":"night@p.iam.gserviceaccount.com","token_uri":"https://oauth2.googleapis.com/token"}
            """
        let path = dir.appendingPathComponent("key.json").path
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func load(
        key: String? = nil, adc: String? = nil, packages: String? = nil, api: String? = nil, token: String? = nil,
        subscription: String? = nil, pubsub: String? = nil
    ) throws -> PlaySettings? {
        try PlaySettings.load(
            keyFile: key, applicationCredentials: adc, packageNames: packages, apiURL: api, tokenURL: token,
            subscription: subscription, pubsubURL: pubsub)
    }

    /// The exit-78 line of `body`, or nil when it did not fail so.
    static func line(_ body: () throws -> PlaySettings?) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as JobError {
            #expect(error.code == .configuration)
            for secret in key.pkcs8PEMRepresentation.split(separator: "\n").dropFirst().prefix(3) {
                #expect(!error.message.contains(secret.prefix(12)), "the key in: \(error.message)")
            }
            return error.message
        } catch {
            Issue.record("not a JobError: \(error)")
            return nil
        }
    }

    @Test("Play is on with a key file and packages; off with neither (GOOGLE_APPLICATION_CREDENTIALS alone is another tool's)")
    func onAndOff() throws {
        let file = try Self.keyFile()
        #expect(try Self.load() == nil)
        #expect(try Self.load(adc: file) == nil)
        let play = try #require(try Self.load(key: file, packages: " com.example.game, com.example.other ,com.example.game"))
        #expect(play.packages == ["com.example.game", "com.example.other"])
        #expect(play.apiBaseURL == PlaySettings.defaultAPIURL && play.tokenURL == "https://oauth2.googleapis.com/token")
        #expect(play.account.clientEmail == "night@p.iam.gserviceaccount.com")
        // GOOGLE_APPLICATION_CREDENTIALS names the key when PLAY_SERVICE_ACCOUNT_FILE does not.
        #expect(try Self.load(adc: file, packages: "com.example.game")?.account.keyID == "k1")
        // Test URLs: http on loopback only.
        let local = try Self.load(key: file, packages: "com.example.game", api: "http://127.0.0.1:8080/", token: "http://localhost:9/token")
        #expect(local?.apiBaseURL == "http://127.0.0.1:8080" && local?.tokenURL == "http://localhost:9/token")
        // Without a subscription the token asks for the Play scope alone; with one, Pub/Sub's too.
        #expect(local?.subscription == nil && local?.tokens.scopes == [GoogleOAuth.androidPublisherScope])
        let pulling = try Self.load(key: file, packages: "com.example.game", subscription: "projects/my-project/subscriptions/play-rtdn")
        #expect(pulling?.subscription == "projects/my-project/subscriptions/play-rtdn")
        #expect(pulling?.pubsubBaseURL == PlaySettings.defaultPubSubURL)
        #expect(pulling?.tokens.scopes == [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope])
    }

    @Test("each wrong setting: exit 78, one line naming the variable, never the key")
    func wrongSettings() throws {
        let file = try Self.keyFile()
        let cases: [(String, () throws -> PlaySettings?, [String])] = [
            ("packages without a key", { try Self.load(packages: "com.example.game") }, ["PLAY_SERVICE_ACCOUNT_FILE"]),
            ("a key without packages", { try Self.load(key: file) }, ["PLAY_PACKAGE_NAMES"]),
            ("an empty package list", { try Self.load(key: file, packages: " , ") }, ["PLAY_PACKAGE_NAMES"]),
            ("a package that is not one", { try Self.load(key: file, packages: "com.example.game,../etc") }, ["PLAY_PACKAGE_NAMES", "../etc"]),
            ("a missing key file", { try Self.load(key: "/nonexistent/key.json", packages: "com.example.game") },
             ["PLAY_SERVICE_ACCOUNT_FILE", "/nonexistent/key.json"]),
            ("a folder as the key file", { try Self.load(key: "/tmp", packages: "com.example.game") }, ["PLAY_SERVICE_ACCOUNT_FILE"]),
            ("a user credential", { try Self.load(key: try Self.keyFile(#"{"type":"authorized_user","client_id":"x"}"#), packages: "a.b") },
             ["PLAY_SERVICE_ACCOUNT_FILE", "service_account"]),
            ("garbage", { try Self.load(key: try Self.keyFile("\u{FF}\u{FE}garbage"), packages: "a.b") }, ["PLAY_SERVICE_ACCOUNT_FILE"]),
            ("via GOOGLE_APPLICATION_CREDENTIALS", { try Self.load(adc: "/nonexistent/adc.json", packages: "a.b") },
             ["GOOGLE_APPLICATION_CREDENTIALS"]),
            ("an http API URL off loopback", { try Self.load(key: file, packages: "a.b", api: "http://androidpublisher.googleapis.com") },
             ["PLAY_API_URL", "https"]),
            ("an http token URL off loopback", { try Self.load(key: file, packages: "a.b", token: "http://10.0.0.1/token") },
             ["PLAY_TOKEN_URL"]),
            ("a loopback look-alike", { try Self.load(key: file, packages: "a.b", api: "http://127.0.0.1.evil.com/") }, ["PLAY_API_URL"]),
            ("a subscription that is not a full name", { try Self.load(key: file, packages: "a.b", subscription: "play-rtdn") },
             ["PLAY_PUBSUB_SUBSCRIPTION", "projects/PROJECT/subscriptions/ID"]),
            ("a topic for a subscription",
             { try Self.load(key: file, packages: "a.b", subscription: "projects/my-project/topics/play") }, ["PLAY_PUBSUB_SUBSCRIPTION"]),
            ("an http Pub/Sub URL off loopback",
             { try Self.load(key: file, packages: "a.b", subscription: "projects/my-project/subscriptions/play", pubsub: "http://pubsub.googleapis.com") },
             ["PLAY_PUBSUB_URL"]),
        ]
        for (name, body, words) in cases {
            guard let line = Self.line(body) else {
                Issue.record("\(name): accepted")
                continue
            }
            for word in words { #expect(line.contains(word), "\(name): \(line)") }
        }
    }
}
