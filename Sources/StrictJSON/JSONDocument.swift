// The parsed form of a store's answer (a tape of nodes over the body bytes), the errors of
// parsing, and the typed reads of its values. The scanner that builds it is in JSONScanner.swift.
// Every store's JSON goes through it (Apple's answers in AppStore, Google's in PlayStore): one
// strict reading, no duplicate keys, no invalid UTF-8, nothing after the value.

/// One JSON value on the tape. Containers are followed by their children; `after` is the tape index
/// just past the whole subtree, so skipping a value is O(1).
package struct JSONNode {
    /// What a node holds.
    package enum Kind: UInt8 {
        case null, `false`, `true`, number, string, escapedString, array, object
    }

    /// The node's kind.
    package var kind: Kind
    /// Strings: the bytes between the quotes. Numbers and literals: the lexeme. Containers: the
    /// brackets included.
    package var start: Int32
    /// Where the node's bytes end (exclusive).
    package var end: Int32
    /// The tape index past the node's subtree.
    package var after: Int32
}

/// Why a body is not one acceptable JSON document. `description` is the problem text of the
/// answer: one short line, offsets counted in bytes from 0, no more than 20 characters of a key.
public enum JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case byteOrderMark
    case tooLarge
    /// A byte that starts no valid UTF-8 sequence, or a sequence cut short or ill-formed.
    case invalidUTF8(byte: UInt8, offset: Int)
    /// `\ud800`…`\udfff` not forming a surrogate pair.
    case loneSurrogate(offset: Int)
    case unexpectedEnd(offset: Int)
    case unexpectedByte(byte: UInt8, offset: Int)
    /// A raw control character (below 0x20) inside a string.
    case controlCharacter(byte: UInt8, offset: Int)
    /// Something after the one value.
    case trailingData(offset: Int)
    case tooDeep
    /// The decoded key text, sanitized and cut.
    case duplicateKey(String)

    public var description: String {
        switch self {
        case .empty:
            return "body is empty"
        case .byteOrderMark:
            return "body starts with a UTF-8 byte-order mark"
        case .tooLarge:
            return "body is larger than 2 GiB"
        case .invalidUTF8(let byte, let offset):
            return "body is not valid UTF-8 (byte \(Self.hex(byte)) at offset \(offset))"
        case .loneSurrogate(let offset):
            return "body is not valid UTF-8 (escaped lone surrogate at offset \(offset))"
        case .unexpectedEnd(let offset):
            return "body is not JSON: unexpected end at offset \(offset)"
        case .unexpectedByte(let byte, let offset):
            let shown = byte >= 0x21 && byte <= 0x7E && byte != 0x27 ? "'\(Character(Unicode.Scalar(byte)))'" : Self.hex(byte)
            return "body is not JSON: unexpected \(shown) at offset \(offset)"
        case .controlCharacter(let byte, let offset):
            return "body is not JSON: raw control byte \(Self.hex(byte)) in a string at offset \(offset)"
        case .trailingData(let offset):
            return "body is not JSON: more data after the value at offset \(offset)"
        case .tooDeep:
            return "nesting deeper than \(JSONDocument.maxDepth) levels"
        case .duplicateKey(let key):
            return "duplicate key \(key)"
        }
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }
}

/// A parsed document: the body bytes (borrowed, valid only inside the caller's
/// `withUnsafeBufferPointer`) and the tape. The root is node 0.
package struct JSONDocument {
    /// The body, borrowed.
    package let bytes: UnsafeBufferPointer<UInt8>
    /// The tape: node 0 is the root.
    package let nodes: [JSONNode]

    /// Nesting deeper than this is refused (a verifyReceipt answer is at most 4 levels deep).
    package static let maxDepth = 64

    /// Objects with more members than this are checked for repeated keys with a hash set; smaller
    /// ones (every object Apple sends) with a bit set of key signatures, which allocates nothing.
    static let pairwiseKeyLimit = 32

    /// Scans `bytes` as exactly one JSON value (surrounding whitespace allowed).
    package init(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard bytes.count < Int(Int32.max) else { throw JSONError.tooLarge }
        guard !bytes.isEmpty else { throw JSONError.empty }
        var scanner = Scanner(bytes: bytes)
        guard scanner.scanDocument() else { throw scanner.error ?? JSONError.unexpectedEnd(offset: scanner.pos) }
        self.bytes = bytes
        self.nodes = scanner.nodes
    }

    /// The kind of the node at `index`.
    package func kind(_ index: Int) -> JSONNode.Kind { nodes[index].kind }

    // MARK: Walking containers

    /// Calls `body(keyIndex, valueIndex)` for every member of the object at `index`.
    @inline(__always)
    package func forEachMember(of index: Int, _ body: (Int, Int) throws -> Void) rethrows {
        let node = nodes[index]
        guard node.kind == .object else { return }
        var child = index + 1
        let end = Int(node.after)
        while child < end {
            let value = child + 1
            try body(child, value)
            child = Int(nodes[value].after)
        }
    }

    /// Calls `body(position, elementIndex)` for every element of the array at `index`.
    @inline(__always)
    package func forEachElement(of index: Int, _ body: (Int, Int) throws -> Void) rethrows {
        let node = nodes[index]
        guard node.kind == .array else { return }
        var child = index + 1
        var position = 0
        let end = Int(node.after)
        while child < end {
            try body(position, child)
            position += 1
            child = Int(nodes[child].after)
        }
    }

    /// Whether the string node at `index` (an object key) spells `key`.
    @inline(__always)
    package func keyIs(_ index: Int, _ key: StaticString) -> Bool {
        let node = nodes[index]
        let count = Int(node.end - node.start)
        if node.kind == .string {
            guard count == key.utf8CodeUnitCount else { return false }
            let a = bytes.baseAddress! + Int(node.start)
            let b = key.utf8Start
            for i in 0..<count where a[i] != b[i] { return false }
            return true
        }
        if node.kind == .escapedString {
            return decodedString(node) == key.description
        }
        return false
    }

    // MARK: Reading scalars

    /// The bytes of a node as they are in the body: a number's lexeme, a string's bytes between
    /// the quotes (escapes not decoded).
    @inline(__always)
    package func raw(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        let node = nodes[index]
        return UnsafeBufferPointer(rebasing: bytes[Int(node.start)..<Int(node.end)])
    }

    /// A string's decoded text, or a number's exact lexeme (so 1000000315361723 stays
    /// "1000000315361723"); nil for other kinds.
    package func text(_ index: Int) -> String? {
        let node = nodes[index]
        switch node.kind {
        case .string, .number:
            return String(decoding: raw(index), as: UTF8.self)
        case .escapedString:
            return decodedString(node)
        default:
            return nil
        }
    }

    // MARK: Internals

    private func decodedString(_ node: JSONNode) -> String {
        Self.decode(UnsafeBufferPointer(rebasing: bytes[Int(node.start)..<Int(node.end)]))
    }

    /// Decodes the bytes between the quotes of a string the scanner accepted.
    package static func decode(_ s: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.count)
        var i = 0
        func hex4(_ at: Int) -> UInt32 {
            var v: UInt32 = 0
            for j in at..<(at + 4) {
                let c = s[j]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: d = UInt32(c - 0x61 + 10)  // validated by the scanner
                }
                v = v << 4 | d
            }
            return v
        }
        while i < s.count {
            let c = s[i]
            guard c == UInt8(ascii: "\\") else {
                out.append(c)
                i += 1
                continue
            }
            let e = s[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var v = hex4(i)
                i += 4
                if v >= 0xD800, v < 0xDC00 {  // the scanner made sure a low surrogate follows
                    v = 0x10000 + ((v - 0xD800) << 10) + (hex4(i + 2) - 0xDC00)
                    i += 6
                }
                out.append(contentsOf: UTF8.encode(Unicode.Scalar(v) ?? "\u{FFFD}")!)
            default: out.append(e)  // \" \\ \/
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension JSONDocument {
    /// "null", "a boolean", "a number", "a string", "an array", "an object".
    package func kindName(_ index: Int) -> String {
        switch kind(index) {
        case .null: return "null"
        case .true, .false: return "a boolean"
        case .number: return "a number"
        case .string, .escapedString: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// A scalar for a problem text: a number's lexeme, or a string in quotes (a leading space
    /// kept visible), at most 20 sanitized characters; containers and literals by their kind.
    package func shown(_ index: Int) -> String {
        switch kind(index) {
        case .number:
            return Sanitized.text(raw(index), limit: 20)
        case .string, .escapedString:
            let text = self.text(index) ?? ""
            let lead = text.utf8.first.map { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D } == true ? " " : ""
            return "\"" + lead + Sanitized.text(text.utf8, limit: 20) + "\""
        case .true: return "true"
        case .false: return "false"
        default: return kindName(index)
        }
    }
}
