// The x5c chain: built and judged by swift-certificates' `Verifier` against the configured roots
// only, with RFC 5280's rules at the payload's `signedDate` and Apple's own shape (three
// certificates, the WWDR marker on the intermediate, the receipt-signing marker on the leaf), as
// Apple's ChainVerifier does offline. No ASN.1 or ECDSA is written here.
//
// `RFC5280Policy(fixedExpiryValidationTime:)` and `withValidityCheckDisabled()` are SPI of
// swift-certificates: the public initialiser with a fixed time is deprecated (a warning in this
// package, which builds without any), and the library names this SPI as its replacement. The
// version is pinned by Package.swift.

@_spi(FixedExpiryValidationTime) @_spi(DisableValidityCheck) import X509
import StrictJSON
import Crypto
import Foundation
import Reconciliation
import SwiftASN1

/// Apple's shape of a signing chain (ChainVerifier's AppStoreOIDPolicy): leaf, intermediate, root;
/// the intermediate carries 1.2.840.113635.100.6.2.1 (Apple WWDR), the leaf
/// 1.2.840.113635.100.6.11.1 (receipt signing). Their values are not read, only their presence,
/// as Apple does; they are not claimed as handled critical extensions.
struct AppleChainPolicy: VerifierPolicy, Sendable {
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            let count = chain.count
            return .failsToMeetPolicy(reason: "Apple policy: the chain has \(count) certificates, not 3")
        }
        guard chain[1].extensions.contains(where: { $0.oid == Self.intermediateMarker }) else {
            return .failsToMeetPolicy(reason: "Apple policy: the intermediate lacks the WWDR marker OID 1.2.840.113635.100.6.2.1")
        }
        guard chain[0].extensions.contains(where: { $0.oid == Self.leafMarker }) else {
            return .failsToMeetPolicy(reason: "Apple policy: the leaf lacks the receipt-signing marker OID 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}

/// The validity period of one certificate of a verified chain, in UNIX ms (whole seconds).
struct CertificateValidity: Sendable, Equatable {
    var role: String
    var notBefore: EpochMillis
    var notAfter: EpochMillis

    init(role: String, _ certificate: Certificate) {
        self.role = role
        self.notBefore = Self.millis(certificate.notValidBefore)
        self.notAfter = Self.millis(certificate.notValidAfter)
    }

    /// RFC 5280's expiry rule, as swift-certificates applies it: valid when notBefore ≤ t ≤ notAfter.
    func covers(_ t: EpochMillis) -> Bool { notBefore <= t && t <= notAfter }

    static func millis(_ date: Date) -> EpochMillis {
        // Certificate times are whole seconds of years 0…9999: exact in a Double and in Int64.
        EpochMillis((date.timeIntervalSince1970 * 1000).rounded())
    }
}

/// A chain that met every rule except, perhaps, the dates: what the cache keeps for a
/// (leaf, intermediate) pair. Only the date check depends on the JWS, so it is redone on each.
struct TrustedChain: Sendable {
    let leafKey: P256.Signing.PublicKey
    /// Leaf, intermediate, root.
    let validity: [CertificateValidity]
    /// max(notBefore) and min(notAfter) over the chain: the interval in which `signedDate` must fall.
    let notBefore: EpochMillis
    let notAfter: EpochMillis

    /// nil when the leaf's key is not P-256 (ES256 cannot be checked with it).
    init?(_ chain: ValidatedCertificateChain) {
        guard chain.count == 3, let key = P256.Signing.PublicKey(chain[0].publicKey) else { return nil }
        leafKey = key
        validity = zip(["leaf", "intermediate", "root"], chain).map { CertificateValidity(role: $0, $1) }
        notBefore = validity.map(\.notBefore).max() ?? .max
        notAfter = validity.map(\.notAfter).min() ?? .min
    }

    func covers(_ t: EpochMillis) -> Bool { notBefore <= t && t <= notAfter }

    /// "leaf certificate is valid 2024-01-01T00:00:00Z to 2025-01-01T00:00:00Z, not at signedDate …".
    func expiry(at t: EpochMillis) -> SignedDataRejection {
        let shown = "signedDate " + UTC.timestamp(t)
        guard let bad = validity.first(where: { !$0.covers(t) }) else {
            return .expired("no chain to a configured root is valid at " + shown)
        }
        return .expired("\(bad.role) certificate is valid \(UTC.timestamp(bad.notBefore)) to "
                        + "\(UTC.timestamp(bad.notAfter)), not at \(shown)")
    }
}

enum ChainVerdict: Sendable {
    case trusted(TrustedChain)
    /// unknownRoot or brokenChain: facts of the certificates alone, true at any date.
    case rejected(SignedDataRejection)
}

enum ChainValidation {
    /// swift-certificates' Verifier with the configured roots as the only anchors and x5c[1] as
    /// the only intermediate (x5c[2] is never offered). `time` nil: dates not checked.
    static func validate(leaf: Certificate, intermediate: Certificate, roots: CertificateStore,
                         at time: Date?) -> CertificateValidationResult {
        BlockingAsync.run {
            var verifier = Verifier(rootCertificates: roots) {
                if let time {
                    RFC5280Policy(fixedExpiryValidationTime: time)
                } else {
                    RFC5280Policy.withValidityCheckDisabled()
                }
                AppleChainPolicy()
            }
            return await verifier.validate(leaf: leaf, intermediates: CertificateStore([intermediate]))
        }
    }

    /// The verdict for a pair not in the cache, and whether `signedDate` passes it.
    ///
    /// 1. The Verifier at `signedDate` (what Apple's library does offline). A valid chain: trusted.
    /// 2. Otherwise the Verifier without dates. Valid: the chain is good but not at `signedDate`
    ///    (expired, or not yet valid); the chain is kept, for other JWS of other dates.
    /// 3. Otherwise a date-free rejection: no configured root issued the intermediate
    ///    (`unknownRoot`), or the leaf is not the intermediate's, or a rule named by the policy.
    static func judge(leaf: Certificate, intermediate: Certificate, roots: [Certificate], store: CertificateStore,
                      signedDate: EpochMillis) -> ChainVerdict {
        let atSignedDate = validate(leaf: leaf, intermediate: intermediate, roots: store, at: date(signedDate))
        if case .validCertificate(let chain) = atSignedDate {
            return trusted(chain)
        }
        let anyDate = validate(leaf: leaf, intermediate: intermediate, roots: store, at: nil)
        switch anyDate {
        case .validCertificate(let chain):
            return trusted(chain)
        case .couldNotValidate(let failures):
            return .rejected(classify(leaf: leaf, intermediate: intermediate, roots: roots, failures: failures))
        }
    }

    static func date(_ ms: EpochMillis) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

    private static func trusted(_ chain: ValidatedCertificateChain) -> ChainVerdict {
        guard let trusted = TrustedChain(chain) else {
            return .rejected(.brokenChain("the leaf's key is not P-256, so it cannot sign ES256"))
        }
        return .trusted(trusted)
    }

    /// Why no chain met the policy, said in the terms of the reasons a person can act on.
    static func classify(leaf: Certificate, intermediate: Certificate, roots: [Certificate],
                         failures: [CertificateValidationResult.PolicyFailure]) -> SignedDataRejection {
        func issued(_ child: Certificate, by parent: Certificate) -> Bool {
            parent.subject == child.issuer && parent.publicKey.isValidSignature(child.signature, for: child)
        }
        // A configured root that is the intermediate itself counts too: the policy then names the length.
        guard roots.contains(where: { issued(intermediate, by: $0) || $0 == intermediate }) else { return .unknownRoot }
        guard issued(leaf, by: intermediate) else {
            return .brokenChain("the leaf is not signed by the intermediate")
        }
        if let reason = failures.first?.policyFailureReason.description {
            return .brokenChain(shortReason(reason))
        }
        let handled = RFC5280Policy().verifyingCriticalExtensions
        for (role, certificate) in [("leaf", leaf), ("intermediate", intermediate)] {
            if let unknown = certificate.extensions.first(where: { $0.critical && !handled.contains($0.oid) }) {
                return .brokenChain("the \(role) has an unsupported critical extension \(unknown.oid)")
            }
        }
        return .brokenChain("no chain through the intermediate reaches a configured root")
    }

    /// A policy reason without the full certificate dump swift-certificates puts in its RFC 5280
    /// texts: one line of at most 160 printable characters.
    static func shortReason(_ reason: String) -> String {
        var text = reason
        if text.hasPrefix("Apple policy: ") { text.removeFirst("Apple policy: ".count) }
        if let open = text.range(of: "Certificate("), let close = text.range(of: ")", options: .backwards),
           open.upperBound <= close.lowerBound {
            text.replaceSubrange(open.lowerBound..<close.upperBound, with: "certificate")
        }
        return Sanitized.text(text.utf8, limit: 160)
    }
}
