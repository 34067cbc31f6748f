// The PKCS#7 container of an app receipt (RFC 2315 SignedData, as Apple signs it): Apple's own
// form read from the bytes (ReceiptContainerDER.swift), any other with swift-asn1's BER parser,
// which keeps every length inside its parent, allows indefinite lengths only on constructed
// values and refuses trailing bytes. Here only the shape and the limits are
// checked; the certificates are judged, and the signature checked, by `AppReceiptVerifier`.

import StrictJSON
import Reconciliation
import SwiftASN1

/// What the receipt's signature covers and who signed it, read out of the container without
/// believing any of it yet.
struct ReceiptContainer: Sendable {
    /// The hash the signer used (`digestAlgorithm`, restated by the signature algorithm if it names one).
    enum DigestAlgorithm: Sendable, Equatable {
        case sha1
        case sha256
    }

    // Slices of the receipt's bytes, not copies.
    /// The certificates the receipt carries, as DER, in their order: candidates, never anchors.
    let certificates: [ArraySlice<UInt8>]
    /// The signer's IssuerAndSerialNumber as encoded; then its issuer's encoded name and its serial number.
    let signerID: ArraySlice<UInt8>
    let signerIssuer: ArraySlice<UInt8>
    let signerSerial: ArraySlice<UInt8>
    let digest: DigestAlgorithm
    /// The RSA PKCS#1 v1.5 signature over `content` (or over the signed attributes when present).
    let signature: ArraySlice<UInt8>
    /// The payload: the ASN.1 SET of receipt attributes.
    let content: ArraySlice<UInt8>
    /// The DER of the signed attributes as signed (their SET tag restored), and the message digest
    /// they state; nil when absent, as in Apple's receipts.
    let signedAttributes: (der: [UInt8], messageDigest: [UInt8])?
    /// Whether the certificates' insides were walked with the rest of the container (false: read in
    /// Apple's form, see `wholeCertificates`).
    var certificatesWalked = true

    /// A receipt is at most this long once base64-decoded (Apple's are a few kilobytes).
    static let maxBytes = 1 << 20
    /// Nesting deeper than this is not a receipt (Apple's container is 9 deep, the payload 3).
    static let maxDepth = 16
    /// Carried certificates: at least leaf and intermediate, at most a few more.
    static let certificateCount = 2...10
    static let maxCertificateBytes = 16 * 1024

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let sha1OID: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let sha256OID: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let rsaEncryptionOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]
    static let sha1WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 5]
    static let sha256WithRSAOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 11]
    static let messageDigestOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]

    /// The container of `bytes`; throws `SignedDataRejection.malformed` naming the first part that
    /// is not as Apple signs it.
    init(_ bytes: [UInt8]) throws(SignedDataRejection) {
        guard !bytes.isEmpty else { throw .malformed("the receipt is empty") }
        guard bytes.count <= Self.maxBytes else {
            throw .malformed("the receipt is \(bytes.count) bytes, more than \(Self.maxBytes)")
        }
        // Apple's form, read from the bytes; its depth walk also checks that every element stays
        // inside its parent, but for the certificates' insides: those are walked only when the chain
        // is judged (`wholeCertificates`), since the chain cache knows the same bytes after the first
        // receipt (walked on every receipt, they were a twentieth of the verifier's time). Anything
        // else is BER.parse's to read and judge.
        if var container = Self.der(bytes[...]), let first = container.certificates.first,
            let last = container.certificates.last,
            let depth = Self.depth(of: bytes[...], skipping: first.startIndex..<last.endIndex), depth <= Self.maxDepth
        {
            container.certificatesWalked = false
            self = container
            return
        }
        self = try Self.ber(bytes)
    }

    /// Before the certificates are judged: when their insides were not walked with the rest (Apple's
    /// form), `bytes` (this container's receipt) walked whole; throws what `init` would have thrown
    /// walking them then.
    func wholeCertificates(_ bytes: [UInt8]) throws(SignedDataRejection) {
        guard !certificatesWalked else { return }
        if let depth = Self.depth(of: bytes[...]), depth <= Self.maxDepth { return }
        _ = try Self.ber(bytes)
        throw .malformed("nested too deep, more than \(Self.maxDepth)")
    }

    /// The container as swift-asn1's BER parser reads it, whatever its form (the size checked).
    static func ber(_ bytes: [UInt8]) throws(SignedDataRejection) -> ReceiptContainer {
        let root: ASN1Node
        do {
            root = try BER.parse(bytes)
        } catch {
            throw .malformed("not a BER encoding (\(Self.reason(error)))")
        }
        let depth = Self.depth(of: bytes[...])
        guard let depth, depth <= Self.maxDepth else {
            throw .malformed("nested \(depth.map(String.init) ?? "too") deep, more than \(Self.maxDepth)")
        }
        do {
            return try Self.signedData(root)
        } catch let rejection as SignedDataRejection {
            throw rejection
        } catch {
            throw .malformed("not PKCS#7 signed data (\(Self.reason(error)))")
        }
    }

    init(
        certificates: [ArraySlice<UInt8>], signerID: ArraySlice<UInt8>, signerIssuer: ArraySlice<UInt8>,
        signerSerial: ArraySlice<UInt8>, digest: DigestAlgorithm, signature: ArraySlice<UInt8>,
        content: ArraySlice<UInt8>,
        signedAttributes: (der: [UInt8], messageDigest: [UInt8])?
    ) {
        self.certificates = certificates
        self.signerID = signerID
        self.signerIssuer = signerIssuer
        self.signerSerial = signerSerial
        self.digest = digest
        self.signature = signature
        self.content = content
        self.signedAttributes = signedAttributes
    }

    /// ContentInfo { signedData, [0] SignedData { version, digestAlgorithms, encapContentInfo,
    /// [0] certificates, [1] crls?, signerInfos } }.
    private static func signedData(_ root: ASN1Node) throws -> ReceiptContainer {
        try BER.sequence(root, identifier: .sequence) { nodes in
            let type = try ASN1ObjectIdentifier(berEncoded: &nodes)
            guard type == signedDataOID else { throw SignedDataRejection.malformed("content type \(type), not signed data") }
            let container = try BER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
                try BER.sequence(node, identifier: .sequence) { inner in try Self.fields(&inner) }
            }
            guard nodes.next() == nil else { throw SignedDataRejection.malformed("content info has trailing fields") }
            return container
        }
    }

    private static func fields(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ReceiptContainer {
        _ = try Int(berEncoded: &nodes)
        let digests = try BER.set(of: AlgorithmIdentifierOID.self, identifier: .set, nodes: &nodes)
        let content = try encapsulatedContent(&nodes)
        let certificates = try BER.optionalImplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { node in
            guard case .constructed(let children) = node.content else {
                throw SignedDataRejection.malformed("certificates are primitive")
            }
            return children.map(\.encodedBytes)
        }
        _ = try BER.optionalImplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { _ in () }
        guard let signerSet = nodes.next(), nodes.next() == nil else {
            throw SignedDataRejection.malformed("signed data has no signer infos, or fields after them")
        }
        let signers = try BER.set(signerSet, identifier: .set) { inner in
            var all: [ASN1Node] = []
            while let node = inner.next() { all.append(node) }
            return all
        }
        guard signers.count == 1 else { throw SignedDataRejection.malformed("\(signers.count) signers, not one") }
        guard let carried = certificates, Self.certificateCount.contains(carried.count) else {
            let n = certificates?.count ?? 0
            throw SignedDataRejection.malformed(
                "\(n) certificates, not \(Self.certificateCount.lowerBound) to \(Self.certificateCount.upperBound)")
        }
        if let big = carried.firstIndex(where: { $0.count > Self.maxCertificateBytes }) {
            throw SignedDataRejection.malformed(
                "certificate \(big + 1) is \(carried[big].count) bytes, more than \(Self.maxCertificateBytes)")
        }
        return try signer(signers[0], digests: digests.map(\.oid), certificates: carried, content: content)
    }

    /// encapContentInfo { id-data, [0] OCTET STRING }: the payload.
    private static func encapsulatedContent(_ nodes: inout ASN1NodeCollection.Iterator) throws -> ArraySlice<UInt8> {
        guard let node = nodes.next() else { throw SignedDataRejection.malformed("no encapsulated content") }
        return try BER.sequence(node, identifier: .sequence) { inner in
            let type = try ASN1ObjectIdentifier(berEncoded: &inner)
            guard type == dataOID else { throw SignedDataRejection.malformed("encapsulated content type \(type), not data") }
            guard
                let octets = try BER.optionalExplicitlyTagged(
                    &inner, tagNumber: 0, tagClass: .contextSpecific,
                    {
                        try ASN1OctetString(berEncoded: $0)
                    })
            else { throw SignedDataRejection.malformed("the receipt carries no content (a detached signature)") }
            return octets.bytes
        }
    }

    /// SignerInfo { version, IssuerAndSerialNumber, digestAlgorithm, [0] signedAttrs?,
    /// signatureAlgorithm, signature, [1] unsignedAttrs? }.
    private static func signer(
        _ node: ASN1Node, digests: [ASN1ObjectIdentifier], certificates: [ArraySlice<UInt8>], content: ArraySlice<UInt8>
    ) throws -> ReceiptContainer {
        try BER.sequence(node, identifier: .sequence) { nodes in
            _ = try Int(berEncoded: &nodes)
            let (id, issuer, serial) = try issuerAndSerial(&nodes)
            let digestOID = try AlgorithmIdentifierOID(berEncoded: &nodes).oid
            let attributes = try BER.optionalImplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                try signedAttributes($0)
            }
            let signatureOID = try AlgorithmIdentifierOID(berEncoded: &nodes).oid
            let signature = try ASN1OctetString(berEncoded: &nodes)
            _ = try BER.optionalImplicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { _ in () }
            guard nodes.next() == nil else { throw SignedDataRejection.malformed("signer info has trailing fields") }
            guard digests.contains(digestOID) else {
                throw SignedDataRejection.malformed("the signer's digest \(digestOID) is not among the signed data's")
            }
            let digest = try Self.digest(digestOID, signature: signatureOID)
            return ReceiptContainer(
                certificates: certificates, signerID: id, signerIssuer: issuer, signerSerial: serial, digest: digest,
                signature: signature.bytes, content: content, signedAttributes: attributes)
        }
    }

    private static func issuerAndSerial(
        _ nodes: inout ASN1NodeCollection.Iterator
    ) throws -> (ArraySlice<UInt8>, ArraySlice<UInt8>, ArraySlice<UInt8>) {
        guard let node = nodes.next() else { throw SignedDataRejection.malformed("signer info has no issuer and serial") }
        return try BER.sequence(node, identifier: .sequence) { inner in
            guard let issuer = inner.next(), issuer.identifier == .sequence else {
                throw SignedDataRejection.malformed("the signer's issuer is not a name")
            }
            guard let serial = inner.next(), serial.identifier == .integer, case .primitive(let bytes) = serial.content,
                inner.next() == nil
            else { throw SignedDataRejection.malformed("the signer's serial number is not an integer") }
            return (node.encodedBytes, issuer.encodedBytes, bytes)
        }
    }

    /// RSA PKCS#1 v1.5 with SHA-1 or SHA-256: `rsaEncryption` with the digest named apart (as
    /// Apple signs), or the combined identifier, which must name the same digest.
    private static func digest(_ digest: ASN1ObjectIdentifier, signature: ASN1ObjectIdentifier) throws -> DigestAlgorithm {
        let named: DigestAlgorithm
        switch digest {
        case sha1OID: named = .sha1
        case sha256OID: named = .sha256
        default: throw SignedDataRejection.malformed("digest algorithm \(digest), not SHA-1 or SHA-256")
        }
        switch signature {
        case rsaEncryptionOID: return named
        case sha1WithRSAOID where named == .sha1: return named
        case sha256WithRSAOID where named == .sha256: return named
        default: throw SignedDataRejection.malformed("signature algorithm \(signature) with digest \(digest)")
        }
    }

    /// The signed attributes' DER as signed (tagged SET OF, RFC 5652 §5.4) and their message digest.
    private static func signedAttributes(_ node: ASN1Node) throws -> (der: [UInt8], messageDigest: [UInt8]) {
        guard case .constructed(let attributes) = node.content else {
            throw SignedDataRejection.malformed("signed attributes are primitive")
        }
        var digest: [UInt8]?
        for attribute in attributes {
            try BER.sequence(attribute, identifier: .sequence) { inner in
                let type = try ASN1ObjectIdentifier(berEncoded: &inner)
                guard type == messageDigestOID else { return }
                guard digest == nil else { throw SignedDataRejection.malformed("two message digest attributes") }
                digest = try BER.set(of: ASN1OctetString.self, identifier: .set, nodes: &inner).first.map { Array($0.bytes) }
            }
        }
        guard let digest else { throw SignedDataRejection.malformed("signed attributes without a message digest") }
        var der = Array(node.encodedBytes)
        // Signed as a SET OF, not with the [0] IMPLICIT tag it is carried under.
        guard der.first == 0xA0 else { throw SignedDataRejection.malformed("signed attributes are not DER") }
        der[0] = 0x31
        return (der, digest)
    }

    /// How deep the parsed tree goes (the root is 1): what the tests hold the byte walk below to.
    static func depth(of node: ASN1Node) -> Int {
        guard case .constructed(let children) = node.content else { return 1 }
        return 1 + children.reduce(0) { max($0, depth(of: $1)) }
    }

    /// The deepest nesting of the BER encodings in `bytes` (a primitive alone: 1), read from the
    /// bytes with a stack of where each open element ends: `depth(of:)` over the parsed tree made a
    /// node collection per level, each checking all its nodes again (a seventh of the verifier's
    /// time). nil when the bytes are not whole encodings (an element running past its parent or the
    /// end, an indefinite length left open, a length over 8 bytes); the callers read only bytes
    /// `BER.parse` accepted, so nil there means a bug, and it rejects.
    /// `skipping`: a run of whole elements (indices of `bytes`) counted as one primitive, not walked.
    static func depth(of bytes: ArraySlice<UInt8>, skipping: Range<Int>? = nil) -> Int? {
        // Over the bytes in place: the slice's checked subscript was most of this walk's time.
        let skip = skipping.map { ($0.lowerBound - bytes.startIndex)..<($0.upperBound - bytes.startIndex) }
        return bytes.withUnsafeBufferPointer { depth(of: $0, skipping: skip) }
    }

    private static func depth(of bytes: UnsafeBufferPointer<UInt8>, skipping skip: Range<Int>?) -> Int? {
        var i = 0
        let end = bytes.count
        // Each open constructed element: where it ends (-1: an indefinite length), and the nearest
        // definite end it must stay inside (its own, or its parent's).
        var ends: [Int] = [], limits: [Int] = []
        ends.reserveCapacity(maxDepth + 1)
        limits.reserveCapacity(maxDepth + 1)
        var deepest = 0
        while true {
            while let last = ends.last, i == last {
                ends.removeLast()
                limits.removeLast()
            }
            if i == end { return ends.isEmpty ? deepest : nil }
            if let skip, i == skip.lowerBound {
                guard skip.upperBound <= (limits.last ?? end) else { return nil }
                deepest = max(deepest, ends.count + 1)
                i = skip.upperBound
                continue
            }
            if let last = ends.last, last == -1, bytes[i] == 0, i + 1 < end, bytes[i + 1] == 0 {
                ends.removeLast()
                limits.removeLast()
                i += 2
                continue
            }
            let tag = bytes[i]
            i += 1
            if tag & 0x1F == 0x1F {
                // A tag number over 30: base-128 bytes, the last without its high bit.
                while true {
                    guard i < end else { return nil }
                    let b = bytes[i]
                    i += 1
                    if b & 0x80 == 0 { break }
                }
            }
            guard i < end else { return nil }
            let first = bytes[i]
            i += 1
            var length: Int?
            if first < 0x80 {
                length = Int(first)
            } else if first > 0x80 {
                let n = Int(first & 0x7F)
                guard n <= 8, n <= end - i else { return nil }
                var l = 0
                for _ in 0..<n {
                    guard l <= Int.max >> 8 else { return nil }
                    l = l << 8 | Int(bytes[i])
                    i += 1
                }
                length = l
            }
            let limit = limits.last ?? end
            if tag & 0x20 != 0 {
                if let l = length {
                    guard l <= limit - i else { return nil }
                    ends.append(i + l)
                    limits.append(i + l)
                } else {
                    ends.append(-1)
                    limits.append(limit)
                }
                deepest = max(deepest, ends.count)
            } else {
                guard let l = length, l <= limit - i else { return nil }
                deepest = max(deepest, ends.count + 1)
                i += l
            }
        }
    }

    /// swift-asn1's reason, on one short line.
    static func reason(_ error: Error) -> String {
        if let asn1 = error as? ASN1Error { return Sanitized.text(String(describing: asn1.code).utf8, limit: 80) }
        return Sanitized.text(String(describing: error).utf8, limit: 80)
    }
}

/// An AlgorithmIdentifier whose parameters are not read (NULL or absent for the digests and RSA).
struct AlgorithmIdentifierOID: BERParseable, DERParseable {
    let oid: ASN1ObjectIdentifier

    init(derEncoded node: ASN1Node) throws { try self.init(berEncoded: node) }

    init(berEncoded node: ASN1Node) throws {
        oid = try BER.sequence(node, identifier: .sequence) { nodes in
            let oid = try ASN1ObjectIdentifier(berEncoded: &nodes)
            _ = nodes.next()
            guard nodes.next() == nil else { throw SignedDataRejection.malformed("algorithm identifier has trailing fields") }
            return oid
        }
    }
}
