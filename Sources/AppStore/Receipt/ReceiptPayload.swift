// The payload of an app receipt, read only once its signature is good: an ASN.1 SET of
// SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING } ("Validating receipts on the
// device"; the field types of "Receipt Fields"). Each in-app purchase (type 17) is such a SET
// again. Types Apple does not document are ignored, as Apple says to; a documented field of the
// wrong form is `malformed`, never guessed.

import StrictJSON
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
    init(_ bytes: ArraySlice<UInt8>) throws(SignedDataRejection) {
        // Over the bytes in place: slices of them retained and released the receipt's buffer for
        // every attribute.
        let read = bytes.withUnsafeBufferPointer { b in
            Result { () throws(SignedDataRejection) in try Reader(b: b, slice: bytes).payload() }
        }
        self = try read.get()
    }

    init(environment: String?) { self.environment = environment }

    /// Calls `each` with the type and value bytes of every attribute of the SET in `bytes`.
    static func attributes(
        _ bytes: ArraySlice<UInt8>, part: String, _ each: (Int, ArraySlice<UInt8>) throws(SignedDataRejection) -> Void
    ) throws(SignedDataRejection) {
        let all = bytes.withUnsafeBufferPointer { b in
            Result { () throws(SignedDataRejection) -> [(Int, Range<Int>)] in
                for attempt in 0..<2 {
                    let strict = attempt == 0
                    var attributes = try Attributes(b, 0..<b.count, slice: bytes, part: part, strict: strict)
                    var all: [(Int, Range<Int>)] = []
                    while let a = attributes.next() { all.append(a) }
                    if !attributes.declined { return all }
                }
                return []
            }
        }
        let start = bytes.startIndex
        for (type, value) in try all.get() {
            try each(type, bytes[(start + value.lowerBound)..<(start + value.upperBound)])
        }
    }

    /// The payload read from `b`, the bytes of `slice` (which BER.parse reads when a SET is not in
    /// Apple's form); positions are offsets in `b`.
    private struct Reader {
        let b: UnsafeBufferPointer<UInt8>
        let slice: ArraySlice<UInt8>

        /// The payload: its SET read in Apple's form, or, when an attribute is not, read again as
        /// BER.parse reads it (a reading is all one or all the other); the first problem in the
        /// receipt's order is thrown once the SET is read.
        func payload() throws(SignedDataRejection) -> ReceiptPayload {
            var read = ReceiptPayload(environment: nil)
            for attempt in 0..<2 {
                let strict = attempt == 0
                read = ReceiptPayload(environment: nil)
                var problem: SignedDataRejection?
                var attributes = try Attributes(b, 0..<b.count, slice: slice, part: "the payload", strict: strict)
                while let (type, value) = attributes.next() {
                    do throws(SignedDataRejection) {
                        try top(type, value, into: &read)
                    } catch {
                        problem = problem ?? error
                    }
                }
                if attributes.declined { continue }
                if let problem { throw problem }
                break
            }
            return read
        }

        private func top(_ type: Int, _ value: Range<Int>, into read: inout ReceiptPayload) throws(SignedDataRejection)
        {
            switch type {
            case 0: read.environment = try text(value, field: "type 0 (environment)")
            case 2: read.bundleID = try text(value, field: "type 2 (bundle id)")
            case 12: read.creationDate = try date(value, field: "type 12 (creation date)")
            case 17:
                guard read.purchases.count < ReceiptPayload.maxPurchases else {
                    throw .malformed("more than \(ReceiptPayload.maxPurchases) in-app purchases")
                }
                read.purchases.append(try purchase(value, index: read.purchases.count))
            default: break
            }
        }

        /// One in-app purchase's SET; `index` names it in problems (`in-app 3`). One pass over the
        /// SET; the problems keep their order: the transaction id's first, then the first of the
        /// other fields in the receipt's order. The names of fields are made only for a problem:
        /// made for each field, with a closure per SET, they were a tenth of the verifier's time.
        private func purchase(_ range: Range<Int>, index: Int) throws(SignedDataRejection) -> PartialTransaction {
            var id: String?
            var idProblem: SignedDataRejection?, problem: SignedDataRejection?
            var p = PartialTransaction(transactionID: "")
            for attempt in 0..<2 {
                let strict = attempt == 0
                (id, idProblem, problem, p) = (nil, nil, nil, PartialTransaction(transactionID: ""))
                var attributes = try Attributes(b, range, slice: slice, part: "in-app \(index + 1)", strict: strict)
                while let (type, value) = attributes.next() {
                    do throws(SignedDataRejection) {
                        try field(type, value, of: &p, index: index, id: &id)
                    } catch {
                        if type == 1703 { idProblem = idProblem ?? error } else { problem = problem ?? error }
                    }
                }
                if !attributes.declined { break }
            }
            if let idProblem { throw idProblem }
            guard let id, !id.isEmpty else { throw .malformed("in-app \(index + 1) has no transaction id (type 1703)") }
            p.transactionID = try identifier(id, field: "in-app \(index + 1) type 1703 (transaction id)")
            if let problem { throw problem }
            return p
        }

        private func field(
            _ type: Int, _ value: Range<Int>, of p: inout PartialTransaction, index: Int, id: inout String?
        ) throws(SignedDataRejection) {
            switch type {
            case 1703: id = try text(value, field: "in-app \(index + 1) type 1703 (transaction id)")
            case 1701:
                let quantity = try integer(value, field: "in-app \(index + 1) type \(type)")
                guard (1...10_000).contains(quantity) else {
                    throw .malformed("in-app \(index + 1) type \(type) (quantity) \(quantity) is out of range 1-10000")
                }
                p.quantity = quantity
            case 1702:
                p.productID = try text(value, field: "in-app \(index + 1) type \(type)").flatMap {
                    $0.isEmpty ? nil : $0
                }
            case 1704: p.purchaseDate = try date(value, field: "in-app \(index + 1) type \(type)")
            case 1705:
                if let original = try text(value, field: "in-app \(index + 1) type \(type)") {
                    p.originalTransactionID = try identifier(original, field: "in-app \(index + 1) type \(type)")
                }
            case 1706: p.originalPurchaseDate = try date(value, field: "in-app \(index + 1) type \(type)")
            case 1708: p.expiresDate = try date(value, field: "in-app \(index + 1) type \(type)")
            case 1711:
                let line = try integer(value, field: "in-app \(index + 1) type \(type)")
                p.webOrderLineItemID = line == 0 ? nil : String(line)
            case 1712: p.cancellationDate = try date(value, field: "in-app \(index + 1) type \(type)")
            default: break
            }
        }

        /// A UTF8String or IA5String inside `value` (nil when the value is empty).
        private func text(_ value: Range<Int>, field: @autoclosure () -> String) throws(SignedDataRejection) -> String?
        {
            guard !value.isEmpty else { return nil }
            // One primitive element, its length definite and the value's end its end: read from the
            // bytes (a receipt holds seven strings a purchase; a parse each made a tree each).
            guard let r = ReceiptPayload.primitiveString(b, value) else {
                throw .malformed("\(field()) is not a string")
            }
            let bytes = UnsafeBufferPointer(rebasing: b[r])
            // One pass for control characters and non-ASCII bytes; ASCII needs no UTF-8 validation
            // (the generic one over a slice was a third of reading a purchase).
            var control = false, ascii = true
            for c in bytes {
                control = control || c < 0x20 || c == 0x7F
                ascii = ascii && c < 0x80
            }
            let text: String
            if ascii {
                text = String(decoding: bytes, as: UTF8.self)
            } else {
                guard let valid = String(validating: bytes, as: UTF8.self) else {
                    throw .malformed("\(field()) is not UTF-8")
                }
                text = valid
            }
            guard bytes.count <= 1024, !control else {
                throw .malformed("\(field()) is longer than 1024 bytes or holds control characters")
            }
            return text
        }

        /// An INTEGER inside `value`, in 0...2^53.
        private func integer(_ value: Range<Int>, field: @autoclosure () -> String) throws(SignedDataRejection) -> Int {
            if let e = DERAttributes.element(b, at: value.lowerBound, end: value.upperBound), e.tag == 0x02,
                e.next == value.upperBound,
                let n = DERAttributes.nonNegative(b, e.content)
            {
                guard n <= 1 << 53 else { throw .malformed("\(field()) is not a non-negative integer") }
                return n
            }
            guard let node = try? BER.parse(Array(b[value])), node.identifier == .integer,
                let n = try? Int(berEncoded: node),
                n >= 0, n <= 1 << 53
            else { throw .malformed("\(field()) is not a non-negative integer") }
            return n
        }

        /// An RFC 3339 date inside `value`; an empty string (Apple's "none") is nil.
        private func date(_ value: Range<Int>, field: @autoclosure () -> String) throws(SignedDataRejection)
            -> EpochMillis?
        {
            // Apple's form read from the bytes (through a String, a date cost three allocations).
            if let r = ReceiptPayload.primitiveString(b, value),
                let ms = AppleDate.parseZulu(UnsafeBufferPointer(rebasing: b[r])),
                ms >= 0, ms <= AppleDate.maxMillis
            {
                return ms
            }
            guard let text = try text(value, field: field()), !text.isEmpty else { return nil }
            guard let ms = AppleDate.parse(text), ms >= 0, ms <= AppleDate.maxMillis else {
                throw .malformed("\(field()) is not a date (\(Sanitized.text(text.utf8, limit: 40)))")
            }
            return ms
        }

        /// A transaction id: 1 to 20 digits, as verifyReceipt's answers hold them.
        private func identifier(_ text: String, field: @autoclosure () -> String) throws(SignedDataRejection) -> String
        {
            // Over the string's bytes in place (the generic walk of its UTF-8 view cost more than reading it).
            let digits = text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy { $0 >= 48 && $0 <= 57 } }
            guard (1...20).contains(text.utf8.count), digits ?? text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw .malformed("\(field()) is not 1 to 20 digits")
            }
            return text
        }
    }

}

extension AppReceiptVerifier {
    /// The payload reader alone, for the fuzz target (Tests/Fuzz): the transaction ids a payload's
    /// `bytes` hold, or why it is malformed. The night reads a payload only once its signature is good.
    package static func readPayload(_ bytes: [UInt8]) -> Result<[String], SignedDataRejection> {
        Result { () throws(SignedDataRejection) in try ReceiptPayload(bytes[...]).purchases.map(\.transactionID) }
    }
}

extension AppReceiptVerifier {
    /// For the simulator, which keeps its truth in an attribute Apple does not document: verifies
    /// `bytes` as the night does (any bundle), then gives the raw value of the top-level attribute
    /// `type` (nil when the receipt has none).
    package func verify(_ bytes: [UInt8], keeping type: Int) -> Result<
        (receipt: AppReceipt, value: [UInt8]?), SignedDataRejection
    > {
        switch verify(bytes, bundleIDs: nil) {
        case .failure(let rejection): return .failure(rejection)
        case .success(let receipt):
            var found: [UInt8]?
            if let container = try? ReceiptContainer(bytes) {
                try? ReceiptPayload.attributes(container.content, part: "the payload") {
                    (t, value) throws(SignedDataRejection) in
                    if t == type { found = Array(value) }
                }
            }
            return .success((receipt, found))
        }
    }
}
