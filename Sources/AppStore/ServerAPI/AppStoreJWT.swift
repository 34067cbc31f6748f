// The bearer token of every App Store Server API and App Store Connect request (contract §3b):
// an ES256 JWT signed with a key of App Store Connect: an In-App Purchase key (claims with a
// `bid`, the app's bundle id) or a team key (no `bid`). `BearerTokens` makes one per app and
// reuses it while it is valid, so a night signs a token every few minutes, not per request.

import Reconciliation

public struct AppStoreJWT: Sendable {
    /// Apple refuses a Server API token whose `exp` is more than 60 minutes after its `iat`, an
    /// App Store Connect one past 20 minutes; the job's live five minutes, as Apple's own library
    /// makes them.
    public static let lifetimeSeconds: Int64 = 300

    private let signer: ES256Signer
    private let issuerID: String
    /// The app of an In-App Purchase key's tokens; nil for a team key (no `bid` claim).
    public let bundleID: String?

    /// An In-App Purchase key. `privateKeyPEM` is the `.p8` file's text: never logged, printed or
    /// kept beyond the key. The error names what is wrong with its form, never its content.
    public init(privateKeyPEM: String, keyID: String, issuerID: String, bundleID: String) throws {
        try self.init(pem: privateKeyPEM, keyID: keyID, issuerID: issuerID, bundleID: bundleID)
    }

    /// A team key of the App Store Connect API (sales and finance reports): tokens without `bid`.
    public static func teamKey(privateKeyPEM: String, keyID: String, issuerID: String) throws -> AppStoreJWT {
        try AppStoreJWT(pem: privateKeyPEM, keyID: keyID, issuerID: issuerID, bundleID: nil)
    }

    private init(pem: String, keyID: String, issuerID: String, bundleID: String?) throws {
        signer = try ES256Signer(pkcs8PEM: pem, keyID: keyID, type: "JWT")
        self.issuerID = issuerID
        self.bundleID = bundleID
    }

    /// A token issued at `now` (UNIX seconds): claims `iss`, `iat`, `exp`, `aud`, and `bid` (the
    /// key's app, or `app`) for an In-App Purchase key.
    public func token(now: Int64, app: String? = nil) -> String {
        var claims = #"{"iss":"# + JSONText.quote(issuerID) + #","iat":\#(now),"exp":\#(now + Self.lifetimeSeconds)"#
            + #","aud":"appstoreconnect-v1""#
        if let bid = bundleID.map({ app ?? $0 }) { claims += #","bid":"# + JSONText.quote(bid) }
        return signer.sign(json: claims + "}")
    }
}

/// The tokens of one key (or a key per app), made once per app and reused until a minute before
/// they expire. Owned by one transport run (a value, no lock).
public struct BearerTokens: Sendable {
    public let key: AppStoreJWT
    /// The In-App Purchase key of an app that has its own (`IAP_APP_KEYS`); the others use `key`.
    public let appKeys: [String: AppStoreJWT]
    /// Reused while younger than this: the rest of the lifetime covers a request's flight.
    public static let reuseSeconds: Int64 = AppStoreJWT.lifetimeSeconds - 60
    private var made: [String: (token: String, issuedAt: Int64)] = [:]
    /// Tokens signed so far (a test counts them).
    public private(set) var signed = 0

    public init(key: AppStoreJWT, appKeys: [String: AppStoreJWT] = [:]) { (self.key, self.appKeys) = (key, appKeys) }

    /// The token for `app` (nil: the key's own) at `now` (UNIX seconds).
    public mutating func token(app: String?, now: Int64) -> String {
        let slot = app ?? key.bundleID ?? ""
        if let t = made[slot], now >= t.issuedAt, now - t.issuedAt < Self.reuseSeconds { return t.token }
        let token = app.flatMap { appKeys[$0] }?.token(now: now, app: app) ?? key.token(now: now, app: app)
        made[slot] = (token, now)
        signed += 1
        return token
    }

    /// The next token for `app` is signed afresh (a 401 is confirmed with a new one).
    public mutating func forget(app: String?) { made[app ?? key.bundleID ?? ""] = nil }
}
