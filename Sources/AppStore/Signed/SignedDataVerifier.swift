// Verifying a StoreKit 2 signed transaction (and any other JWS Apple signs) without the network,
// as Apple's SignedDataVerifier does offline, with two
// differences: `Xcode` and `LocalTesting` transactions get every check (Apple's library skips
// them), and every field is read strictly (TransactionPayload.swift).
//
// The order of the checks: the JWS's form (segments, header, signature length), the payload's
// JSON and fields, the chain and its dates at `signedDate`, the signature, then the bundle.
// The first that fails is the reason; nothing that fails a check is believed.
//
// Cost (measured by `SignedTransactionTests.cacheCost`, see its output): a JWS whose
// (leaf, intermediate) pair was seen before costs the strict parsing, a date comparison and one
// P-256 signature check; a new pair adds swift-certificates' chain building with two P-384
// signature checks and three certificate parses.

import StrictJSON
import Crypto
import Foundation
import Reconciliation
import X509

public struct SignedDataVerifier: Sendable {
    /// The trust anchors: only these. x5c[2] of a JWS is never trusted, whatever it says.
    public let roots: [Certificate]
    private let store: CertificateStore
    private let cache: ChainCache<ChainKey, ChainCacheEntry>
    private let headers: HeaderMemo

    /// `cacheCapacity`: how many (leaf, intermediate) verdicts are kept (0: none, for measuring).
    public init(roots: [Certificate], cacheCapacity: Int = 64) {
        self.roots = roots
        self.store = CertificateStore(roots)
        self.cache = ChainCache(capacity: cacheCapacity)
        self.headers = HeaderMemo(capacity: cacheCapacity > 0 ? 8 : 0)
    }

    /// Three non-empty base64url segments joined by dots and nothing else: how the job tells a
    /// StoreKit 2 upload from an app receipt (standard base64 never holds a dot). Cheap; it does
    /// not decode anything.
    public static func isJWS(_ text: String) -> Bool {
        CompactJWS.looksLikeJWS(text)
    }

    /// `isJWS` over a stream of texts (the night's uploads), remembering the last header found in
    /// form so that the texts sharing it are not scanned whole again. The same answers as `isJWS`.
    public struct FormCheck: Sendable {
        private var knownHeader: [UInt8] = []
        public init() {}
        public mutating func isJWS(_ text: String) -> Bool {
            CompactJWS.looksLikeJWS(text, knownHeader: &knownHeader)
        }
    }

    /// A signed transaction (JWSTransactionDecodedPayload), verified, with every field read.
    /// `bundleIDs`: the job's `IAP_BUNDLE_IDS`; nil or empty means any bundle (as for verifyReceipt).
    public func verifyTransaction(_ jws: String, bundleIDs: Set<String>?) -> Result<SignedTransaction, SignedDataRejection> {
        let result = verify(jws) { doc, signedDate in
            try TransactionPayloadReader(doc: doc).read(signedDate: signedDate)
        }
        // Moved out of the result, not copied (a transaction holds a dozen strings).
        let transaction: SignedTransaction
        switch consume result {
        case .success(let verified): transaction = verified.value
        case .failure(let rejection): return .failure(rejection)
        }
        if let bundleIDs, !bundleIDs.isEmpty {
            let bundle = transaction.transaction.bundleID ?? ""
            guard bundleIDs.contains(bundle) else {
                return .failure(.wrongBundle("bundle \(Sanitized.text(bundle.utf8, limit: 60)) is not allowed"))
            }
        }
        return .success(transaction)
    }

    /// Any JWS Apple signs with this chain (a notification's `signedPayload`, a Server API
    /// answer's signed objects): form, chain at the payload's `signedDate`, signature. The payload
    /// is a strictly scanned JSON object with an integer `signedDate`; reading its other fields
    /// is the caller's.
    public func verifySignedObject(_ jws: String) -> Result<SignedObject, SignedDataRejection> {
        verify(jws) { _, _ in () }.map { SignedObject(payload: $0.payload, signedDate: $0.signedDate) }
    }

    // MARK: The checks

    struct Verified<T> {
        var value: T
        var payload: [UInt8]
        var signedDate: EpochMillis
    }

    /// Parses and checks `jws`; `read` turns the payload (already known to be an object with a
    /// valid `signedDate`) into a value and throws `Garbage` naming a field it refuses.
    func verify<T>(_ jws: String, read: (JSONDocument, EpochMillis) throws -> T) -> Result<Verified<T>, SignedDataRejection> {
        do {
            let parts = try CompactJWS.parse(jws, memo: headers)
            let (signedDate, value) = try parts.payload.withUnsafeBufferPointer { buffer throws -> (EpochMillis, T) in
                let doc: JSONDocument
                do {
                    doc = try JSONDocument(buffer)
                } catch {
                    throw SignedDataRejection.malformed(CompactJWS.jsonProblem("payload", error))
                }
                do {
                    let signedDate = try doc.signedDate()
                    return (signedDate, try read(doc, signedDate))
                } catch let garbage as Garbage {
                    throw SignedDataRejection.malformed("payload " + garbage.problem)
                }
            }
            let key = try leafKey(parts, signedDate: signedDate)
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature),
                  key.isValidSignature(signature, for: parts.signingDigest)
            else { throw SignedDataRejection.badSignature }
            return .success(Verified(value: value, payload: parts.payload, signedDate: signedDate))
        } catch let rejection as SignedDataRejection {
            return .failure(rejection)
        } catch {
            return .failure(.malformed("unreadable (\(type(of: error)))"))
        }
    }

    /// The leaf's key when the chain is good at `signedDate`; otherwise throws the rejection.
    private func leafKey(_ jws: CompactJWS, signedDate: EpochMillis) throws -> P256.Signing.PublicKey {
        let key = ChainKey(leaf: jws.certificates[0], intermediate: jws.certificates[1])
        if let entry = jws.knownChain ?? cache.entry(key) {
            if jws.knownChain == nil, let header = jws.header { headers.remember(entry, forHeader: header) }
            if entry.rootDER != jws.certificates[2] { _ = try certificate(jws, 2) }
            switch entry.verdict {
            case .rejected(let rejection):
                throw rejection
            case .trusted(let chain):
                if chain.covers(signedDate) { return chain.leafKey }
                // Outside the kept chain's dates. Rare (an expired leaf); the Verifier decides at
                // this date, since another configured root might still cover it.
                let recheck = ChainValidation.validate(leaf: try certificate(jws, 0), intermediate: try certificate(jws, 1),
                                                       roots: store, at: ChainValidation.date(signedDate))
                if case .validCertificate(let valid) = recheck, let other = TrustedChain(valid) { return other.leafKey }
                throw chain.expiry(at: signedDate)
            }
        }
        let leaf = try certificate(jws, 0)
        let intermediate = try certificate(jws, 1)
        _ = try certificate(jws, 2)
        let verdict = ChainValidation.judge(leaf: leaf, intermediate: intermediate, roots: roots, store: store,
                                            signedDate: signedDate)
        let entry = ChainCacheEntry(verdict: verdict, rootDER: jws.certificates[2])
        cache.store(entry, for: key)
        if let header = jws.header { headers.remember(entry, forHeader: header) }
        switch verdict {
        case .rejected(let rejection):
            throw rejection
        case .trusted(let chain):
            guard chain.covers(signedDate) else { throw chain.expiry(at: signedDate) }
            return chain.leafKey
        }
    }

    private func certificate(_ jws: CompactJWS, _ position: Int) throws -> Certificate {
        do {
            return try Certificate(derEncoded: jws.certificates[position])
        } catch {
            throw SignedDataRejection.malformed("header x5c[\(position)] is not a DER X.509 certificate")
        }
    }

    /// How many chain verdicts are kept now (for tests and the job's metrics).
    public var cachedChainCount: Int { cache.count }
}
