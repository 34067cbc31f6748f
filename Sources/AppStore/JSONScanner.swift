// A small validating JSON scanner for verifyReceipt answers.
//
// Why not JSONSerialization: it turns numbers into NSNumber/Double, so a `transaction_id` sent as
// the bare number 1000000315361723 (iOS 6 style) or anything above 2^53 may come back rounded, and
// it builds a dictionary of every field (including the multi-kilobyte `latest_receipt`) that the
// job never reads. This scanner records the document as a flat tape of nodes pointing into the
// body bytes: numbers keep their exact text, strings are decoded only when a field is read.

/// One JSON value on the tape. Containers are followed by their children; `after` is the tape index
/// just past the whole subtree, so skipping a value is O(1).
struct JSONNode {
    enum Kind: UInt8 {
        case null, `false`, `true`, number, string, escapedString, array, object
    }

    var kind: Kind
    /// Strings: the bytes between the quotes. Numbers and literals: the lexeme. Containers: the
    /// brackets included.
    var start: Int32
    var end: Int32
    var after: Int32
}

/// A parsed document: the body bytes (borrowed, valid only inside the caller's
/// `withUnsafeBufferPointer`) and the tape. The root is node 0.
struct JSONDocument {
    let bytes: UnsafeBufferPointer<UInt8>
    let nodes: [JSONNode]

    /// Nesting deeper than this is refused (a verifyReceipt answer is at most 4 levels deep).
    static let maxDepth = 64

    /// nil when `bytes` is not exactly one JSON value (surrounding whitespace and a UTF-8 BOM
    /// allowed).
    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count < Int(Int32.max) else { return nil }
        var scanner = Scanner(bytes: bytes)
        guard let nodes = scanner.scanDocument() else { return nil }
        self.bytes = bytes
        self.nodes = nodes
    }

    func kind(_ index: Int) -> JSONNode.Kind { nodes[index].kind }

    // MARK: Walking containers

    /// Calls `body(keyIndex, valueIndex)` for every member of the object at `index`.
    @inline(__always)
    func forEachMember(of index: Int, _ body: (Int, Int) -> Void) {
        let node = nodes[index]
        guard node.kind == .object else { return }
        var child = index + 1
        let end = Int(node.after)
        while child < end {
            let value = child + 1
            body(child, value)
            child = Int(nodes[value].after)
        }
    }

    /// Calls `body(elementIndex)` for every element of the array at `index`.
    @inline(__always)
    func forEachElement(of index: Int, _ body: (Int) -> Void) {
        let node = nodes[index]
        guard node.kind == .array else { return }
        var child = index + 1
        let end = Int(node.after)
        while child < end {
            body(child)
            child = Int(nodes[child].after)
        }
    }

    /// Whether the string node at `index` (an object key) spells `key`.
    @inline(__always)
    func keyIs(_ index: Int, _ key: StaticString) -> Bool {
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

    // MARK: Reading scalars (every field may be a string or a number)

    /// A string's text, or a number's exact lexeme (so 1000000315361723 stays "1000000315361723").
    func text(_ index: Int) -> String? {
        let node = nodes[index]
        switch node.kind {
        case .string, .number:
            return String(decoding: slice(node), as: UTF8.self)
        case .escapedString:
            return decodedString(node)
        default:
            return nil
        }
    }

    /// An integer from a number or a string of digits (surrounding spaces allowed). A value with a
    /// fraction or exponent is accepted when it is integral. nil for anything else or on overflow.
    func integer(_ index: Int) -> Int64? {
        let node = nodes[index]
        switch node.kind {
        case .number, .string:
            return Self.parseInteger(slice(node))
        case .escapedString:
            let utf8 = Array(decodedString(node).utf8)
            return utf8.withUnsafeBufferPointer { Self.parseInteger($0) }
        default:
            return nil
        }
    }

    /// true/false, "true"/"false" (any case), 1/0, "1"/"0", "yes"/"no".
    func bool(_ index: Int) -> Bool? {
        let node = nodes[index]
        switch node.kind {
        case .true: return true
        case .false: return false
        case .number:
            switch Self.parseInteger(slice(node)) {
            case 1: return true
            case 0: return false
            default: return nil
            }
        case .string, .escapedString:
            guard let raw = text(index) else { return nil }
            switch raw.lowercased() {
            case "true", "1", "yes": return true
            case "false", "0", "no": return false
            default: return nil
            }
        default:
            return nil
        }
    }

    // MARK: Internals

    @inline(__always)
    private func slice(_ node: JSONNode) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(rebasing: bytes[Int(node.start)..<Int(node.end)])
    }

    static func parseInteger(_ s: UnsafeBufferPointer<UInt8>) -> Int64? {
        var lo = 0
        var hi = s.count
        while lo < hi, s[lo] == 0x20 { lo += 1 }
        while hi > lo, s[hi - 1] == 0x20 { hi -= 1 }
        guard lo < hi else { return nil }
        var i = lo
        let negative = s[i] == UInt8(ascii: "-")
        if negative || s[i] == UInt8(ascii: "+") { i += 1 }
        guard i < hi else { return nil }
        var value: Int64 = 0
        var sawFraction = false
        while i < hi {
            let c = s[i]
            if c >= 0x30, c <= 0x39 {
                let (m, o1) = value.multipliedReportingOverflow(by: 10)
                let (a, o2) = negative ? m.subtractingReportingOverflow(Int64(c - 0x30))
                                       : m.addingReportingOverflow(Int64(c - 0x30))
                if o1 || o2 { return nil }
                value = a
                i += 1
            } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                sawFraction = true
                break
            } else {
                return nil
            }
        }
        guard sawFraction else { return value }
        // "1500001905000.0", "1.5E12": accept only integral values that fit.
        guard let d = Double(String(decoding: UnsafeBufferPointer(rebasing: s[lo..<hi]), as: UTF8.self)),
              d.isFinite, d >= -9.2e18, d <= 9.2e18, Double(Int64(d)) == d
        else { return nil }
        return Int64(d)
    }

    private func decodedString(_ node: JSONNode) -> String {
        let s = slice(node)
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
        func append(_ scalar: UInt32) {
            let u = Unicode.Scalar(scalar) ?? "\u{FFFD}"
            out.append(contentsOf: UTF8.encode(u)!)
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
                if v >= 0xD800, v < 0xDC00, i + 6 <= s.count, s[i] == UInt8(ascii: "\\"),
                   s[i + 1] == UInt8(ascii: "u") {
                    let low = hex4(i + 2)
                    if low >= 0xDC00, low < 0xE000 {
                        v = 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00)
                        i += 6
                    }
                }
                append(v)  // a lone surrogate becomes U+FFFD
            default: out.append(e)  // \" \\ \/
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var nodes: [JSONNode] = []

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        nodes.reserveCapacity(64)
    }

    mutating func scanDocument() -> [JSONNode]? {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { pos = 3 }
        skipSpace()
        guard value(depth: 0) else { return nil }
        skipSpace()
        guard pos == bytes.count else { return nil }
        return nodes
    }

    @inline(__always)
    mutating func skipSpace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    @inline(__always)
    mutating func push(_ kind: JSONNode.Kind, _ start: Int, _ end: Int) {
        nodes.append(JSONNode(kind: kind, start: Int32(start), end: Int32(end), after: Int32(nodes.count + 1)))
    }

    mutating func value(depth: Int) -> Bool {
        guard pos < bytes.count else { return false }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return container(object: true, depth: depth)
        case UInt8(ascii: "["): return container(object: false, depth: depth)
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true", .true)
        case UInt8(ascii: "f"): return literal("false", .false)
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    mutating func container(object: Bool, depth: Int) -> Bool {
        guard depth < JSONDocument.maxDepth else { return false }
        let start = pos
        let index = nodes.count
        nodes.append(JSONNode(kind: object ? .object : .array, start: Int32(start), end: 0, after: 0))
        pos += 1
        skipSpace()
        let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
        if pos < bytes.count, bytes[pos] == close {
            pos += 1
        } else {
            while true {
                if object {
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\""), string() else { return false }
                    skipSpace()
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { return false }
                    pos += 1
                    skipSpace()
                }
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                guard pos < bytes.count else { return false }
                let c = bytes[pos]
                pos += 1
                if c == close { break }
                guard c == UInt8(ascii: ",") else { return false }
                skipSpace()
            }
        }
        nodes[index].end = Int32(pos)
        nodes[index].after = Int32(nodes.count)
        return true
    }

    mutating func string() -> Bool {
        pos += 1  // opening quote
        let start = pos
        var escaped = false
        let raw = UnsafeRawPointer(bytes.baseAddress!)
        while true {
            // Skip 8 plain bytes at a time (no quote, backslash or control character): the
            // multi-kilobyte base64 `latest_receipt` is most of a typical answer.
            while pos + 8 <= bytes.count {
                let w = raw.loadUnaligned(fromByteOffset: pos, as: UInt64.self)
                let q = w ^ 0x2222_2222_2222_2222
                let b = w ^ 0x5C5C_5C5C_5C5C_5C5C
                let ones: UInt64 = 0x0101_0101_0101_0101
                let high: UInt64 = 0x8080_8080_8080_8080
                let special = ((q &- ones) & ~q) | ((b &- ones) & ~b) | ((w &- 0x2020_2020_2020_2020) & ~w)
                if special & high != 0 { break }
                pos += 8
            }
            guard pos < bytes.count else { return false }  // unterminated
            let c = bytes[pos]
            if c == UInt8(ascii: "\"") {
                push(escaped ? .escapedString : .string, start, pos)
                pos += 1
                return true
            }
            if c == UInt8(ascii: "\\") {
                escaped = true
                guard pos + 1 < bytes.count else { return false }
                switch bytes[pos + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    pos += 2
                case UInt8(ascii: "u"):
                    guard pos + 6 <= bytes.count else { return false }
                    for j in (pos + 2)..<(pos + 6) {
                        switch bytes[j] {
                        case 0x30...0x39, 0x41...0x46, 0x61...0x66: continue
                        default: return false
                        }
                    }
                    pos += 6
                default:
                    return false
                }
                continue
            }
            guard c >= 0x20 else { return false }  // raw control characters are not JSON
            pos += 1
        }
    }

    mutating func literal(_ word: StaticString, _ kind: JSONNode.Kind) -> Bool {
        let n = word.utf8CodeUnitCount
        guard pos + n <= bytes.count else { return false }
        let w = word.utf8Start
        for i in 0..<n where bytes[pos + i] != w[i] { return false }
        push(kind, pos, pos + n)
        pos += n
        return true
    }

    mutating func number() -> Bool {
        let start = pos
        @inline(__always) func digits(_ s: inout Scanner) -> Int {
            let from = s.pos
            while s.pos < s.bytes.count, s.bytes[s.pos] >= 0x30, s.bytes[s.pos] <= 0x39 { s.pos += 1 }
            return s.pos - from
        }
        if bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < bytes.count else { return false }
        if bytes[pos] == UInt8(ascii: "0") {
            pos += 1
        } else {
            guard digits(&self) > 0 else { return false }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            pos += 1
            guard digits(&self) > 0 else { return false }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard digits(&self) > 0 else { return false }
        }
        push(.number, start, pos)
        return true
    }
}
