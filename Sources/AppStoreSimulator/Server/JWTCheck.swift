// The bearer token check of the simulated App Store Server API:
// `Authorization: Bearer <jwt>`, header `alg` ES256 / `kid` / `typ` JWT, claims `iss`, `aud`
// appstoreconnect-v1, `bid`, integer `iat` and `exp` with `exp` in the future and at most 60 min
// after `iat`, and an ES256 signature (64-byte r‖s) made by the key of the `.p8` file. Any other
// token is a 401; the reason goes to the call log, never to the client.
//
// Several apps: `bid` must be one of the apps served (`iap-sim serve --api-bundle`,
// repeatable), and the token is checked against that app's key and key id (`--api-key-for`;
// default: the one `--api-key` and `--api-key-id` for every app), as Apple refuses a token for
// an app the key does not serve. An app whose key Apple refuses (`--refuse-app`) gets 401 for
// every token, good or not. A good token is the app it names: every answer is scoped to it.
//
// App Store Connect's team key (sales reports): the same check (`JWTCheck`) with its own
// rules (`ConnectCredentials`): its one key id and issuer, no `bid` at all, at most 20 minutes.

import Crypto
import Foundation

/// Why a request's token was refused (the call log's `401:<reason>`).
enum JWTRejection: String, Error {
    case missing, scheme, form, header, alg, kid, typ, claims, iss, aud, bid, iat, exp, lifetime, signature
    /// A good token of an app whose key is refused (`iap-sim serve --refuse-app`).
    case refused
    /// A good token answered 401 once anyway (`iap-sim serve --stray-401`).
    case stray
}

/// The key of one app, when it has its own (`iap-sim serve --api-key-for`).
public struct AppKey: Sendable {
    public var keyID: String
    public var publicKey: P256.Signing.PublicKey

    public init(keyID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.publicKey = publicKey
    }
}

/// The keys and names a token must match.
public struct APICredentials: Sendable {
    /// The key id and key of every app without a key of its own.
    public var keyID: String
    public var issuerID: String
    /// The first app served.
    public var bundleID: String
    public var publicKey: P256.Signing.PublicKey
    /// The other apps served, after `bundleID` (`--api-bundle` repeated).
    public var otherBundleIDs: [String]
    /// Apps with a key of their own (`--api-key-for`): their tokens must carry its id and be
    /// signed by it; the default key is refused for them.
    public var appKeys: [String: AppKey]
    /// Apps whose every token gets 401 (`--refuse-app`): Apple refusing the app's key.
    public var refusedBundleIDs: Set<String>

    public init(keyID: String, issuerID: String, bundleID: String, publicKey: P256.Signing.PublicKey,
                otherBundleIDs: [String] = [], appKeys: [String: AppKey] = [:], refusedBundleIDs: Set<String> = []) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.bundleID = bundleID
        self.publicKey = publicKey
        self.otherBundleIDs = otherBundleIDs
        self.appKeys = appKeys
        self.refusedBundleIDs = refusedBundleIDs
    }

    /// Every app served, in the order given.
    public var bundleIDs: [String] { [bundleID] + otherBundleIDs.filter { $0 != bundleID } }

    /// The key id and key a token of `bundle` must be made with.
    func key(of bundle: String) -> AppKey { appKeys[bundle] ?? AppKey(keyID: keyID, publicKey: publicKey) }

    /// The public key of a `.p8` file (PKCS#8 PEM of a P-256 private key, as App Store Connect
    /// hands out, or SEC1) or of a PEM public key. The error never quotes the file.
    public static func publicKey(pem: String) throws -> P256.Signing.PublicKey {
        if pem.contains("-----BEGIN PUBLIC KEY-----") {
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: pem) else {
                throw SimulatorError(message: "the API key file holds no P-256 public key")
            }
            return key
        }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw SimulatorError(message: "the API key file is not a P-256 key in PEM (PKCS#8 .p8 or a public key)")
        }
        return key.publicKey
    }

    /// A fresh P-256 private key as PKCS#8 PEM (`iap-sim keygen`): a `.p8` like App Store Connect's.
    public static func newPrivateKeyPEM() -> String {
        P256.Signing.PrivateKey().pemRepresentation
    }

    /// Checks the `Authorization` header values of one request at `nowSeconds` (UNIX seconds):
    /// the app the token is for (its `bid`, one of `bundleIDs`), or why it is refused.
    func check(authorization: [String], nowSeconds: Int64) -> Result<String, JWTRejection> {
        let served = bundleIDs
        let rules = JWTRules(
            issuerID: issuerID, maxLifetimeSeconds: 3600,
            // Any served app's key id here; the one of the token's app once its bid is read.
            knowsKeyID: { kid in served.contains { self.key(of: $0).keyID == kid } },
            bundle: { claims in
                guard let bid = claims["bid"]?.string, served.contains(bid) else { return .failure(.bid) }
                return .success(bid)
            },
            key: { bid in self.key(of: bid ?? self.bundleID) })
        switch JWTCheck.check(authorization: authorization, nowSeconds: nowSeconds, rules) {
        case .failure(let reason): return .failure(reason)
        case .success(let bid):
            let app = bid ?? bundleID
            return refusedBundleIDs.contains(app) ? .failure(.refused) : .success(app)
        }
    }
}

/// What a bearer token must be beyond its form (ES256, `typ` JWT, `aud` appstoreconnect-v1,
/// integer `iat` and `exp`): the App Store Server API's In-App Purchase keys (`APICredentials`)
/// and App Store Connect's team keys (`ConnectCredentials`) differ in these.
struct JWTRules {
    /// The `iss` claim.
    var issuerID: String
    /// Most seconds from `iat` to `exp`: 3600 for the Server API, 1200 for App Store Connect.
    var maxLifetimeSeconds: Int64
    /// A `kid` the header may carry, before the claims are read.
    var knowsKeyID: (String) -> Bool
    /// The app the claims name (their `bid`), nil for a token without one, or why they are refused.
    var bundle: (MiniJSON) -> Result<String?, JWTRejection>
    /// The key id and key a token of that app must be made with.
    var key: (String?) -> AppKey
}

/// The bearer token check shared by the Server API and App Store Connect, in Apple's order of
/// what it reads: the scheme and form, the header (`alg`, `kid`, `typ`), the claims (`iss`,
/// `aud`, the rules' `bid`, `kid` against that app's key, `iat`, `exp` in the future, the
/// lifetime) and last the signature.
enum JWTCheck {
    /// The app the token names (nil: none), or why it is refused.
    static func check(authorization: [String], nowSeconds: Int64, _ rules: JWTRules) -> Result<String?, JWTRejection> {
        guard authorization.count == 1, let value = authorization.first else { return .failure(.missing) }
        let bytes = Array(value.utf8)
        guard bytes.count > 7, bytes.count <= 8192,
              String(decoding: bytes[0..<7], as: UTF8.self).lowercased() == "bearer " else { return .failure(.scheme) }
        let token = bytes[7...]
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]) else { return .failure(.form) }
        guard let header = MiniJSON.parse(headerBytes), case .object = header else { return .failure(.header) }
        guard header["alg"]?.string == "ES256" else { return .failure(.alg) }
        guard let kid = header["kid"]?.string, rules.knowsKeyID(kid) else { return .failure(.kid) }
        guard header["typ"]?.string == "JWT" else { return .failure(.typ) }
        guard let claims = MiniJSON.parse(claimBytes), case .object = claims else { return .failure(.claims) }
        guard claims["iss"]?.string == rules.issuerID else { return .failure(.iss) }
        guard claims["aud"]?.string == "appstoreconnect-v1" else { return .failure(.aud) }
        let bid: String?
        switch rules.bundle(claims) {
        case .failure(let reason): return .failure(reason)
        case .success(let b): bid = b
        }
        let appKey = rules.key(bid)
        guard appKey.keyID == kid else { return .failure(.kid) }
        guard let iat = claims["iat"]?.int, iat > 0 else { return .failure(.iat) }
        guard let exp = claims["exp"]?.int, exp > nowSeconds else { return .failure(.exp) }
        guard exp >= iat, exp - iat <= rules.maxLifetimeSeconds else { return .failure(.lifetime) }
        guard signature.count == 64,
              let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return .failure(.signature) }
        var input = Array(parts[0])
        input.append(UInt8(ascii: "."))
        input.append(contentsOf: parts[1])
        guard appKey.publicKey.isValidSignature(sig, for: input) else { return .failure(.signature) }
        return .success(bid)
    }
}

/// An App Store Connect team key (sales reports, `iap-sim serve --connect-key`): its tokens carry
/// its `kid` and `iss`, no `bid` (a token with one is an In-App Purchase key's: 401), and live at
/// most 20 minutes, as Apple documents a team key's tokens.
public struct ConnectCredentials: Sendable {
    public var keyID: String
    public var issuerID: String
    public var publicKey: P256.Signing.PublicKey

    public init(keyID: String, issuerID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.issuerID = issuerID
        self.publicKey = publicKey
    }

    /// App Store Connect's most seconds from `iat` to `exp`.
    public static let maxLifetimeSeconds: Int64 = 1200

    /// The token's key id when it is good, else why it is refused.
    func check(authorization: [String], nowSeconds: Int64) -> Result<String, JWTRejection> {
        let key = AppKey(keyID: keyID, publicKey: publicKey)
        let rules = JWTRules(
            issuerID: issuerID, maxLifetimeSeconds: Self.maxLifetimeSeconds, knowsKeyID: { $0 == key.keyID },
            bundle: { claims in claims["bid"] == nil ? .success(nil) : .failure(.bid) }, key: { _ in key })
        return JWTCheck.check(authorization: authorization, nowSeconds: nowSeconds, rules).map { _ in key.keyID }
    }
}

/// base64url without padding (RFC 7515 §2), strictly: one text per byte string.
enum Base64URL {
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        return t
    }()

    static func decode<S: Collection>(_ s: S) -> [UInt8]? where S.Element == UInt8 {
        guard !s.isEmpty, s.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(s.count * 3 / 4)
        var acc: UInt32 = 0
        var bits = 0
        for c in s {
            let v = table[Int(c)]
            guard v != 0xFF else { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
                acc &= (1 << UInt32(bits)) - 1
            }
        }
        return acc == 0 ? out : nil
    }

    static func encode<S: Collection>(_ bytes: S) -> String where S.Element == UInt8 {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.hasSuffix("=") { s.removeLast() }
        return s
    }
}
