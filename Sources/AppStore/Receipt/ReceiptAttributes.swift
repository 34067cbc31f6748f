// A SET of receipt attributes, SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }, as
// the payload and each in-app purchase are: Apple's form (strict DER) read from the bytes, any other
// form as swift-asn1's BER.parse reads it; and a field's string inside its value.

import SwiftASN1

extension ReceiptPayload {
    /// The attributes of a SET (`range` of `b`, the bytes of `slice`), in order, as (type, value's
    /// range in `b`). With `strict`, Apple's form (strict DER) is read from the bytes as they are
    /// handed out; at the first attribute in any other form, `next` gives nil and `declined` is
    /// set: the caller then reads the SET again without `strict`, as BER.parse reads it, so that a
    /// reading is all one or all the other. (Checking the whole SET first read every attribute
    /// twice.)
    struct Attributes {
        private let b: UnsafeBufferPointer<UInt8>
        private var i: Int
        private let end: Int
        /// BER.parse's reading, when the SET is not read in the strict form.
        private let parsed: [(Int, Range<Int>)]?
        private var k = 0
        /// An attribute was not in the strict form: read the SET again without `strict`.
        private(set) var declined = false

        init(
            _ b: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, slice: ArraySlice<UInt8>,
            part: @autoclosure () -> String,
            strict: Bool
        ) throws(SignedDataRejection) {
            self.b = b
            if strict {
                guard let set = DERAttributes.element(b, at: range.lowerBound, end: range.upperBound), set.tag == 0x31,
                    set.next == range.upperBound
                else {
                    (i, end, parsed, declined) = (0, 0, nil, true)
                    return
                }
                (i, end, parsed) = (set.content.lowerBound, set.content.upperBound, nil)
                return
            }
            (i, end) = (0, 0)
            let start = slice.startIndex
            let bytes = slice[(start + range.lowerBound)..<(start + range.upperBound)]
            let root: ASN1Node
            do {
                root = try BER.parse(bytes)
            } catch {
                throw .malformed("\(part()) is not a BER encoding (\(ReceiptContainer.reason(error)))")
            }
            guard let depth = ReceiptContainer.depth(of: bytes), depth <= 3 else {
                throw .malformed("\(part()) is nested deeper than a SET of attributes")
            }
            guard root.identifier == .set, case .constructed(let children) = root.content else {
                throw .malformed("\(part()) is not a SET")
            }
            var all: [(Int, Range<Int>)] = []
            for child in children {
                let (type, value) = try ReceiptPayload.attribute(child, part: part())
                // BER.parse's values are slices of `bytes`, which share its indices.
                guard value.startIndex >= bytes.startIndex, value.endIndex <= bytes.endIndex else {
                    throw .malformed("\(part()) holds an attribute outside it")
                }
                all.append((type, (value.startIndex - start)..<(value.endIndex - start)))
            }
            parsed = all
        }

        mutating func next() -> (Int, Range<Int>)? {
            if let parsed {
                guard k < parsed.count else { return nil }
                k += 1
                return parsed[k - 1]
            }
            guard i < end, !declined else { return nil }
            guard let a = DERAttributes.attribute(b, at: i, end: end) else {
                declined = true
                return nil
            }
            i = a.next
            return (a.type, a.value)
        }
    }

    static func attribute(
        _ node: ASN1Node, part: String
    ) throws(SignedDataRejection) -> (Int, ArraySlice<UInt8>) {
        guard node.identifier == .sequence, case .constructed(let fields) = node.content else {
            throw .malformed("\(part) holds an attribute that is not a SEQUENCE")
        }
        var parts = fields.makeIterator()
        guard let typeNode = parts.next(), let versionNode = parts.next(), let valueNode = parts.next(),
            parts.next() == nil,
            typeNode.identifier == .integer, versionNode.identifier == .integer, valueNode.identifier == .octetString,
            case .primitive(let value) = valueNode.content
        else { throw .malformed("\(part) holds an attribute that is not (type, version, value)") }
        guard let type = try? Int(berEncoded: typeNode), type >= 0 else {
            throw .malformed("\(part) holds an attribute whose type is not a small integer")
        }
        return (type, value)
    }

    /// The content of `value` when it is exactly one primitive UTF8String (12) or IA5String (22):
    /// its tag, a definite length (short form, or long form in at most 8 bytes), that many bytes
    /// and nothing after them. What `BER.parse` accepts as such, without building its tree.
    static func primitiveString(_ value: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        value.withUnsafeBufferPointer { b in primitiveString(b, 0..<b.count) }
            .map { value[(value.startIndex + $0.lowerBound)..<(value.startIndex + $0.upperBound)] }
    }

    /// `primitiveString` of the bytes `value` of `b`: the string's range in `b`.
    static func primitiveString(_ b: UnsafeBufferPointer<UInt8>, _ value: Range<Int>) -> Range<Int>? {
        let start = value.lowerBound
        guard value.count >= 2, b[start] == 0x0C || b[start] == 0x16 else { return nil }
        var i = start + 2
        let first = b[start + 1]
        var length = Int(first)
        if first >= 0x80 {
            let n = Int(first & 0x7F)
            guard (1...8).contains(n), value.count >= 2 + n else { return nil }
            length = 0
            for _ in 0..<n {
                guard length <= Int.max >> 8 else { return nil }
                length = length << 8 | Int(b[i])
                i += 1
            }
        }
        guard length == value.upperBound - i else { return nil }
        return i..<value.upperBound
    }
}

/// The payload's attributes when they are in the form Apple writes, strict DER: a SET of
/// SEQUENCE { INTEGER type (non-negative, at most 8 bytes), INTEGER version, OCTET STRING value },
/// single-byte tags, minimal definite lengths and integers. Read from the bytes, with no tree: a
/// parse made one per in-app purchase and per value, a fifth of the verifier's time. nil for any
/// other form, which `BER.parse` then reads and judges (indefinite lengths, a negative type, a
/// constructed value…): this reader accepts only encodings it reads the same (a test holds the
/// two equal).
enum DERAttributes {
    static func read(_ b: ArraySlice<UInt8>) -> [(Int, ArraySlice<UInt8>)]? {
        guard let set = strictSet(b, b.startIndex..<b.endIndex) else { return nil }
        var out: [(Int, ArraySlice<UInt8>)] = []
        var i = set.lowerBound
        while i < set.upperBound, let a = attribute(b, at: i, end: set.upperBound) {
            out.append((a.type, b[a.value]))
            i = a.next
        }
        return out
    }

    /// The SET's content when `range` of `b` is one SET whose every attribute is in the strict form;
    /// nil otherwise.
    static func strictSet<B: RandomAccessCollection<UInt8>>(_ b: B, _ range: Range<Int>) -> Range<Int>?
    where B.Index == Int {
        guard let set = element(b, at: range.lowerBound, end: range.upperBound), set.tag == 0x31,
            set.next == range.upperBound
        else { return nil }
        var i = set.content.lowerBound
        while i < set.content.upperBound {
            guard let a = attribute(b, at: i, end: set.content.upperBound) else { return nil }
            i = a.next
        }
        return set.content
    }

    /// The attribute SEQUENCE { type, version, value } at `i`: its type, its value's content and
    /// where the next begins; nil unless in the strict form.
    static func attribute<B: RandomAccessCollection<UInt8>>(
        _ b: B, at i: Int, end: Int
    ) -> (type: Int, value: Range<Int>, next: Int)? where B.Index == Int {
        guard let seq = element(b, at: i, end: end), seq.tag == 0x30,
            let t = element(b, at: seq.content.lowerBound, end: seq.content.upperBound), t.tag == 0x02,
            let type = nonNegative(b, t.content),
            let v = element(b, at: t.next, end: seq.content.upperBound), v.tag == 0x02, isMinimalInteger(b, v.content),
            let o = element(b, at: v.next, end: seq.content.upperBound), o.tag == 0x04, o.next == seq.content.upperBound
        else { return nil }
        return (type, o.content, seq.next)
    }

    /// The element at `i` (before `end`): its one-byte tag, its content, where the next begins.
    /// nil for a multi-byte tag, an indefinite or non-minimal length, or one past `end`.
    static func element<B: RandomAccessCollection<UInt8>>(
        _ b: B, at i: Int, end: Int
    ) -> (tag: UInt8, content: Range<Int>, next: Int)? where B.Index == Int {
        guard i >= b.startIndex, end <= b.endIndex, end - i >= 2 else { return nil }
        let tag = b[i]
        guard tag & 0x1F != 0x1F else { return nil }
        var j = i + 2
        var length = Int(b[i + 1])
        if length >= 0x80 {
            let n = length & 0x7F
            guard (1...4).contains(n), n <= end - j, b[j] != 0 else { return nil }
            length = 0
            for _ in 0..<n {
                length = length << 8 | Int(b[j])
                j += 1
            }
            guard length >= 0x80 else { return nil }
        }
        guard length <= end - j else { return nil }
        return (tag, j..<(j + length), j + length)
    }

    /// A non-negative INTEGER's value, minimal and at most 8 bytes; nil otherwise.
    static func nonNegative<B: RandomAccessCollection<UInt8>>(_ b: B, _ r: Range<Int>) -> Int? where B.Index == Int {
        guard isMinimalInteger(b, r), r.count <= 8, b[r.lowerBound] < 0x80 else { return nil }
        var n = 0
        for i in r { n = n << 8 | Int(b[i]) }
        return n
    }

    /// An INTEGER's content in its minimal two's complement form.
    static func isMinimalInteger<B: RandomAccessCollection<UInt8>>(_ b: B, _ r: Range<Int>) -> Bool
    where B.Index == Int {
        guard let first = r.first else { return false }
        guard r.count > 1 else { return true }
        let second = b[first + 1]
        return !(b[first] == 0 && second < 0x80) && !(b[first] == 0xFF && second >= 0x80)
    }
}
