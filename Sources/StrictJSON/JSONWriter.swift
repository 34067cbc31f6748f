/// Writes JSON straight into bytes: the request bodies sent to Apple and the answer records
/// stored per answer. `JSONEncoder` gives the same documents, but its boxing and reflection cost
/// more than the rest of an answer's bookkeeping (a profile of `make bench-verify`).
///
/// Commas are placed by the writer: a value, or the start of a member, after another value
/// gets one. Keys are the caller's constants and are written as they are.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    private var needsComma = false

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    /// `"key":` (then the value: a field below, or an object or array begun after it).
    public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        needsComma = false
    }

    /// A member, left out when the value is nil (as `JSONEncoder` does with optionals).
    public mutating func field(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    public mutating func field(_ name: StaticString, _ value: Int64?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    public mutating func field(_ name: StaticString, _ value: Int?) {
        field(name, value.map(Int64.init))
    }

    public mutating func field(_ name: StaticString, _ value: Bool?) {
        guard let value else { return }
        key(name)
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
        needsComma = true
    }

    /// A string value: quote, backslash and control characters escaped, everything else as its
    /// UTF-8 bytes (runs without anything to escape are copied whole).
    public mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var run = 0
            for i in utf8.indices {
                let c = utf8[i]
                guard c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") else { continue }
                if run < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i])) }
                run = i + 1
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), c])
                case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                              Self.hex(c >> 4), Self.hex(c & 0xF)])
                }
            }
            if run < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...])) }
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    public mutating func integer(_ value: Int64) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // 20 digits at most, written backwards
        let count = withUnsafeMutableBytes(of: &digits) { buffer in
            var n = 0
            repeat {
                buffer[buffer.count - 1 - n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            return n
        }
        withUnsafeBytes(of: &digits) { bytes.append(contentsOf: $0[($0.count - count)...]) }
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static func hex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
