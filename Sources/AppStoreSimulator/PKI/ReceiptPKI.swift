// A certificate authority of our own shaped like the one Apple signs app receipts under, so that
// the simulator (and the tests) can issue PKCS#7 receipts the job verifies for real: root (RSA-2048,
// self-signed CA), intermediate (RSA-2048 CA, path length 0, Apple's WWDR marker OID), leaf
// (RSA-2048, not a CA, digitalSignature, the receipt-signing marker OID), as Apple's receipts carry
// them. The job trusts it by pointing `IAP_RECEIPT_ROOT_CERTIFICATES` at its root. Certificates by
// swift-certificates, RSA by swift-crypto; the container is serialized with swift-asn1.

import AppStore
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

public struct ReceiptPKI: @unchecked Sendable {
    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    public let rootKey: _RSA.Signing.PrivateKey
    public let intermediateKey: _RSA.Signing.PrivateKey
    public let leafKey: _RSA.Signing.PrivateKey

    static let day: TimeInterval = 86_400

    /// The names of the three certificates.
    public struct Names: Sendable {
        public var root: DistinguishedName
        public var intermediate: DistinguishedName
        public var leaf: DistinguishedName

        /// Names that say plainly what this is.
        public static func simulator() throws -> Names {
            Names(
                root: try name("IAP Simulator Receipt Root CA"),
                intermediate: try name("IAP Simulator WWDR Intermediate CA"),
                leaf: try name("IAP Simulator Mac App Store and iTunes Store Receipt Signing"))
        }

        /// Apple's own names (the root's taken from the real Apple Root CA): a forger's chain, which
        /// must fail as an unknown root however real it looks.
        public static func appleLookalike() throws -> Names {
            Names(
                root: AppReceiptVerifier.appleRootCA.subject,
                intermediate: try DistinguishedName {
                    CountryName("US")
                    OrganizationName("Apple Inc.")
                    OrganizationalUnitName("G5")
                    CommonName("Apple Worldwide Developer Relations Certification Authority")
                },
                leaf: try DistinguishedName {
                    CommonName("Mac App Store and iTunes Store Receipt Signing")
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

    /// A new PKI around `now`: root 10 years either side, intermediate 5 before and 10 after, leaf
    /// `leafValidity` (default: a year either side).
    public static func create(
        now: Date = Date(), names: Names? = nil, leafValidity: ClosedRange<Date>? = nil
    ) throws -> ReceiptPKI {
        let names = try names ?? Names.simulator()
        let rootKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(rootKey.publicKey),
            notValidBefore: now - 3650 * day, notValidAfter: now + 3650 * day,
            issuer: names.root, subject: names.root, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey))
        let intermediateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(intermediateKey.publicKey),
            notValidBefore: now - 1825 * day, notValidAfter: now + 3650 * day,
            issuer: names.root, subject: names.intermediate, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                Certificate.Extension(oid: TestPKI.intermediateMarker, critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: Certificate.PrivateKey(rootKey))
        let (leaf, leafKey) = try issueLeaf(
            issuer: intermediate, issuerKey: intermediateKey, name: names.leaf,
            validity: leafValidity ?? (now - 365 * day)...(now + 365 * day))
        return ReceiptPKI(
            root: root, intermediate: intermediate, leaf: leaf, rootKey: rootKey, intermediateKey: intermediateKey,
            leafKey: leafKey)
    }

    /// A receipt-signing certificate issued by `issuer` (the intermediate, or, for a forgery,
    /// a leaf that is not a CA).
    public static func issueLeaf(
        issuer: Certificate, issuerKey: _RSA.Signing.PrivateKey, name: DistinguishedName, validity: ClosedRange<Date>
    ) throws -> (Certificate, _RSA.Signing.PrivateKey) {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound,
            issuer: issuer.subject, subject: name, signatureAlgorithm: .sha256WithRSAEncryption,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: TestPKI.leafMarker, critical: false, value: [0x05, 0x00])
            },
            issuerPrivateKey: Certificate.PrivateKey(issuerKey))
        return (leaf, key)
    }

    /// The same root and intermediate, a leaf valid over `validity`.
    public func reissuingLeaf(validity: ClosedRange<Date>) throws -> ReceiptPKI {
        let (leaf, key) = try Self.issueLeaf(
            issuer: intermediate, issuerKey: intermediateKey, name: leaf.subject, validity: validity)
        return ReceiptPKI(
            root: root, intermediate: intermediate, leaf: leaf, rootKey: rootKey, intermediateKey: intermediateKey,
            leafKey: key)
    }

    /// `root.pem`: what the job's `IAP_RECEIPT_ROOT_CERTIFICATES` names.
    public var rootPEM: String { get throws { try root.serializeAsPEM().pemString } }

    /// The receipt `payload` signed by the leaf, carrying leaf, intermediate and root as Apple's do.
    public func sign(_ payload: [UInt8], digest: ReceiptSigning.Digest = .sha256) throws -> [UInt8] {
        try ReceiptSigning.sign(payload, digest: digest, signer: leaf, key: leafKey, carried: [leaf, intermediate, root])
    }
}
