// The payload of an app receipt, read only once its signature is good: an ASN.1 SET of
// SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING } ("Validating receipts on the
// device"; the field types of "Receipt Fields"). Each in-app purchase (type 17) is such a SET
// again. Types Apple does not document are ignored, as Apple says to; a documented field of the
// wrong form is `malformed`, never guessed.

import Reconciliation
import SwiftASN1

/// What a receipt says, as the job reads it.
struct ReceiptPayload: Sendable {
    /// Type 0 (undocumented): `Production` or `ProductionSandbox` in Apple's receipts.
    var environment: String?
    /// Type 2.
    var bundleID: String?
    /// Type 12: when Apple made the receipt; the certificates must be valid then.
    var creationDate: EpochMillis?
    /// Type 17, one per in-app purchase, in the receipt's order.
    var purchases: [PartialTransaction] = []

    /// At most this many in-app purchases in one receipt.
    static let maxPurchases = 10_000

    /// Reads `bytes` (the container's content); throws `.malformed` naming the field.
    init(_ bytes: [UInt8]) throws(SignedDataRejection) {
        var read = ReceiptPayload(environment: nil)
        try Self.attributes(bytes, part: "the payload") { (type, value) throws(SignedDataRejection) in
            switch type {
            case 0: read.environment = try Self.text(value, field: "type 0 (environment)")
            case 2: read.bundleID = try Self.text(value, field: "type 2 (bundle id)")
            case 12: read.creationDate = try Self.date(value, field: "type 12 (creation date)")
            case 17:
                guard read.purchases.count < Self.maxPurchases else {
                    throw .malformed("more than \(Self.maxPurchases) in-app purchases")
                }
                read.purchases.append(try Self.purchase(value, index: read.purchases.count))
            default: break
            }
        }
        self = read
    }

    private init(environment: String?) { self.environment = environment }

    /// One in-app purchase's SET; `index` names it in problems (`in-app 3`).
    private static func purchase(_ bytes: [UInt8], index: Int) throws(SignedDataRejection) -> PartialTransaction {
        let place = "in-app \(index + 1)"
        var id: String?
        var fields: [(Int, [UInt8])] = []
        try attributes(bytes, part: place) { (type, value) throws(SignedDataRejection) in
            if type == 1703 {
                id = try text(value, field: "\(place) type 1703 (transaction id)")
            } else {
                fields.append((type, value))
            }
        }
        guard let id, !id.isEmpty else { throw .malformed("\(place) has no transaction id (type 1703)") }
        var p = PartialTransaction(transactionID: try identifier(id, field: "\(place) type 1703 (transaction id)"))
        for (type, value) in fields {
            let field = "\(place) type \(type)"
            switch type {
            case 1701:
                let quantity = try integer(value, field: field)
                guard (1...10_000).contains(quantity) else { throw .malformed("\(field) (quantity) \(quantity) is out of range 1-10000") }
                p.quantity = quantity
            case 1702: p.productID = try text(value, field: field).flatMap { $0.isEmpty ? nil : $0 }
            case 1704: p.purchaseDate = try date(value, field: field)
            case 1705:
                if let original = try text(value, field: field) { p.originalTransactionID = try identifier(original, field: field) }
            case 1706: p.originalPurchaseDate = try date(value, field: field)
            case 1708: p.expiresDate = try date(value, field: field)
            case 1711:
                let line = try integer(value, field: field)
                p.webOrderLineItemID = line == 0 ? nil : String(line)
            case 1712: p.cancellationDate = try date(value, field: field)
            default: break
            }
        }
        return p
    }

    /// Calls `each` with the type and value bytes of every attribute of the SET in `bytes`.
    static func attributes(
        _ bytes: [UInt8], part: String, _ each: (Int, [UInt8]) throws(SignedDataRejection) -> Void
    ) throws(SignedDataRejection) {
        let root: ASN1Node
        do {
            root = try BER.parse(bytes)
        } catch {
            throw .malformed("\(part) is not a BER encoding (\(ReceiptContainer.reason(error)))")
        }
        guard ReceiptContainer.depth(of: root) <= 3 else { throw .malformed("\(part) is nested deeper than a SET of attributes") }
        guard root.identifier == .set, case .constructed(let children) = root.content else {
            throw .malformed("\(part) is not a SET")
        }
        for child in children {
            let (type, value) = try attribute(child, part: part)
            try each(type, value)
        }
    }

    private static func attribute(_ node: ASN1Node, part: String) throws(SignedDataRejection) -> (Int, [UInt8]) {
        guard node.identifier == .sequence, case .constructed(let fields) = node.content else {
            throw .malformed("\(part) holds an attribute that is not a SEQUENCE")
        }
        var parts = fields.makeIterator()
        guard let typeNode = parts.next(), let versionNode = parts.next(), let valueNode = parts.next(), parts.next() == nil,
            typeNode.identifier == .integer, versionNode.identifier == .integer, valueNode.identifier == .octetString,
            case .primitive(let value) = valueNode.content
        else { throw .malformed("\(part) holds an attribute that is not (type, version, value)") }
        guard let type = try? Int(berEncoded: typeNode), type >= 0 else {
            throw .malformed("\(part) holds an attribute whose type is not a small integer")
        }
        return (type, Array(value))
    }

    /// A UTF8String or IA5String inside `value` (nil when the value is empty).
    private static func text(_ value: [UInt8], field: String) throws(SignedDataRejection) -> String? {
        guard !value.isEmpty else { return nil }
        do {
            let node = try BER.parse(value)
            guard case .primitive(let bytes) = node.content,
                node.identifier == .utf8String || node.identifier == .ia5String
            else { throw SignedDataRejection.malformed("\(field) is not a string") }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw SignedDataRejection.malformed("\(field) is not UTF-8")
            }
            guard text.utf8.count <= 1024, !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
                throw SignedDataRejection.malformed("\(field) is longer than 1024 bytes or holds control characters")
            }
            return text
        } catch let rejection as SignedDataRejection {
            throw rejection
        } catch {
            throw .malformed("\(field) is not a string")
        }
    }

    /// An INTEGER inside `value`, in 0...2^53.
    private static func integer(_ value: [UInt8], field: String) throws(SignedDataRejection) -> Int {
        guard let node = try? BER.parse(value), node.identifier == .integer, let n = try? Int(berEncoded: node),
            n >= 0, n <= 1 << 53
        else { throw .malformed("\(field) is not a non-negative integer") }
        return n
    }

    /// An RFC 3339 date inside `value`; an empty string (Apple's "none") is nil.
    private static func date(_ value: [UInt8], field: String) throws(SignedDataRejection) -> EpochMillis? {
        guard let text = try text(value, field: field), !text.isEmpty else { return nil }
        guard let ms = AppleDate.parse(text), ms >= 0, ms <= AppleDate.maxMillis else {
            throw .malformed("\(field) is not a date (\(VerifyReceipt.sanitized(text.utf8, limit: 40)))")
        }
        return ms
    }

    /// A transaction id: 1 to 20 digits, as verifyReceipt's answers hold them.
    private static func identifier(_ text: String, field: String) throws(SignedDataRejection) -> String {
        guard (1...20).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw .malformed("\(field) is not 1 to 20 digits")
        }
        return text
    }
}

extension AppReceiptVerifier {
    /// The payload reader alone, for the fuzz target (Tests/Fuzz): the transaction ids a payload's
    /// `bytes` hold, or why it is malformed. The night reads a payload only once its signature is good.
    package static func readPayload(_ bytes: [UInt8]) -> Result<[String], SignedDataRejection> {
        Result { () throws(SignedDataRejection) in try ReceiptPayload(bytes).purchases.map(\.transactionID) }
    }
}

extension AppReceiptVerifier {
    /// For the simulator, which keeps its truth in an attribute Apple does not document: verifies
    /// `bytes` as the night does (any bundle), then gives the raw value of the top-level attribute
    /// `type` (nil when the receipt has none).
    package func verify(_ bytes: [UInt8], keeping type: Int) -> Result<(receipt: AppReceipt, value: [UInt8]?), SignedDataRejection> {
        switch verify(bytes, bundleIDs: nil) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let receipt):
            var found: [UInt8]?
            if let container = try? ReceiptContainer(bytes) {
                try? ReceiptPayload.attributes(container.content, part: "the payload") { (t, value) throws(SignedDataRejection) in
                    if t == type { found = value }
                }
            }
            return .success((receipt, found))
        }
    }
}
