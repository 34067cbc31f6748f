import Foundation
import JobStore
import PlayStore
import StrictJSON

/// What the transport needs to reach Google Play: the service account's key
/// (`PLAY_SERVICE_ACCOUNT_FILE`, else `GOOGLE_APPLICATION_CREDENTIALS`), the packages
/// (`PLAY_PACKAGE_NAMES`), the job's own Pub/Sub subscription on Play's notification topic
/// (`PLAY_PUBSUB_SUBSCRIPTION`, optional), and where Google is: `PLAY_API_URL` (the Play Developer
/// API), `PLAY_PUBSUB_URL` (Pub/Sub) and `PLAY_TOKEN_URL` (where assertions are exchanged; default
/// the key file's `token_uri`). Only
/// https counts, with a verified certificate (libcurl's default); http only on loopback (tests, the
/// demo).
public struct PlaySettings: Sendable {
    /// The key (never printed) and its account.
    public let account: ServiceAccount
    /// The apps, in the order of `PLAY_PACKAGE_NAMES`.
    public let packages: [String]
    public let apiBaseURL: String
    public let tokenURL: String
    /// `projects/{project}/subscriptions/{id}`; nil: no notifications are pulled.
    public let subscription: String?
    public let pubsubBaseURL: String
    /// The access token, shared by every transport run of the process (with the Pub/Sub scope when
    /// a subscription is set).
    let tokens: GoogleTokens

    public static let defaultAPIURL = "https://androidpublisher.googleapis.com"
    public static let defaultPubSubURL = "https://pubsub.googleapis.com"

    /// The settings, from the variables' values (nil: not set). Play is off (nil) when neither
    /// `PLAY_SERVICE_ACCOUNT_FILE` nor `PLAY_PACKAGE_NAMES` is set (`GOOGLE_APPLICATION_CREDENTIALS`
    /// alone is some other tool's). A key file missing, unreadable, not a service account's or not
    /// RSA, a package name that is not one, a URL that is not https (http: loopback only): exit 78,
    /// one line naming the variable, never the key.
    public static func load(
        keyFile: String?, applicationCredentials: String?, packageNames: String?, apiURL: String?, tokenURL: String?,
        subscription: String? = nil, pubsubURL: String? = nil
    ) throws -> PlaySettings? {
        guard keyFile != nil || packageNames != nil else { return nil }
        let (variable, file): (String, String)
        if let keyFile {
            (variable, file) = ("PLAY_SERVICE_ACCOUNT_FILE", keyFile)
        } else if let applicationCredentials {
            (variable, file) = ("GOOGLE_APPLICATION_CREDENTIALS", applicationCredentials)
        } else {
            throw JobError(
                .configuration,
                "PLAY_PACKAGE_NAMES is set, but no service-account key: set PLAY_SERVICE_ACCOUNT_FILE to its JSON key file")
        }
        guard let packageNames else {
            throw JobError(.configuration, "\(variable) is set, but not PLAY_PACKAGE_NAMES (the Play apps to reconcile, comma separated)")
        }
        var packages: [String] = []
        for item in packageNames.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            guard PlayPaths.isPackageName(item) else {
                throw JobError(
                    .configuration, "PLAY_PACKAGE_NAMES: \"\(Self.shown(item))\" is not an Android package name (com.example.game)")
            }
            if !packages.contains(item) { packages.append(item) }
        }
        guard !packages.isEmpty else { throw JobError(.configuration, "PLAY_PACKAGE_NAMES names no package") }
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        } catch {
            throw JobError(
                .configuration,
                "\(variable) \(file) cannot be read (\((error as NSError).localizedFailureReason ?? "no such file or no permission")); "
                    + "it must be a Google Cloud service account's JSON key file")
        }
        let account: ServiceAccount
        do { account = try ServiceAccount(keyFile: bytes) } catch {
            throw JobError(.configuration, "\(variable) \(file): \(error.problem)")
        }
        let api = try checkedURL(apiURL ?? defaultAPIURL, variable: "PLAY_API_URL")
        let token = try checkedURL(tokenURL ?? account.tokenURI, variable: tokenURL == nil ? variable + " (token_uri)" : "PLAY_TOKEN_URL")
        if let subscription, !PlayPaths.isSubscription(subscription) {
            throw JobError(
                .configuration,
                "PLAY_PUBSUB_SUBSCRIPTION must be a subscription's full name, projects/PROJECT/subscriptions/ID: \(shown(subscription))")
        }
        let pubsub = try checkedURL(pubsubURL ?? defaultPubSubURL, variable: "PLAY_PUBSUB_URL")
        let scopes = [GoogleOAuth.androidPublisherScope] + (subscription == nil ? [] : [GoogleOAuth.pubsubScope])
        return PlaySettings(
            account: account, packages: packages, apiBaseURL: api, tokenURL: token, subscription: subscription, pubsubBaseURL: pubsub,
            tokens: GoogleTokens(account: account, tokenURL: token, scopes: scopes))
    }

    /// `url` without a trailing slash when it is https, or http to a loopback host.
    static func checkedURL(_ url: String, variable: String) throws -> String {
        var trimmed = url
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        if trimmed.hasPrefix("https://"), trimmed.count > 8 { return trimmed }
        if trimmed.hasPrefix("http://") {
            let rest = trimmed.dropFirst(7)
            let host = rest.hasPrefix("[") ? String(rest.prefix { $0 != "]" }) + "]" : String(rest.prefix { $0 != ":" && $0 != "/" })
            if ["127.0.0.1", "localhost", "[::1]"].contains(host) { return trimmed }
        }
        throw JobError(.configuration, "\(variable) must be an https URL (http only on loopback, for tests): \(shown(url))")
    }

    static func shown(_ text: String) -> String { Sanitized.text(text.utf8, limit: 80) }
}
