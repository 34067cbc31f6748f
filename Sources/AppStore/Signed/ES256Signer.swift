// Compact JWS signing with ES256 (RFC 7515 §7.1, RFC 7518 §3.4): what the job sends the App Store
// Server API as its bearer JWT (a `.p8` key, `kid`, `typ` JWT), and what the simulator signs its
// transactions with (an `x5c` chain). The signature is the 64-byte r‖s Apple expects, never DER.

import StrictJSON
import Crypto
import Foundation
import Reconciliation

public struct ES256Signer: Sendable {
    private let key: P256.Signing.PrivateKey
    /// base64url of the header JSON, made once.
    private let headerSegment: String

    /// Why a private key file cannot be used. Never quotes the file: it is a secret.
    public struct KeyError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// - Parameters:
    ///   - keyID: `kid` (the App Store Connect key id).
    ///   - type: `typ` (`JWT` for the Server API).
    ///   - certificateChain: `x5c`, standard base64 DER certificates, leaf first.
    public init(privateKey: P256.Signing.PrivateKey, keyID: String? = nil, type: String? = nil,
                certificateChain: [String]? = nil) {
        key = privateKey
        var header = #"{"alg":"ES256""#
        if let keyID { header += #","kid":"# + JSONText.quote(keyID) }
        if let type { header += #","typ":"# + JSONText.quote(type) }
        if let certificateChain {
            header += #","x5c":["# + certificateChain.map(JSONText.quote).joined(separator: ",") + "]"
        }
        header += "}"
        headerSegment = Base64.encodeURL(Array(header.utf8))
    }

    /// A PKCS#8 PEM P-256 key (`-----BEGIN PRIVATE KEY-----`, the `.p8` App Store Connect gives),
    /// or SEC1 (`-----BEGIN EC PRIVATE KEY-----`). The error says what is wrong with the file's
    /// form, never what it holds.
    public init(pkcs8PEM: String, keyID: String? = nil, type: String? = nil) throws {
        guard pkcs8PEM.contains("-----BEGIN PRIVATE KEY-----") || pkcs8PEM.contains("-----BEGIN EC PRIVATE KEY-----") else {
            throw KeyError(description: "the private key is not PEM (no -----BEGIN PRIVATE KEY----- line)")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: pkcs8PEM)
        } catch {
            throw KeyError(description: "the private key is not a P-256 (prime256v1) key in PKCS#8 PEM")
        }
        self.init(privateKey: key, keyID: keyID, type: type)
    }

    public var publicKey: P256.Signing.PublicKey { key.publicKey }

    /// `header.payload.signature`, each base64url without padding; the signature is ES256 over the
    /// ASCII bytes of `header.payload`, as 64-byte r‖s.
    public func sign<Payload: Collection>(payload: Payload) -> String where Payload.Element == UInt8 {
        let signingInput = headerSegment + "." + Base64.encodeURL(payload)
        return signingInput + "." + Base64.encodeURL(rawSignature(over: Array(signingInput.utf8)))
    }

    /// ES256 over `bytes` as 64-byte r‖s (for callers that assemble a JWS themselves).
    public func rawSignature(over bytes: [UInt8]) -> [UInt8] {
        do {
            return Array(try key.signature(for: bytes).rawRepresentation)
        } catch {
            // BoringSSL fails to sign only when out of memory or entropy; nothing can be signed then.
            fatalError("ES256 signing failed: \(type(of: error))")
        }
    }

    /// The payload given as JSON text.
    public func sign(json: String) -> String {
        sign(payload: Array(json.utf8))
    }

    /// base64url without padding (RFC 7515 §2), for callers building their own segments.
    public static func base64URL<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Base64.encodeURL(bytes)
    }
}
