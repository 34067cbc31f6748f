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
    public init(jwt: AppStoreJWT) { self.jwt = jwt }

    func baseURL(_ environment: AppStoreEnvironment) -> String {
        var url = environment == .production ? productionURL : sandboxURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// What the job needs to download Apple's sales reports from the App Store Connect API:
/// `ASC_ISSUER_ID`, `ASC_KEY_ID`, `ASC_PRIVATE_KEY_FILE` (a *team* key, not the In-App Purchase
/// key: either may be set without the other), `ASC_VENDOR_NUMBER` and `ASC_API_URL`.
public struct AppStoreConnectSettings: Sendable {
    /// `ASC_API_URL` (tests point it at the simulator).
    public var baseURL = "https://api.appstoreconnect.apple.com"
    /// Signs the bearer tokens (no `bid`); holds the `.p8` key (never printed).
    public var teamKey: AppStoreJWT
    /// `ASC_VENDOR_NUMBER`: `filter[vendorNumber]`.
    public var vendorNumber: String

    public init(teamKey: AppStoreJWT, vendorNumber: String) { (self.teamKey, self.vendorNumber) = (teamKey, vendorNumber) }

    var trimmedBaseURL: String {
        var url = baseURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}
