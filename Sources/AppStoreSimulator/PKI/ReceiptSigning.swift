// App receipts as Apple makes them: the payload an ASN.1 SET of SEQUENCE { type, version, value }
// ("Validating receipts on the device", "Receipt Fields"), signed into PKCS#7 SignedData with RSA
// PKCS#1 v1.5 and SHA-1 or SHA-256, the signer's algorithm `rsaEncryption` with the digest named
// apart, no signed attributes, the certificates carried leaf first. Dates are RFC 3339 text
// (IA5String); "none" is an empty string, as in Apple's receipts.

import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

public enum ReceiptSigning {
    /// The hash the receipt is signed with: SHA-1 (receipts before 2023), SHA-256 (since).
    public enum Digest: Sendable {
        case sha1
        case sha256

        var oid: ASN1ObjectIdentifier {
            switch self {
            case .sha1: return [1, 3, 14, 3, 2, 26]
            case .sha256: return [2, 16, 840, 1, 101, 3, 4, 2, 1]
            }
        }
    }

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let rsaEncryptionOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]

    /// PKCS#7 SignedData of `payload`, signed by `key` as `signer`, carrying `carried` in that order.
    public static func sign(
        _ payload: [UInt8], digest: Digest, signer: Certificate, key: _RSA.Signing.PrivateKey, carried: [Certificate]
    ) throws -> [UInt8] {
        let signature: _RSA.Signing.RSASignature
        switch digest {
        case .sha1: signature = try key.signature(for: Insecure.SHA1.hash(data: payload), padding: .insecurePKCS1v1_5)
        case .sha256: signature = try key.signature(for: SHA256.hash(data: payload), padding: .insecurePKCS1v1_5)
        }
        var s = DER.Serializer()
        let zero = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(signedDataOID)
            try s.appendConstructedNode(identifier: zero) { s in
                try s.appendConstructedNode(identifier: .sequence) { s in
                    try s.serialize(1)
                    try s.appendConstructedNode(identifier: .set) { s in try algorithm(digest.oid, into: &s) }
                    try s.appendConstructedNode(identifier: .sequence) { s in
                        try s.serialize(dataOID)
                        try s.appendConstructedNode(identifier: zero) { s in
                            try s.serialize(ASN1OctetString(contentBytes: payload[...]))
                        }
                    }
                    try s.appendConstructedNode(identifier: zero) { s in
                        for certificate in carried { try s.serialize(certificate) }
                    }
                    try s.appendConstructedNode(identifier: .set) { s in
                        try signerInfo(signer, digest: digest, signature: signature.rawRepresentation, into: &s)
                    }
                }
            }
        }
        return s.serializedBytes
    }

    private static func signerInfo(
        _ signer: Certificate, digest: Digest, signature: Data, into s: inout DER.Serializer
    ) throws {
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(1)
            try s.appendConstructedNode(identifier: .sequence) { s in
                try s.serialize(signer.issuer)
                s.appendPrimitiveNode(identifier: .integer) { $0.append(contentsOf: signer.serialNumber.bytes) }
            }
            try algorithm(digest.oid, into: &s)
            try algorithm(rsaEncryptionOID, into: &s)
            try s.serialize(ASN1OctetString(contentBytes: ArraySlice(signature)))
        }
    }

    private static func algorithm(_ oid: ASN1ObjectIdentifier, into s: inout DER.Serializer) throws {
        try s.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(oid)
            try s.serialize(ASN1Null())
        }
    }
}

/// The fields of one receipt, as Apple's payload holds them.
public struct ReceiptFields: Sendable {
    /// Type 0: `Production` or `ProductionSandbox` (undocumented, in every real receipt).
    public var environment = "ProductionSandbox"
    public var bundleID: String
    /// Type 12, RFC 3339.
    public var creationDate: String
    public var purchases: [Purchase] = []
    /// Types the job ignores (`type → DER value`), added as Apple adds its own.
    public var extra: [(Int, [UInt8])] = [(3, ReceiptFields.utf8("1.0")), (19, ReceiptFields.utf8("1.0"))]

    /// One in-app purchase (type 17).
    public struct Purchase: Sendable {
        public var quantity = 1
        public var productID: String
        public var transactionID: String
        public var originalTransactionID: String
        public var purchaseDate: String
        public var originalPurchaseDate: String
        /// Empty: none (a consumable's).
        public var expiresDate = ""
        /// 0: none.
        public var webOrderLineItemID = 0
        /// Empty: not cancelled.
        public var cancellationDate = ""

        public init(
            productID: String, transactionID: String, originalTransactionID: String? = nil,
            purchaseDate: String, originalPurchaseDate: String? = nil
        ) {
            self.productID = productID
            self.transactionID = transactionID
            self.originalTransactionID = originalTransactionID ?? transactionID
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate ?? purchaseDate
        }
    }

    public init(bundleID: String, creationDate: String, environment: String = "ProductionSandbox") {
        self.bundleID = bundleID
        self.creationDate = creationDate
        self.environment = environment
    }

    /// The payload's DER.
    public func payload() throws -> [UInt8] {
        var attributes: [(Int, [UInt8])] = [
            (0, Self.utf8(environment)), (2, Self.utf8(bundleID)), (12, Self.ia5(creationDate)),
        ]
        attributes += extra
        for purchase in purchases { attributes.append((17, try Self.set(purchase.attributes))) }
        return try Self.set(attributes)
    }

    /// SET OF SEQUENCE { type, 1, OCTET STRING value }.
    static func set(_ attributes: [(Int, [UInt8])]) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.appendConstructedNode(identifier: .set) { s in
            for (type, value) in attributes {
                try s.appendConstructedNode(identifier: .sequence) { s in
                    try s.serialize(type)
                    try s.serialize(1)
                    try s.serialize(ASN1OctetString(contentBytes: value[...]))
                }
            }
        }
        return s.serializedBytes
    }

    public static func utf8(_ text: String) -> [UInt8] { tagged(0x0C, Array(text.utf8)) }
    public static func ia5(_ text: String) -> [UInt8] { tagged(0x16, Array(text.utf8)) }
    public static func integer(_ n: Int) -> [UInt8] {
        var s = DER.Serializer()
        try? s.serialize(n)
        return s.serializedBytes
    }

    static func tagged(_ tag: UInt8, _ bytes: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if bytes.count < 0x80 {
            length = [UInt8(bytes.count)]
        } else {
            length = []
            var n = bytes.count
            while n > 0 {
                length.insert(UInt8(n & 0xFF), at: 0)
                n >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + bytes
    }
}

extension ReceiptFields.Purchase {
    var attributes: [(Int, [UInt8])] {
        [
            (1701, ReceiptFields.integer(quantity)), (1702, ReceiptFields.utf8(productID)),
            (1703, ReceiptFields.utf8(transactionID)), (1704, ReceiptFields.ia5(purchaseDate)),
            (1705, ReceiptFields.utf8(originalTransactionID)), (1706, ReceiptFields.ia5(originalPurchaseDate)),
            (1708, ReceiptFields.ia5(expiresDate)), (1711, ReceiptFields.integer(webOrderLineItemID)),
            (1712, ReceiptFields.ia5(cancellationDate)),
        ]
    }
}
