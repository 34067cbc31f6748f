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
        // ContentInfo { signedData, [0] SignedData }
        guard let data = typed(b, at: b.startIndex, end: b.endIndex, type: DEROIDs.signedData, tag: 0x30),
            data.next == b.endIndex
        else { return nil }
        let end = data.content.upperBound
        // SignedData { version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls?, signerInfos }
        guard let version = DERAttributes.element(b, at: data.content.lowerBound, end: end), version.tag == 0x02,
            DERAttributes.nonNegative(b, version.content) != nil,
            let digestSet = DERAttributes.element(b, at: version.next, end: end), digestSet.tag == 0x31,
            let digests = algorithms(b, in: digestSet.content),
            let content = encapsulated(b, at: digestSet.next, end: end),
            let carried = DERAttributes.element(b, at: content.next, end: end), carried.tag == 0xA0
        else { return nil }
        var certificates: [ArraySlice<UInt8>] = []
        var i = carried.content.lowerBound
        while i < carried.content.upperBound {
            guard certificates.count < certificateCount.upperBound,
                let certificate = DERAttributes.element(b, at: i, end: carried.content.upperBound),
                certificate.tag == 0x30, certificate.next - i <= maxCertificateBytes
            else { return nil }
            certificates.append(b[i..<certificate.next])
            i = certificate.next
        }
        guard certificateCount.contains(certificates.count),
            var signers = DERAttributes.element(b, at: carried.next, end: end)
        else { return nil }
        if signers.tag == 0xA1 {
            guard let next = DERAttributes.element(b, at: signers.next, end: end) else { return nil }
            signers = next
        }
        guard signers.tag == 0x31, signers.next == end,
            let signer = DERAttributes.element(b, at: signers.content.lowerBound, end: signers.content.upperBound),
            signer.tag == 0x30, signer.next == signers.content.upperBound
        else { return nil }
        return self.signer(b, in: signer.content, digests: digests, certificates: certificates, content: content.bytes)
    }

    /// SignerInfo { version, IssuerAndSerialNumber, digestAlgorithm, signatureAlgorithm, signature,
    /// [1] unsignedAttrs? }, without signed attributes (Apple's have none; any go to BER.parse).
    private static func signer(
        _ b: ArraySlice<UInt8>, in range: Range<Int>, digests: [ArraySlice<UInt8>], certificates: [ArraySlice<UInt8>],
        content: ArraySlice<UInt8>
    ) -> ReceiptContainer? {
        let end = range.upperBound
        guard let version = DERAttributes.element(b, at: range.lowerBound, end: end), version.tag == 0x02,
            DERAttributes.nonNegative(b, version.content) != nil,
            let id = DERAttributes.element(b, at: version.next, end: end), id.tag == 0x30,
            let issuer = DERAttributes.element(b, at: id.content.lowerBound, end: id.content.upperBound),
            issuer.tag == 0x30,
            let serial = DERAttributes.element(b, at: issuer.next, end: id.content.upperBound), serial.tag == 0x02,
            serial.next == id.content.upperBound,
            let digest = algorithm(b, at: id.next, end: end),
            let signature = algorithm(b, at: digest.next, end: end),
            let value = DERAttributes.element(b, at: signature.next, end: end), value.tag == 0x04
        else { return nil }
        if value.next != end {
            guard let unsigned = DERAttributes.element(b, at: value.next, end: end), unsigned.tag == 0xA1,
                unsigned.next == end
            else { return nil }
        }
        guard digests.contains(where: { $0.elementsEqual(digest.oid) }) else { return nil }
        let named: DigestAlgorithm
        if digest.oid.elementsEqual(DEROIDs.sha1) {
            named = .sha1
        } else if digest.oid.elementsEqual(DEROIDs.sha256) {
            named = .sha256
        } else {
            return nil
        }
        let combined = named == .sha1 ? DEROIDs.sha1WithRSA : DEROIDs.sha256WithRSA
        guard signature.oid.elementsEqual(DEROIDs.rsaEncryption) || signature.oid.elementsEqual(combined) else {
            return nil
        }
        return ReceiptContainer(
            certificates: certificates, signerID: b[version.next..<id.next],
            signerIssuer: b[id.content.lowerBound..<issuer.next], signerSerial: b[serial.content],
            digest: named, signature: b[value.content], content: content, signedAttributes: nil)
    }

    /// encapContentInfo { id-data, [0] { OCTET STRING } }, the string primitive.
    private static func encapsulated(
        _ b: ArraySlice<UInt8>, at i: Int, end: Int
    ) -> (bytes: ArraySlice<UInt8>, next: Int)? {
        typed(b, at: i, end: end, type: DEROIDs.data, tag: 0x04).map { (b[$0.content], $0.next) }
    }

    /// SEQUENCE { `type`, [0] { one element tagged `tag` } }, the shape of ContentInfo and of
    /// encapContentInfo: that element's content and where the SEQUENCE ends.
    private static func typed(
        _ b: ArraySlice<UInt8>, at i: Int, end: Int, type: [UInt8], tag: UInt8
    ) -> (content: Range<Int>, next: Int)? {
        guard let info = DERAttributes.element(b, at: i, end: end), info.tag == 0x30,
            let oid = DERAttributes.element(b, at: info.content.lowerBound, end: info.content.upperBound),
            oid.tag == 0x06, b[oid.content].elementsEqual(type),
            let wrap = DERAttributes.element(b, at: oid.next, end: info.content.upperBound), wrap.tag == 0xA0,
            wrap.next == info.content.upperBound,
            let inner = DERAttributes.element(b, at: wrap.content.lowerBound, end: wrap.content.upperBound),
            inner.tag == tag, inner.next == wrap.content.upperBound
        else { return nil }
        return (inner.content, info.next)
    }

    /// The SET OF AlgorithmIdentifier in `range`: their OIDs, each SHA-1 or SHA-256.
    private static func algorithms(_ b: ArraySlice<UInt8>, in range: Range<Int>) -> [ArraySlice<UInt8>]? {
        var oids: [ArraySlice<UInt8>] = []
        var i = range.lowerBound
        while i < range.upperBound {
            guard let a = algorithm(b, at: i, end: range.upperBound),
                a.oid.elementsEqual(DEROIDs.sha1) || a.oid.elementsEqual(DEROIDs.sha256)
            else { return nil }
            oids.append(a.oid)
            i = a.next
        }
        return oids
    }

    /// AlgorithmIdentifier { OID, parameters? }: the OID's content bytes.
    private static func algorithm(_ b: ArraySlice<UInt8>, at i: Int, end: Int) -> (oid: ArraySlice<UInt8>, next: Int)? {
        guard let a = DERAttributes.element(b, at: i, end: end), a.tag == 0x30,
            let oid = DERAttributes.element(b, at: a.content.lowerBound, end: a.content.upperBound), oid.tag == 0x06
        else { return nil }
        if oid.next != a.content.upperBound {
            guard let parameters = DERAttributes.element(b, at: oid.next, end: a.content.upperBound),
                parameters.next == a.content.upperBound
            else { return nil }
        }
        return (b[oid.content], a.next)
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
