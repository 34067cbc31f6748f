// A certificate authority of our own, shaped like Apple's StoreKit signing chain, so the simulator
// can sign transactions the job verifies for real: root (P-384, self-signed CA), intermediate
// (P-384 CA with Apple's WWDR marker OID), leaf (P-256 with the receipt-signing marker OID), as
// the chain Apple sends. The job trusts it by pointing
// `IAP_ROOT_CERTIFICATES` at `root.pem`. Built with swift-certificates; no hand-made DER.

import AppStore
import Crypto
import Foundation
import SwiftASN1
import X509

public struct TestPKI: Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let rootKey: P384.Signing.PrivateKey
    public let intermediateKey: P384.Signing.PrivateKey
    /// The key that signs transactions. Public: the hostile-upload helpers and tests sign with it.
    public let leafKey: P256.Signing.PrivateKey
    /// The `x5c` header value: leaf, intermediate, root as standard base64 DER.
    public let x5c: [String]
    /// `root.pem`: what the job's `IAP_ROOT_CERTIFICATES` names.
    public let rootPEM: String
    private let signer: ES256Signer

    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let day: TimeInterval = 86_400

    /// The subject names of the three certificates.
    public struct Names: Sendable {
        public var root: DistinguishedName
        public var intermediate: DistinguishedName
        public var leaf: DistinguishedName

        public init(root: DistinguishedName, intermediate: DistinguishedName, leaf: DistinguishedName) {
            self.root = root
            self.intermediate = intermediate
            self.leaf = leaf
        }

        /// Names that say plainly what this is.
        public static func simulator(_ label: String = "IAP Simulator") throws -> Names {
            Names(root: try name("\(label) Root CA"), intermediate: try name("\(label) WWDR Intermediate CA"),
                  leaf: try name("\(label) StoreKit Signing"))
        }

        /// Apple's names (the root's taken from the real Apple Root CA - G3): a forger's chain, which
        /// must fail as an unknown root however real it looks.
        public static func appleLookalike() throws -> Names {
            Names(root: SignedDataVerifier.appleRootCAG3.subject,
                  intermediate: try DistinguishedName {
                      CommonName("Apple Worldwide Developer Relations Certification Authority")
                      OrganizationalUnitName("G6")
                      OrganizationName("Apple Inc.")
                      CountryName("US")
                  },
                  leaf: try DistinguishedName {
                      CommonName("Prod ECC Mac App Store and iTunes Store Receipt Signing")
                      OrganizationalUnitName("Apple Worldwide Developer Relations")
                      OrganizationName("Apple Inc.")
                      CountryName("US")
                  })
        }

        private static func name(_ commonName: String) throws -> DistinguishedName {
            try DistinguishedName {
                CommonName(commonName)
                OrganizationalUnitName("iap-reconcile test PKI")
                OrganizationName("iap-reconcile")
            }
        }
    }

    /// How the leaf is issued (tests make broken ones).
    public struct LeafOptions: Sendable {
        /// Defaults: a year before and after `now`.
        public var notBefore: Date?
        public var notAfter: Date?
        /// The receipt-signing marker OID 1.2.840.113635.100.6.11.1.
        public var hasMarker = true
        /// false: signed by a stray key under the intermediate's name (a leaf that is not the
        /// intermediate's).
        public var signedByIntermediate = true

        public init(notBefore: Date? = nil, notAfter: Date? = nil, hasMarker: Bool = true, signedByIntermediate: Bool = true) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.hasMarker = hasMarker
            self.signedByIntermediate = signedByIntermediate
        }
    }

    init(root: Certificate, intermediate: Certificate, leaf: Certificate, rootKey: P384.Signing.PrivateKey,
         intermediateKey: P384.Signing.PrivateKey, leafKey: P256.Signing.PrivateKey) throws {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.rootKey = rootKey
        self.intermediateKey = intermediateKey
        self.leafKey = leafKey
        self.x5c = try [leaf, intermediate, root].map { Data(try Self.der($0)).base64EncodedString() }
        self.rootPEM = try root.serializeAsPEM().pemString
        self.signer = ES256Signer(privateKey: leafKey, certificateChain: x5c)
    }

    /// A new PKI: root valid 10 years either side of `now` (20 years), intermediate 5 before and
    /// 10 after, leaf as `leaf` says (default: a year either side).
    public static func create(now: Date = Date(), names: Names? = nil, intermediateHasMarker: Bool = true,
                              leaf: LeafOptions = LeafOptions()) throws -> TestPKI {
        let names = try names ?? Names.simulator()
        let rootKey = P384.Signing.PrivateKey()
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(rootKey.publicKey),
            notValidBefore: now - 3650 * day, notValidAfter: now + 3650 * day,
            issuer: names.root, subject: names.root, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey))
        return try issuingIntermediate(root: root, rootKey: rootKey, name: names.intermediate, leafName: names.leaf,
                                       now: now, hasMarker: intermediateHasMarker, leaf: leaf)
    }

    /// The same root, a new intermediate (with or without its marker) and a new leaf under it.
    public func reissuingIntermediate(now: Date = Date(), hasMarker: Bool, leaf: LeafOptions = LeafOptions()) throws -> TestPKI {
        try Self.issuingIntermediate(root: root, rootKey: rootKey, name: intermediate.subject, leafName: self.leaf.subject,
                                     now: now, hasMarker: hasMarker, leaf: leaf)
    }

    /// The same root and intermediate, a new leaf (other dates, no marker, or not the intermediate's).
    public func reissuingLeaf(now: Date = Date(), _ options: LeafOptions) throws -> TestPKI {
        let (cert, key) = try Self.issueLeaf(intermediate: intermediate, intermediateKey: intermediateKey,
                                             name: leaf.subject, now: now, options: options)
        return try TestPKI(root: root, intermediate: intermediate, leaf: cert, rootKey: rootKey,
                           intermediateKey: intermediateKey, leafKey: key)
    }

    private static func issuingIntermediate(root: Certificate, rootKey: P384.Signing.PrivateKey, name: DistinguishedName,
                                            leafName: DistinguishedName, now: Date, hasMarker: Bool,
                                            leaf: LeafOptions) throws -> TestPKI {
        let key = P384.Signing.PrivateKey()
        let intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now - 1825 * day, notValidAfter: now + 3650 * day,
            issuer: root.subject, subject: name, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                if hasMarker {
                    // Apple WWDR marker; its value is ASN.1 NULL, as in Apple's intermediates.
                    Certificate.Extension(oid: intermediateMarker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey))
        let (leafCert, leafKey) = try issueLeaf(intermediate: intermediate, intermediateKey: key, name: leafName,
                                                now: now, options: leaf)
        return try TestPKI(root: root, intermediate: intermediate, leaf: leafCert, rootKey: rootKey,
                           intermediateKey: key, leafKey: leafKey)
    }

    private static func issueLeaf(intermediate: Certificate, intermediateKey: P384.Signing.PrivateKey,
                                  name: DistinguishedName, now: Date,
                                  options: LeafOptions) throws -> (Certificate, P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let signingKey = options.signedByIntermediate ? intermediateKey : P384.Signing.PrivateKey()
        let cert = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: options.notBefore ?? now - 365 * day, notValidAfter: options.notAfter ?? now + 365 * day,
            issuer: intermediate.subject, subject: name, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if options.hasMarker {
                    Certificate.Extension(oid: leafMarker, critical: false, value: [0x05, 0x00])
                }
            },
            issuerPrivateKey: Certificate.PrivateKey(signingKey))
        return (cert, key)
    }

    // MARK: Signing

    /// A signed transaction as Apple would send it: x5c [leaf, intermediate, root], ES256 by the leaf.
    public func signTransaction(_ payload: SignedTransactionPayload) -> String {
        sign(payload: payload.json())
    }

    /// Any payload bytes, signed correctly (tests and hostile uploads: the payload is the problem).
    public func sign(payload: [UInt8]) -> String {
        signer.sign(payload: payload)
    }

    /// A JWS with a header of the caller's (`alg` none, two certificates…) signed by the leaf: the
    /// header is the problem.
    public func sign(payload: [UInt8], headerJSON: String) -> String {
        let input = ES256Signer.base64URL(Array(headerJSON.utf8)) + "." + ES256Signer.base64URL(payload)
        return input + "." + ES256Signer.base64URL(signer.rawSignature(over: Array(input.utf8)))
    }

    // MARK: Files

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
