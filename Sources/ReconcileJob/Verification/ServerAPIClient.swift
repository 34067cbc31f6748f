import AppStore
import Foundation
import HTTP
import Reconciliation

/// What the job needs to call the App Store Server API (contract §3b), from `IAP_ISSUER_ID`,
/// `IAP_KEY_ID`, `IAP_PRIVATE_KEY_FILE` (its default app the first of `IAP_BUNDLE_IDS`; each
/// request names its own) and `IAP_APP_KEYS`; and, for the App Store Connect API's reports (a
/// later issue), a team key.
public struct ServerAPISettings: Sendable {
    public var productionURL = "https://api.storekit.apple.com"
    public var sandboxURL = "https://api.storekit-sandbox.apple.com"
    /// Requests per second per endpoint in production (`--api-rate`; the sandbox gets a tenth).
    public var rates: [ServerAPIEndpoint: Double] = [:]
    /// Signs the bearer tokens; holds the `.p8` key (never printed).
    public var jwt: AppStoreJWT
    /// `IAP_APP_KEYS`: the apps with an In-App Purchase key of their own (the others use `jwt`).
    public var appKeys: [String: AppStoreJWT] = [:]
    /// The App Store Connect API (sales and finance reports), and the team key that signs its
    /// tokens (nil: not configured).
    public var connectBaseURL = "https://api.appstoreconnect.apple.com"
    public var teamKey: AppStoreJWT?

    public init(jwt: AppStoreJWT) { self.jwt = jwt }

    func baseURL(_ environment: AppStoreEnvironment) -> String {
        var url = environment == .production ? productionURL : sandboxURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}
