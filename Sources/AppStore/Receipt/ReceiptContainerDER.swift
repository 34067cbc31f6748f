// The container of an app receipt read from its bytes when it is in the form Apple writes: strict
// DER, single-byte tags, minimal definite lengths, no signed attributes, the expected algorithm
// identifiers. No tree is built: swift-asn1's parse of the whole container, its three
// certificates included, was a quarter of the verifier's time on every receipt, though the
// certificates are judged once per set (the chain cache). Any other form gives nil and
// `BER.parse` reads it and names what is wrong (ReceiptContainer.init); a test holds the two
// readers equal on every receipt this one reads.

import Reconciliation
import SwiftASN1

extension ReceiptContainer {
    /// The container in `b`, or nil when `b` is not exactly Apple's form (the BER reader then decides).
    static func der(_ b: ArraySlice<UInt8>) -> ReceiptContainer? {
        // Read over the bytes in place (the slice's checked subscript, and a slice retained per
        // part, were a third of this reader's time); its parts are then slices of `b`.
        guard let parts = b.withUnsafeBufferPointer({ DERContainer.read($0) }) else { return nil }
        func slice(_ r: Range<Int>) -> ArraySlice<UInt8> {
            b[(b.startIndex + r.lowerBound)..<(b.startIndex + r.upperBound)]
        }
        return ReceiptContainer(
            certificates: parts.certificates.map(slice), signerID: slice(parts.signerID),
            signerIssuer: slice(parts.signerIssuer), signerSerial: slice(parts.signerSerial),
            digest: parts.digest, signature: slice(parts.signature), content: slice(parts.content),
            signedAttributes: nil)
    }
}

/// Where a container's parts lie in its bytes, read in Apple's form (`ReceiptContainer.der`).
private struct DERContainer {
    var certificates: [Range<Int>] = []
    var signerID = 0..<0, signerIssuer = 0..<0, signerSerial = 0..<0, signature = 0..<0, content = 0..<0
    var digest = ReceiptContainer.DigestAlgorithm.sha256

    typealias Bytes = UnsafeBufferPointer<UInt8>

    static func read(_ b: Bytes) -> DERContainer? {
        var parts = DERContainer()
        // ContentInfo { signedData, [0] SignedData }
        guard let data = typed(b, at: 0, end: b.count, type: DEROIDs.signedData, tag: 0x30), data.next == b.count
        else { return nil }
        let end = data.content.upperBound
        // SignedData { version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls?, signerInfos }
        guard let version = DERAttributes.element(b, at: data.content.lowerBound, end: end), version.tag == 0x02,
            DERAttributes.nonNegative(b, version.content) != nil,
            let digestSet = DERAttributes.element(b, at: version.next, end: end), digestSet.tag == 0x31,
            let digests = algorithms(b, in: digestSet.content),
            let content = typed(b, at: digestSet.next, end: end, type: DEROIDs.data, tag: 0x04),
            let carried = DERAttributes.element(b, at: content.next, end: end), carried.tag == 0xA0
        else { return nil }
        parts.content = content.content
        parts.certificates.reserveCapacity(3)
        var i = carried.content.lowerBound
        while i < carried.content.upperBound {
            guard parts.certificates.count < ReceiptContainer.certificateCount.upperBound,
                let certificate = DERAttributes.element(b, at: i, end: carried.content.upperBound),
                certificate.tag == 0x30, certificate.next - i <= ReceiptContainer.maxCertificateBytes
            else { return nil }
            parts.certificates.append(i..<certificate.next)
            i = certificate.next
        }
        guard ReceiptContainer.certificateCount.contains(parts.certificates.count),
            var signers = DERAttributes.element(b, at: carried.next, end: end)
        else { return nil }
        if signers.tag == 0xA1 {
            guard let next = DERAttributes.element(b, at: signers.next, end: end) else { return nil }
            signers = next
        }
        guard signers.tag == 0x31, signers.next == end,
            let signer = DERAttributes.element(b, at: signers.content.lowerBound, end: signers.content.upperBound),
            signer.tag == 0x30, signer.next == signers.content.upperBound,
            parts.signer(b, in: signer.content, digests: digests)
        else { return nil }
        return parts
    }

    /// SignerInfo { version, IssuerAndSerialNumber, digestAlgorithm, signatureAlgorithm, signature,
    /// [1] unsignedAttrs? }, without signed attributes (Apple's have none; any go to BER.parse).
    private mutating func signer(_ b: Bytes, in range: Range<Int>, digests: Digests) -> Bool {
        let end = range.upperBound
        guard let version = DERAttributes.element(b, at: range.lowerBound, end: end), version.tag == 0x02,
            DERAttributes.nonNegative(b, version.content) != nil,
            let id = DERAttributes.element(b, at: version.next, end: end), id.tag == 0x30,
            let issuer = DERAttributes.element(b, at: id.content.lowerBound, end: id.content.upperBound),
            issuer.tag == 0x30,
            let serial = DERAttributes.element(b, at: issuer.next, end: id.content.upperBound), serial.tag == 0x02,
            serial.next == id.content.upperBound,
            let digest = Self.algorithm(b, at: id.next, end: end),
            let signature = Self.algorithm(b, at: digest.next, end: end),
            let value = DERAttributes.element(b, at: signature.next, end: end), value.tag == 0x04
        else { return false }
        if value.next != end {
            guard let unsigned = DERAttributes.element(b, at: value.next, end: end), unsigned.tag == 0xA1,
                unsigned.next == end
            else { return false }
        }
        let named: ReceiptContainer.DigestAlgorithm
        if Self.equal(b, digest.oid, DEROIDs.sha1), digests.sha1 {
            named = .sha1
        } else if Self.equal(b, digest.oid, DEROIDs.sha256), digests.sha256 {
            named = .sha256
        } else {
            return false
        }
        let combined = named == .sha1 ? DEROIDs.sha1WithRSA : DEROIDs.sha256WithRSA
        guard Self.equal(b, signature.oid, DEROIDs.rsaEncryption) || Self.equal(b, signature.oid, combined) else {
            return false
        }
        (signerID, signerIssuer, signerSerial) = (
            version.next..<id.next, id.content.lowerBound..<issuer.next, serial.content
        )
        (self.digest, self.signature) = (named, value.content)
        return true
    }

    /// SEQUENCE { `type`, [0] { one element tagged `tag` } }, the shape of ContentInfo and of
    /// encapContentInfo: that element's content and where the SEQUENCE ends.
    private static func typed(
        _ b: Bytes, at i: Int, end: Int, type: [UInt8], tag: UInt8
    ) -> (content: Range<Int>, next: Int)? {
        guard let info = DERAttributes.element(b, at: i, end: end), info.tag == 0x30,
            let oid = DERAttributes.element(b, at: info.content.lowerBound, end: info.content.upperBound),
            oid.tag == 0x06, equal(b, oid.content, type),
            let wrap = DERAttributes.element(b, at: oid.next, end: info.content.upperBound), wrap.tag == 0xA0,
            wrap.next == info.content.upperBound,
            let inner = DERAttributes.element(b, at: wrap.content.lowerBound, end: wrap.content.upperBound),
            inner.tag == tag, inner.next == wrap.content.upperBound
        else { return nil }
        return (inner.content, info.next)
    }

    /// Which digests the SignedData's digestAlgorithms name.
    private struct Digests {
        var sha1 = false, sha256 = false
    }

    /// The SET OF AlgorithmIdentifier in `range`, each SHA-1 or SHA-256.
    private static func algorithms(_ b: Bytes, in range: Range<Int>) -> Digests? {
        var digests = Digests()
        var i = range.lowerBound
        while i < range.upperBound {
            guard let a = algorithm(b, at: i, end: range.upperBound) else { return nil }
            if equal(b, a.oid, DEROIDs.sha1) {
                digests.sha1 = true
            } else if equal(b, a.oid, DEROIDs.sha256) {
                digests.sha256 = true
            } else {
                return nil
            }
            i = a.next
        }
        return digests
    }

    /// AlgorithmIdentifier { OID, parameters? }: the OID's content.
    private static func algorithm(_ b: Bytes, at i: Int, end: Int) -> (oid: Range<Int>, next: Int)? {
        guard let a = DERAttributes.element(b, at: i, end: end), a.tag == 0x30,
            let oid = DERAttributes.element(b, at: a.content.lowerBound, end: a.content.upperBound), oid.tag == 0x06
        else { return nil }
        if oid.next != a.content.upperBound {
            guard let parameters = DERAttributes.element(b, at: oid.next, end: a.content.upperBound),
                parameters.next == a.content.upperBound
            else { return nil }
        }
        return (oid.content, a.next)
    }

    private static func equal(_ b: Bytes, _ r: Range<Int>, _ expected: [UInt8]) -> Bool {
        r.count == expected.count && UnsafeBufferPointer(rebasing: b[r]).elementsEqual(expected)
    }
}

/// The content bytes of the object identifiers the DER reader compares, encoded once by swift-asn1
/// from `ReceiptContainer`'s own identifiers.
enum DEROIDs {
    static let signedData = content(ReceiptContainer.signedDataOID)
    static let data = content(ReceiptContainer.dataOID)
    static let sha1 = content(ReceiptContainer.sha1OID)
    static let sha256 = content(ReceiptContainer.sha256OID)
    static let rsaEncryption = content(ReceiptContainer.rsaEncryptionOID)
    static let sha1WithRSA = content(ReceiptContainer.sha1WithRSAOID)
    static let sha256WithRSA = content(ReceiptContainer.sha256WithRSAOID)

    private static func content(_ oid: ASN1ObjectIdentifier) -> [UInt8] {
        var serializer = DER.Serializer()
        // Serializing a valid identifier cannot fail; an empty result would only make the DER reader decline.
        guard (try? serializer.serialize(oid)) != nil else { return [] }
        return Array(serializer.serializedBytes.dropFirst(2))
    }
}
