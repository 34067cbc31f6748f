// The other side of `ServiceAccount.assertion`: what Google's token endpoint checks, for the
// simulator (a token endpoint that refuses a forged assertion) and the tests.

import Foundation
import StrictJSON
import _CryptoExtras

/// The claims of an assertion that passed every check.
public struct AssertionClaims: Sendable, Equatable {
    public let issuer: String
    public let scopes: [String]
    public let audience: String
    public let issuedAt: Int64
    public let expires: Int64
}

public enum AssertionCheck {
    /// Checks `assertion` as Google does: three base64url parts; header `alg` RS256; the RS256
    /// signature by `key`; `iss` = `issuer`; `aud` = `audience`; `iat` no later than `now` + 60 s
    /// (clock skew); `exp` after `now` and at most an hour after `iat`; at least one scope. The
    /// problem says which check failed, never the assertion.
    public static func verify(
        _ assertion: String, key: _RSA.Signing.PublicKey, issuer: String, audience: String, now: Int64
    ) -> Result<AssertionClaims, PlayGarbage> {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        func decoded(_ part: Substring) -> [UInt8]? { Array(part.utf8).withUnsafeBufferPointer { try? Base64.decodeURL($0).get() } }
        guard parts.count == 3, let header = decoded(parts[0]), let claims = decoded(parts[1]), let signature = decoded(parts[2])
        else { return .failure(PlayGarbage("assertion is not three base64url parts")) }
        let alg = PlayObject.reading(header) { (h) throws(PlayGarbage) in try h.string("alg", limit: 16) }
        guard case .success("RS256"?) = alg else { return .failure(PlayGarbage("assertion header's alg is not RS256")) }
        let signed = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signed, padding: .insecurePKCS1v1_5)
        else { return .failure(PlayGarbage("assertion signature is not the service account's")) }
        return PlayObject.reading(claims) { (c) throws(PlayGarbage) -> AssertionClaims in
            let iss = try c.required("iss", limit: 320)
            guard iss == issuer else { throw PlayGarbage("assertion iss is not the service account") }
            let aud = try c.required("aud", limit: 512)
            guard aud == audience else { throw PlayGarbage("assertion aud is not the token endpoint") }
            let scope = try c.required("scope", limit: 2048, allowed: { $0 >= 0x20 && $0 <= 0x7E })
            guard let iat = try c.integer("iat", in: 0...253_402_300_799), let exp = try c.integer("exp", in: 0...253_402_300_799) else {
                throw PlayGarbage("assertion has no iat or exp")
            }
            guard iat <= now + 60 else { throw PlayGarbage("assertion iat is in the future") }
            guard exp > now else { throw PlayGarbage("assertion has expired") }
            guard exp > iat, exp - iat <= 3600 else { throw PlayGarbage("assertion lives longer than an hour") }
            let scopes = scope.split(separator: " ").map(String.init)
            guard !scopes.isEmpty else { throw PlayGarbage("assertion has no scope") }
            return AssertionClaims(issuer: iss, scopes: scopes, audience: aud, issuedAt: iat, expires: exp)
        }
    }
}
