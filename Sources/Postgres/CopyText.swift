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
    public private(set) var bytes: [UInt8] = []
    private var fieldsInRow = 0

    public init(capacity: Int = 1 << 16) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if fieldsInRow > 0 { bytes.append(9) }
        fieldsInRow += 1
    }

    private mutating func null() { bytes.append(92); bytes.append(78) }

    public mutating func field(_ value: String?) {
        separate()
        guard let value else { return null() }
        // In place, without a copy of the string (a copy retained and released it, per field).
        if value.utf8.withContiguousStorageIfAvailable({ Self.appendEscaped($0, to: &bytes) }) != nil { return }
        var copy = value
        copy.withUTF8 { Self.appendEscaped($0, to: &bytes) }
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

    /// Integers are written digit by digit into the buffer: no String per field (the generic
    /// version, not specialized across the module, made one and looked up its metadata).
    public mutating func field(_ value: Int64?) {
        separate()
        guard let value else { return null() }
        if value < 0 { bytes.append(45) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { d in
            repeat {
                d[19 - count] = 48 + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: d[(20 - count)...])
        }
    }

    public mutating func field(_ value: Int?) { field(value.map(Int64.init)) }
    public mutating func field(_ value: Int32?) { field(value.map(Int64.init)) }

    public mutating func field(_ value: Bool?) {
        separate()
        guard let value else { return null() }
        bytes.append(value ? 116 : 102)
    }

    public mutating func endRow() {
        bytes.append(10)
        fieldsInRow = 0
    }

    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fieldsInRow = 0
    }
}
