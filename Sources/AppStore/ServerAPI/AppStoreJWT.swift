// The bearer token of every App Store Server API request (contract §3b): a fresh ES256 JWT per
// request, signed with the In-App Purchase key (`.p8`) of App Store Connect.

import Reconciliation

public struct AppStoreJWT: Sendable {
    /// Apple refuses a token whose `exp` is more than 60 minutes after its `iat`; the job's live
    /// five minutes, as Apple's own library makes them.
    public static let lifetimeSeconds: Int64 = 300

    private let signer: ES256Signer
    private let issuerID: String
    private let bundleID: String

    /// `privateKeyPEM` is the `.p8` file's text: never logged, printed or kept beyond the key.
    /// The error names what is wrong with its form, never its content.
    public init(privateKeyPEM: String, keyID: String, issuerID: String, bundleID: String) throws {
        signer = try ES256Signer(pkcs8PEM: privateKeyPEM, keyID: keyID, type: "JWT")
        self.issuerID = issuerID
        self.bundleID = bundleID
    }

    /// A token issued at `now` (UNIX seconds): claims `iss`, `iat`, `exp`, `aud`, `bid`.
    public func token(now: Int64) -> String {
        let claims = #"{"iss":"# + JSONText.quote(issuerID) + #","iat":\#(now),"exp":\#(now + Self.lifetimeSeconds)"#
            + #","aud":"appstoreconnect-v1","bid":"# + JSONText.quote(bundleID) + "}"
        return signer.sign(json: claims)
    }
}
