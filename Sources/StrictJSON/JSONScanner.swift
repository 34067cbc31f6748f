// A small validating JSON scanner for store answers (first written for verifyReceipt's).
//
// Why not JSONSerialization. Not for exactness: Foundation on Linux keeps 1000000315361723,
// 2^53 + 1 and a 20-digit integer exact (checked with swift-corelibs-foundation of Swift 6.3).
// For three other reasons, measured or checked on 2026-11-23 (release build, one core):
// - speed: parsing *and* classifying an answer here takes a fraction of JSONSerialization's
//   parse and walk to the transaction ids alone (docs/benchmarks.md, "Measured choices"). The
//   tape points into the body, so the
//   multi-kilobyte `latest_receipt` is skipped 8 bytes at a time and never copied;
// - strictness: JSONSerialization takes an object with the same key twice (one of them silently
//   wins), and says nothing of where a body stops being JSON; Apple never repeats a key, so a
//   body that does is garbage, and the problem text says where;
// - strings or numbers: a field may come as either; the tape keeps a number's exact lexeme, so
//   the digits are stored as text without a round trip through NSNumber.
// This scanner records the document as a flat tape of nodes pointing into the body bytes:
// numbers keep their exact text, strings are decoded only when a field is read.
//
// It accepts only what a strict reader of RFC 8259 accepts, and a little less: the body must be
// valid UTF-8 everywhere (no overlong forms, no encoded surrogates, nothing above U+10FFFF, no cut
// sequences; no escaped lone surrogate such as "\ud800" either), exactly one value, no byte-order
// mark, no object with the same key twice (compared as decoded text), at most `maxDepth` levels
// of nesting. Anything else is a `JSONError` saying what and where.

struct Scanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var nodes: [JSONNode] = []
    var error: JSONError?

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        nodes.reserveCapacity(64)
    }

    mutating func scanDocument() -> Bool {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { return fail(.byteOrderMark) }
        skipSpace()
        guard value(depth: 0) else { return false }
        skipSpace()
        guard pos == bytes.count else {
            if let bad = invalidUTF8(at: pos) { return fail(bad) }
            return fail(.trailingData(offset: pos))
        }
        return true
    }

    // MARK: Errors

    @inline(__always)
    mutating func fail(_ e: JSONError) -> Bool {
        error = e
        return false
    }

    /// The error for the byte at `pos` that the grammar does not allow there.
    mutating func unexpected() -> Bool {
        guard pos < bytes.count else { return fail(.unexpectedEnd(offset: pos)) }
        if let bad = invalidUTF8(at: pos) { return fail(bad) }
        return fail(.unexpectedByte(byte: bytes[pos], offset: pos))
    }

    /// The UTF-8 error of the sequence starting at `at`, if it is not a valid one.
    func invalidUTF8(at: Int) -> JSONError? {
        guard at < bytes.count, bytes[at] >= 0x80 else { return nil }
        return utf8Length(at: at) == nil ? .invalidUTF8(byte: bytes[at], offset: at) : nil
    }

    /// The length of the well-formed UTF-8 sequence starting at `at` (a byte >= 0x80), or nil
    /// (Unicode table 3-7: no overlongs, no surrogates, nothing above U+10FFFF).
    @inline(__always)
    func utf8Length(at: Int) -> Int? {
        let b0 = bytes[at]
        let n = bytes.count
        @inline(__always) func cont(_ i: Int, _ lo: UInt8 = 0x80, _ hi: UInt8 = 0xBF) -> Bool {
            i < n && bytes[i] >= lo && bytes[i] <= hi
        }
        switch b0 {
        case 0xC2...0xDF:
            return cont(at + 1) ? 2 : nil
        case 0xE0:
            return cont(at + 1, 0xA0) && cont(at + 2) ? 3 : nil
        case 0xE1...0xEC, 0xEE, 0xEF:
            return cont(at + 1) && cont(at + 2) ? 3 : nil
        case 0xED:
            return cont(at + 1, 0x80, 0x9F) && cont(at + 2) ? 3 : nil
        case 0xF0:
            return cont(at + 1, 0x90) && cont(at + 2) && cont(at + 3) ? 4 : nil
        case 0xF1...0xF3:
            return cont(at + 1) && cont(at + 2) && cont(at + 3) ? 4 : nil
        case 0xF4:
            return cont(at + 1, 0x80, 0x8F) && cont(at + 2) && cont(at + 3) ? 4 : nil
        default:
            return nil  // 0x80…0xC1 (continuation, overlong lead), 0xF5…0xFF
        }
    }

    // MARK: Grammar

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

    /// Recursion is bounded by `maxDepth`: a body of 10,000 `[` is refused at level 64.
    mutating func value(depth: Int) -> Bool {
        guard pos < bytes.count else { return fail(.unexpectedEnd(offset: pos)) }
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
        guard depth < JSONDocument.maxDepth else { return fail(.tooDeep) }
        let start = pos
        let index = nodes.count
        nodes.append(JSONNode(kind: object ? .object : .array, start: Int32(start), end: 0, after: 0))
        pos += 1
        skipSpace()
        let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var members = 0
        if pos < bytes.count, bytes[pos] == close {
            pos += 1
        } else {
            while true {
                if object {
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { return unexpected() }
                    guard string() else { return false }
                    skipSpace()
                    guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { return unexpected() }
                    pos += 1
                    skipSpace()
                }
                guard value(depth: depth + 1) else { return false }
                members += 1
                skipSpace()
                guard pos < bytes.count else { return fail(.unexpectedEnd(offset: pos)) }
                let c = bytes[pos]
                if c == close {
                    pos += 1
                    break
                }
                guard c == UInt8(ascii: ",") else { return unexpected() }
                pos += 1
                skipSpace()
            }
        }
        nodes[index].end = Int32(pos)
        nodes[index].after = Int32(nodes.count)
        if object && members > 1 {
            if let key = repeatedKey(object: index, members: members) { return fail(.duplicateKey(key)) }
        }
        return true
    }

    // MARK: Repeated keys

    /// The first key of the object at `index` that appears twice, sanitized; nil when all differ.
    func repeatedKey(object index: Int, members: Int) -> String? {
        let end = Int(nodes[index].after)
        if members <= JSONDocument.pairwiseKeyLimit {
            // A 128-bit set of key signatures (length, first and last byte): a key whose bit is
            // new cannot repeat an earlier one; only on a hit is it compared with the keys before
            // it. An object of Apple's costs a few instructions per key and allocates nothing.
            var low: UInt64 = 0, high: UInt64 = 0
            var child = index + 1
            while child < end {
                let key = nodes[child]
                if key.kind == .escapedString { return repeatedKeyBySet(object: index, members: members) }
                let start = Int(key.start), count = Int(key.end) - start
                let edges = count == 0 ? 0 : UInt64(bytes[start]) << 8 | UInt64(bytes[start + count - 1])
                let bit = Int(((UInt64(count) << 16 | edges) &* 0x9E37_79B9_7F4A_7C15) >> 57)
                let mask: UInt64 = 1 << UInt64(bit & 63)
                if (bit < 64 ? low : high) & mask != 0 {
                    var other = index + 1
                    while other < child {
                        if sameKey(key, nodes[other]) { return shown(key) }
                        other = Int(nodes[other + 1].after)
                    }
                }
                if bit < 64 { low |= mask } else { high |= mask }
                child = Int(nodes[child + 1].after)
            }
            return nil
        }
        return repeatedKeyBySet(object: index, members: members)
    }

    /// Any object, by decoded key text in a hash set (linear in the number of keys).
    func repeatedKeyBySet(object index: Int, members: Int) -> String? {
        let end = Int(nodes[index].after)
        var seen = Set<String>(minimumCapacity: members)
        var child = index + 1
        while child < end {
            let key = nodes[child]
            if !seen.insert(text(key)).inserted { return shown(key) }
            child = Int(nodes[child + 1].after)
        }
        return nil
    }

    @inline(__always)
    func sameKey(_ a: JSONNode, _ b: JSONNode) -> Bool {
        if a.kind == .string && b.kind == .string {
            let count = Int(a.end - a.start)
            guard count == Int(b.end - b.start) else { return false }
            let p = bytes.baseAddress!
            for i in 0..<count where p[Int(a.start) + i] != p[Int(b.start) + i] { return false }
            return true
        }
        return text(a) == text(b)
    }

    func text(_ key: JSONNode) -> String {
        let raw = UnsafeBufferPointer(rebasing: bytes[Int(key.start)..<Int(key.end)])
        return key.kind == .escapedString ? JSONDocument.decode(raw) : String(decoding: raw, as: UTF8.self)
    }

    func shown(_ key: JSONNode) -> String {
        Sanitized.text(text(key).utf8, limit: 20)
    }

    // MARK: Scalars

    mutating func string() -> Bool {
        pos += 1  // opening quote
        let start = pos
        var escaped = false
        let raw = UnsafeRawPointer(bytes.baseAddress!)
        while true {
            // Skip 8 plain ASCII bytes at a time (no quote, backslash, control character or byte
            // >= 0x80): the multi-kilobyte base64 `latest_receipt` is most of a typical answer.
            while pos + 8 <= bytes.count {
                let w = raw.loadUnaligned(fromByteOffset: pos, as: UInt64.self)
                let q = w ^ 0x2222_2222_2222_2222
                let b = w ^ 0x5C5C_5C5C_5C5C_5C5C
                let ones: UInt64 = 0x0101_0101_0101_0101
                let high: UInt64 = 0x8080_8080_8080_8080
                let special = ((q &- ones) & ~q) | ((b &- ones) & ~b) | ((w &- 0x2020_2020_2020_2020) & ~w) | w
                if special & high != 0 { break }
                pos += 8
            }
            guard pos < bytes.count else { return fail(.unexpectedEnd(offset: pos)) }  // unterminated
            let c = bytes[pos]
            if c == UInt8(ascii: "\"") {
                push(escaped ? .escapedString : .string, start, pos)
                pos += 1
                return true
            }
            if c >= 0x80 {
                guard let n = utf8Length(at: pos) else { return fail(.invalidUTF8(byte: c, offset: pos)) }
                pos += n
                continue
            }
            if c == UInt8(ascii: "\\") {
                escaped = true
                guard pos + 1 < bytes.count else { return fail(.unexpectedEnd(offset: pos + 1)) }
                switch bytes[pos + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    pos += 2
                case UInt8(ascii: "u"):
                    let at = pos
                    guard let v = hex4(at + 2) else { return false }
                    pos += 6
                    if v >= 0xDC00 && v < 0xE000 { return fail(.loneSurrogate(offset: at)) }
                    if v >= 0xD800 && v < 0xDC00 {
                        guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u")
                        else { return fail(.loneSurrogate(offset: at)) }
                        guard let low = hex4(pos + 2) else { return false }
                        guard low >= 0xDC00 && low < 0xE000 else { return fail(.loneSurrogate(offset: at)) }
                        pos += 6
                    }
                default:
                    pos += 1
                    return unexpected()
                }
                continue
            }
            guard c >= 0x20 else { return fail(.controlCharacter(byte: c, offset: pos)) }
            pos += 1
        }
    }

    /// The four hex digits at `at` of a `\u` escape.
    mutating func hex4(_ at: Int) -> UInt32? {
        var v: UInt32 = 0
        for j in at..<(at + 4) {
            guard j < bytes.count else {
                _ = fail(.unexpectedEnd(offset: j))
                return nil
            }
            let c = bytes[j]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default:
                pos = j
                _ = unexpected()
                return nil
            }
            v = v << 4 | d
        }
        return v
    }

    mutating func literal(_ word: StaticString, _ kind: JSONNode.Kind) -> Bool {
        let n = word.utf8CodeUnitCount
        let w = word.utf8Start
        let start = pos
        for i in 0..<n {
            guard pos < bytes.count, bytes[pos] == w[i] else { return unexpected() }
            pos += 1
        }
        push(kind, start, pos)
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
        guard pos < bytes.count else { return fail(.unexpectedEnd(offset: pos)) }
        if bytes[pos] == UInt8(ascii: "0") {
            pos += 1
        } else {
            guard digits(&self) > 0 else { return unexpected() }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            pos += 1
            guard digits(&self) > 0 else { return unexpected() }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard digits(&self) > 0 else { return unexpected() }
        }
        push(.number, start, pos)
        return true
    }
}
