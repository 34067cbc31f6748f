// Verifying an app receipt (the PKCS#7 "unified receipt" of App Store Receipts 1.0–1.7) on our own
// machine, as "Validating receipts on the device" says to do on a server now that verifyReceipt
// is deprecated. The checks, in order; the first that fails is the reason (the words of signed
// transactions, SignedDataRejection):
//
// 1. `malformed`: the container's form and limits (ReceiptContainer.swift).
// 2. `unknown_root` / `broken_chain`: swift-certificates' Verifier with RFC 5280's rules (basic
//    constraints, key usage) and Apple's shape (AppleChainPolicy: leaf → intermediate → root, the
//    two marker OIDs), anchored only at the configured roots: a certificate the receipt carries is
//    a candidate intermediate, never an anchor. Dates are not checked here (step 4): the verdict
//    depends on the certificates alone and is kept per set of certificates.
// 3. `bad_signature`: RSA PKCS#1 v1.5 over the content with SHA-1 or SHA-256. Only then is the
//    payload read (ReceiptPayload.swift; its form is `malformed` too).
// 4. `expired`: each certificate of the chain valid at the receipt's creation date (type 12).
// 5. `wrong_bundle`: type 2 not among `IAP_BUNDLE_IDS` (when set).
//
// Not checked: attribute 5 (the device's hash needs the device's identifier), OCSP and CRLs.

import StrictJSON
import Crypto
@_spi(DisableValidityCheck) import X509
import _CryptoExtras
import Foundation
import Reconciliation
import SwiftASN1

/// A receipt that passed every check, with what the job keeps of it.
public struct AppReceipt: Sendable {
    /// Type 0: `Production` → production, `ProductionSandbox` → sandbox.
    public var environment: AppStoreEnvironment
    public var bundleID: String?
    /// Type 12.
    public var creationDate: EpochMillis
    /// One per in-app purchase (by transaction id), built as from a verifyReceipt answer.
    public var transactions: [AppleTransaction]
}

public struct AppReceiptVerifier: Sendable {
    /// The trust anchors: only these.
    public let roots: [Certificate]
    private let store: CertificateStore
    private let cache: ChainCache<ReceiptChainKey, ReceiptChain>

    /// `roots`: the embedded Apple Root CA unless `IAP_RECEIPT_ROOT_CERTIFICATES` names others.
    /// `cacheCapacity`: how many chain verdicts are kept (0: none, for measuring).
    public init(roots: [Certificate] = [AppReceiptVerifier.appleRootCA], cacheCapacity: Int = 64) {
        self.roots = roots
        store = CertificateStore(roots)
        cache = ChainCache(capacity: cacheCapacity)
    }

    /// Verifies the receipt in `bytes` (base64-decoded). `bundleIDs`: the job's `IAP_BUNDLE_IDS`;
    /// nil or empty means any bundle.
    public func verify(_ bytes: [UInt8], bundleIDs: Set<String>?) -> Result<AppReceipt, SignedDataRejection> {
        Result { () throws(SignedDataRejection) in try check(bytes, bundleIDs: bundleIDs) }
    }

    private func check(_ bytes: [UInt8], bundleIDs: Set<String>?) throws(SignedDataRejection) -> AppReceipt {
        let container = try ReceiptContainer(bytes)
        let chain = try self.chain(of: container, in: bytes)
        guard Self.isSigned(container, by: chain.leafKey) else { throw .badSignature }
        let payload = try ReceiptPayload(container.content)
        guard let created = payload.creationDate else { throw .malformed("the payload has no creation date (type 12)") }
        if let bad = chain.validity.first(where: { !$0.covers(created) }) {
            throw .expired(
                "\(bad.role) certificate is valid \(UTC.timestamp(bad.notBefore)) to \(UTC.timestamp(bad.notAfter)), "
                    + "not at the receipt's creation date \(UTC.timestamp(created))")
        }
        if let bundleIDs, !bundleIDs.isEmpty, !bundleIDs.contains(payload.bundleID ?? "") {
            throw .wrongBundle("the receipt is of \(Sanitized.text((payload.bundleID ?? "no bundle").utf8, limit: 80))")
        }
        let environment: AppStoreEnvironment
        switch payload.environment {
        case "Production": environment = .production
        case "ProductionSandbox": environment = .sandbox
        default:
            let shown = payload.environment.map { Sanitized.text($0.utf8, limit: 40) } ?? "missing"
            throw .malformed("type 0 (environment) is \(shown), not Production or ProductionSandbox")
        }
        var collector = Collector()
        for purchase in payload.purchases { collector.add(purchase) }
        let transactions = collector.partials.map { $0.transaction(environment: environment, receiptBundle: payload.bundleID) }
        return AppReceipt(environment: environment, bundleID: payload.bundleID, creationDate: created, transactions: transactions)
    }

    /// The signature over the content (or over the signed attributes, whose message digest must be
    /// the content's).
    static func isSigned(_ container: ReceiptContainer, by key: _RSA.Signing.PublicKey) -> Bool {
        let signature = _RSA.Signing.RSASignature(rawRepresentation: container.signature)
        func valid(_ bytes: ArraySlice<UInt8>) -> Bool {
            switch container.digest {
            case .sha1: return key.isValidSignature(signature, for: Insecure.SHA1.hash(data: bytes), padding: .insecurePKCS1v1_5)
            case .sha256: return key.isValidSignature(signature, for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5)
            }
        }
        guard let attributes = container.signedAttributes else { return valid(container.content) }
        let digest: [UInt8]
        switch container.digest {
        case .sha1: digest = Array(Insecure.SHA1.hash(data: container.content))
        case .sha256: digest = Array(SHA256.hash(data: container.content))
        }
        return digest == attributes.messageDigest && valid(attributes.der[...])
    }

    // MARK: The chain

    /// The chain of the signer's certificate, judged once per set of carried certificates (the
    /// container's receipt `bytes`, walked whole before they are judged).
    private func chain(of container: ReceiptContainer, in bytes: [UInt8]) throws(SignedDataRejection)
        -> (leafKey: _RSA.Signing.PublicKey, validity: [CertificateValidity])
    {
        let key = ReceiptChainKey(signer: container.signerID, certificates: container.certificates)
        let verdict: ReceiptChain
        if let known = cache.entry(key) {
            // The same bytes were walked whole when this verdict was made.
            verdict = known
        } else {
            try container.wholeCertificates(bytes)
            verdict = ReceiptChain.judge(container, roots: roots, store: store)
            // Only verdicts on certificates are kept: a receipt whose certificates do not parse is not.
            if case .rejected(.malformed) = verdict {} else { cache.store(verdict, for: key.compacted) }
        }
        switch verdict {
        case .trusted(let leafKey, let validity): return (leafKey, validity)
        case .rejected(let rejection): throw rejection
        }
    }
}

/// A receipt's signer (its IssuerAndSerialNumber as encoded) and certificates, as the chain
/// cache's key: slices of the receipt, never copied to be looked up. Equal means every byte equal
/// (compared with `memcmp`); the hash takes the sizes, the signer's last 24 bytes (its serial
/// number's) and the last 16 bytes of each certificate (its signature's), not 3 KB of certificates
/// byte by byte as `[UInt8]`'s own hash does (a tenth of the verifier's time).
struct ReceiptChainKey: Hashable, Sendable {
    let signer: ArraySlice<UInt8>
    let certificates: [ArraySlice<UInt8>]

    func hash(into hasher: inout Hasher) {
        // The signer's serial number is at its end.
        hasher.combine(signer.count)
        signer.suffix(24).withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(certificates.count)
        for certificate in certificates {
            hasher.combine(certificate.count)
            certificate.suffix(16).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    static func == (a: ReceiptChainKey, b: ReceiptChainKey) -> Bool {
        guard same(a.signer, b.signer), a.certificates.count == b.certificates.count else { return false }
        return zip(a.certificates, b.certificates).allSatisfy { same($0, $1) }
    }

    private static func same(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }
    }

    /// The key with bytes of its own, to keep in the cache: slices would keep whole receipts alive.
    var compacted: ReceiptChainKey {
        ReceiptChainKey(signer: ArraySlice(Array(signer)), certificates: certificates.map { ArraySlice(Array($0)) })
    }
}

/// The verdict on a receipt's certificates, true at any date: the signer's key and the chain's
/// validity periods (leaf, intermediate, root), or why no chain reaches a configured root.
enum ReceiptChain: Sendable {
    case trusted(leafKey: _RSA.Signing.PublicKey, validity: [CertificateValidity])
    case rejected(SignedDataRejection)

    static func judge(_ container: ReceiptContainer, roots: [Certificate], store: CertificateStore) -> ReceiptChain {
        var carried: [Certificate] = []
        for (i, der) in container.certificates.enumerated() {
            guard let certificate = try? Certificate(derEncoded: der) else {
                return .rejected(.malformed("certificate \(i + 1) is not an X.509 certificate"))
            }
            carried.append(certificate)
        }
        guard let issuer = try? DistinguishedName(derEncoded: container.signerIssuer) else {
            return .rejected(.malformed("the signer's issuer is not a name"))
        }
        let serial = Self.trimmed(container.signerSerial)
        guard let leafIndex = carried.firstIndex(where: { $0.issuer == issuer && Self.trimmed($0.serialNumber.bytes) == serial }) else {
            return .rejected(.brokenChain("the signer's certificate is not among those the receipt carries"))
        }
        let leaf = carried[leafIndex]
        var rest = carried
        rest.remove(at: leafIndex)
        let others = rest
        let result = BlockingAsync.run {
            var verifier = Verifier(rootCertificates: store) {
                RFC5280Policy.withValidityCheckDisabled()
                AppleChainPolicy()
            }
            return await verifier.validate(leaf: leaf, intermediates: CertificateStore(others))
        }
        switch result {
        case .validCertificate(let chain):
            guard let key = _RSA.Signing.PublicKey(leaf.publicKey), key.keySizeInBits >= 2048 else {
                return .rejected(.brokenChain("the signing certificate's key is not RSA of 2048 bits or more"))
            }
            return .trusted(leafKey: key, validity: zip(["leaf", "intermediate", "root"], chain).map { CertificateValidity(role: $0, $1) })
        case .couldNotValidate(let failures):
            return .rejected(classify(leaf: leaf, carried: others, roots: roots, failures: failures))
        }
    }

    /// `unknown_root` when no certificate of the receipt was issued by a configured root (one that
    /// only looks like Apple's lands here); otherwise the chain reaches a root but breaks a rule.
    static func classify(
        leaf: Certificate, carried: [Certificate], roots: [Certificate],
        failures: [CertificateValidationResult.PolicyFailure]
    ) -> SignedDataRejection {
        func issued(_ child: Certificate, by parent: Certificate) -> Bool {
            parent.subject == child.issuer && parent.publicKey.isValidSignature(child.signature, for: child)
        }
        let reachesRoot = ([leaf] + carried).contains { c in roots.contains { issued(c, by: $0) || $0 == c } }
        guard reachesRoot else { return .unknownRoot }
        if let reason = failures.first?.policyFailureReason.description {
            return .brokenChain(ChainValidation.shortReason(reason))
        }
        return .brokenChain("no chain from the signing certificate reaches a configured root")
    }

    /// An INTEGER's bytes without the leading zero that keeps it positive.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var bytes = bytes
        while bytes.count > 1, bytes.first == 0 { bytes = bytes.dropFirst() }
        return bytes
    }
}
