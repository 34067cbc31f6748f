// Google's service-account key and the OAuth 2.0 server-to-server flow ("Using OAuth 2.0 for
// Server to Server Applications"): an RS256 JWT signed with the key, exchanged at the key's
// `token_uri` for an access token. No I/O: the transport posts the form and hands back the answer.
// The key and every token are never shown: a problem names the field, never its value.

import Crypto
import Foundation
import Reconciliation
import StrictJSON
import _CryptoExtras

/// Why a key file cannot be used (exit 78 naming the variable): its form, never its content.
public struct ServiceAccountProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}

/// A service account's key, read from its JSON key file.
public struct ServiceAccount: Sendable {
    /// The account (`iss` of its assertions): `name@project.iam.gserviceaccount.com`.
    public let clientEmail: String
    /// The key's id (`kid` of the JWT header), when the file names it.
    public let keyID: String?
    /// Where assertions are exchanged: the file's `token_uri` (https only).
    public let tokenURI: String
    private let key: _RSA.Signing.PrivateKey

    /// The key file's bytes. Refused: not one JSON object, `type` other than `service_account`, no
    /// `client_email`, a `private_key` that is not an RSA key of 2048 bits or more in PEM (PKCS#8
    /// `BEGIN PRIVATE KEY` or PKCS#1 `BEGIN RSA PRIVATE KEY`), a `token_uri` that is not https.
    public init(keyFile bytes: [UInt8]) throws(ServiceAccountProblem) {
        let read = PlayObject.reading(bytes) { (file) throws(PlayGarbage) -> (String, String?, String, String) in
            let type = try file.string("type", limit: 64)
            guard type == "service_account" else {
                throw PlayGarbage(
                    type.map { "its type is \"\(Sanitized.text($0.utf8, limit: 30))\", not \"service_account\"" }
                        ?? "it has no type (a service-account key file has \"type\": \"service_account\")")
            }
            let email = try file.required("client_email", limit: 320)
            guard email.contains("@") else { throw PlayGarbage("client_email is not an e-mail address") }
            let keyID = try file.string("private_key_id", limit: 128, allowed: PlayCharacters.isAlphanumeric)
            let uri = try file.string("token_uri", limit: 512) ?? GoogleOAuth.tokenURI
            guard uri.hasPrefix("https://") else { throw PlayGarbage("token_uri is not an https URL") }
            guard let i = file.index("private_key"), file.doc.kind(i) == .string || file.doc.kind(i) == .escapedString,
                let pem = file.doc.text(i), !pem.isEmpty
            else { throw PlayGarbage("private_key is missing or not a string") }
            return (email, keyID, uri, pem)
        }
        let fields: (String, String?, String, String)
        switch read {
        case .success(let f): fields = f
        case .failure(let garbage): throw ServiceAccountProblem("not a service-account key file: \(garbage.problem)")
        }
        let pem = fields.3
        guard pem.contains("-----BEGIN PRIVATE KEY-----") || pem.contains("-----BEGIN RSA PRIVATE KEY-----") else {
            throw ServiceAccountProblem("private_key is not a PEM private key (BEGIN PRIVATE KEY)")
        }
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw ServiceAccountProblem("private_key is not an RSA key of 2048 bits or more")
        }
        (clientEmail, keyID, tokenURI) = (fields.0, fields.1, fields.2)
    }

    /// The signed assertion for `scopes` at `now` (Unix seconds), valid `lifetime` seconds
    /// (Google's limit: one hour): header `{"alg":"RS256","typ":"JWT"[,"kid"]}`, claims `iss`,
    /// `scope` (space-separated), `aud` (`audience`, else the token URI), `iat`, `exp`.
    public func assertion(
        scopes: [String], now: Int64, lifetime: Int64 = GoogleOAuth.assertionLifetime,
        audience: String? = nil
    ) -> String {
        var header = JSONWriter(capacity: 64)
        header.beginObject()
        header.field("alg", "RS256")
        header.field("typ", "JWT")
        if let keyID { header.field("kid", keyID) }
        header.endObject()
        var claims = JSONWriter(capacity: 256)
        claims.beginObject()
        claims.field("iss", clientEmail)
        claims.field("scope", scopes.joined(separator: " "))
        claims.field("aud", audience ?? tokenURI)
        claims.field("iat", now)
        claims.field("exp", now + lifetime)
        claims.endObject()
        let input = Base64.encodeURL(header.bytes) + "." + Base64.encodeURL(claims.bytes)
        // RS256 is RSASSA-PKCS1-v1_5 over SHA-256 (RFC 7518 §3.3); a 2048-bit key cannot fail to sign.
        let signature = try! key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64.encodeURL(Array(signature.rawRepresentation))
    }

    /// The public half, for the simulator's check of an assertion.
    public var publicKey: _RSA.Signing.PublicKey { key.publicKey }
}

/// Google's OAuth 2.0 constants and the token endpoint's answer.
public enum GoogleOAuth {
    /// The token endpoint of today's key files.
    public static let tokenURI = "https://oauth2.googleapis.com/token"
    /// Every Play Developer API method's scope.
    public static let androidPublisherScope = "https://www.googleapis.com/auth/androidpublisher"
    /// Pub/Sub's scope (pull and acknowledge on the job's own subscription).
    public static let pubsubScope = "https://www.googleapis.com/auth/pubsub"
    /// The assertion's lifetime: Google refuses one longer than an hour; ten minutes cover a
    /// request's flight with room.
    public static let assertionLifetime: Int64 = 600
    /// The JWT bearer grant.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The form the token endpoint takes (`application/x-www-form-urlencoded`). The assertion is
    /// base64url and dots only, so it needs no escaping.
    public static func form(assertion: String) -> String {
        "grant_type=" + grantType.replacingOccurrences(of: ":", with: "%3A") + "&assertion=" + assertion
    }

    /// What the token endpoint said.
    public enum Answer: Sendable, Equatable {
        /// An access token (never shown) valid `expiresIn` seconds from the answer.
        case token(String, expiresIn: Int64)
        /// Google refused the assertion (`invalid_grant`, `unauthorized_client`, …): the key was
        /// deleted or the account disabled. Play is skipped tonight; the error code is safe to show.
        case refused(error: String)
        /// Anything else (5xx, garbage): retried like a timeout, never believed.
        case retry(problem: String)
    }

    /// Reads the token endpoint's answer: 200 `{"access_token","expires_in","token_type":"Bearer"}`
    /// (extra members ignored); 400/401 `{"error":…}`.
    public static func answer(status: Int, body: [UInt8]) -> Answer {
        switch status {
        case 200:
            let read = PlayObject.reading(body) { (o) throws(PlayGarbage) -> (String, Int64) in
                let token = try o.required("access_token", limit: 4096, secret: true)
                guard let type = try o.string("token_type", limit: 16), type.lowercased() == "bearer" else {
                    throw PlayGarbage("token_type is not Bearer")
                }
                guard let expires = try o.integer("expires_in", in: 60...86_400) else { throw PlayGarbage("expires_in is missing") }
                return (token, expires)
            }
            switch read {
            case .success(let (token, expires)): return .token(token, expiresIn: expires)
            case .failure(let garbage): return .retry(problem: "token endpoint: \(garbage.problem)")
            }
        case 400, 401, 403:
            let error = PlayObject.reading(body) { (o) throws(PlayGarbage) in
                try o.string("error", limit: 64, allowed: { PlayCharacters.isAlphanumeric($0) || $0 == 95 })
            }
            if case .success(let code?) = error { return .refused(error: code) }
            return .retry(problem: "token endpoint: HTTP \(status) without an OAuth error")
        default:
            return .retry(problem: "token endpoint: HTTP \(status)")
        }
    }
}
