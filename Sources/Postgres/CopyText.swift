/// Splits one COPY text-format line into fields, undoing its escapes. nil is `\N`.
public enum CopyText {
    public static func fields(_ line: UnsafeBufferPointer<UInt8>) -> [String?] {
        var out: [String?] = []
        out.reserveCapacity(16)
        let n = line.count
        var start = 0
        while true {
            // One field: up to the next tab. Most fields have no escape and become a String
            // straight from the buffer; the rest are unescaped byte by byte. (memchr, tried for
            // the JWS fields, cost more on the night's millions of short fields than it saved.)
            var end = start
            var escaped = false
            while end < n, line[end] != 9 {
                if line[end] == 92 { escaped = true }
                end += 1
            }
            let field = UnsafeBufferPointer(rebasing: line[start..<end])
            if !escaped {
                out.append(String(decoding: field, as: UTF8.self))
            } else if field.count == 2, field[1] == 78 {
                out.append(nil)
            } else {
                out.append(unescape(field))
            }
            guard end < n else { break }
            start = end + 1
        }
        return out
    }

    /// A field with backslash escapes (`\N` inside a longer field is taken as a null, as before).
    private static func unescape(_ field: UnsafeBufferPointer<UInt8>) -> String? {
        var current: [UInt8] = []
        current.reserveCapacity(field.count)
        var isNull = false
        var i = 0
        let n = field.count
        while i < n {
            let b = field[i]
            if b == 92, i + 1 < n {
                i += 1
                switch field[i] {
                case 78: isNull = true
                case 116: current.append(9)
                case 110: current.append(10)
                case 114: current.append(13)
                case 98: current.append(8)
                case 102: current.append(12)
                case 118: current.append(11)
                default: current.append(field[i])
                }
            } else {
                current.append(b)
            }
            i += 1
        }
        return isNull ? nil : String(decoding: current, as: UTF8.self)
    }
}

/// Builds COPY text-format rows field by field into one byte buffer (`PGCopyWriter.write`):
/// no array of strings per row. Text is escaped as `PGCopyWriter.row` escapes it; nil is `\N`.
public struct CopyTextEncoder {
    /// The rows: the first `used` bytes of `storage` (written in place, past `used` only once
    /// reserved: an append per byte checked the array's uniqueness and capacity each time).
    private var storage: [UInt8]
    private var used = 0
    /// A field was written in the current row (the next is preceded by a tab).
    private var open = false

    public init(capacity: Int = 1 << 16) { storage = [UInt8](repeating: 0, count: Swift.max(capacity, 64)) }

    public var bytes: ArraySlice<UInt8> { storage[0..<used] }

    /// Calls `body` with where the next byte goes, `n` bytes of room at least and the separator
    /// written; `body` returns where its field ends.
    @inline(__always)
    private mutating func put(room n: Int, _ body: (UnsafeMutablePointer<UInt8>, Int) -> Int) {
        if used &+ n &+ 1 > storage.count { storage += repeatElement(0, count: Swift.max(storage.count, n + 1)) }
        let separate = open, start = used
        open = true
        used = storage.withUnsafeMutableBufferPointer { p in
            let base = p.baseAddress!
            var at = start
            if separate { base[at] = 9; at &+= 1 }
            return body(base, at)
        }
    }

    private mutating func null() { put(room: 2) { p, at in p[at] = 92; p[at + 1] = 78; return at + 2 } }

    public mutating func field(_ value: String?) {
        guard let value else { return null() }
        // In place, without a copy of the string (a copy retained and released it, per field).
        if value.utf8.withContiguousStorageIfAvailable({ escaped($0) }) != nil { return }
        var copy = value
        copy.withUTF8 { escaped($0) }
    }

    /// `text` escaped as COPY's text format escapes it (backslash, tab, newline, carriage return).
    private mutating func escaped(_ text: UnsafeBufferPointer<UInt8>) {
        put(room: text.count &* 2) { p, start in
            var at = start
            for byte in text {
                switch byte {
                case 92: p[at] = 92; p[at &+ 1] = 92; at &+= 2
                case 9: p[at] = 92; p[at &+ 1] = 116; at &+= 2
                case 10: p[at] = 92; p[at &+ 1] = 110; at &+= 2
                case 13: p[at] = 92; p[at &+ 1] = 114; at &+= 2
                default: p[at] = byte; at &+= 1
                }
            }
            return at
        }
    }

    public mutating func field(_ value: Int64?) {
        guard let value else { return null() }
        put(room: 20) { p, start in
            var at = start
            if value < 0 { p[at] = 45; at &+= 1 }
            var magnitude = value.magnitude
            var digits = 1
            var rest = magnitude / 10
            while rest > 0 { digits &+= 1; rest /= 10 }
            let end = at &+ digits
            var k = end &- 1
            repeat {
                p[k] = 48 &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
                k &-= 1
            } while magnitude > 0
            return end
        }
    }

    public mutating func field(_ value: Int?) { field(value.map(Int64.init)) }
    public mutating func field(_ value: Int32?) { field(value.map(Int64.init)) }

    public mutating func field(_ value: Bool?) {
        guard let value else { return null() }
        put(room: 1) { p, at in p[at] = value ? 116 : 102; return at + 1 }
    }

    public mutating func endRow() {
        if used + 1 > storage.count { storage += repeatElement(0, count: storage.count) }
        storage[used] = 10
        used += 1
        open = false
    }

    public mutating func removeAll() {
        used = 0
        open = false
    }

    /// `text` as a COPY text field: a field without a byte to escape (nearly all) is copied whole,
    /// the rest byte by byte (backslash, tab, newline, carriage return).
    static func appendEscaped(_ text: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        // Or-ed over a table, no branch per byte (the writer escapes every field it sends).
        let plain = escapeClass.withUnsafeBufferPointer { table in
            var escape: UInt8 = 0
            for byte in text { escape |= table[Int(byte)] }
            return escape == 0
        }
        guard !plain else {
            out.append(contentsOf: text)
            return
        }
        for byte in text {
            switch byte {
            case 92: out.append(92); out.append(92)
            case 9: out.append(92); out.append(116)
            case 10: out.append(92); out.append(110)
            case 13: out.append(92); out.append(114)
            default: out.append(byte)
            }
        }
    }

    /// 1 for the bytes COPY's text format escapes (backslash, tab, newline, carriage return).
    private static let escapeClass: [UInt8] = (0..<256).map { $0 == 92 || $0 == 9 || $0 == 10 || $0 == 13 ? 1 : 0 }
}
