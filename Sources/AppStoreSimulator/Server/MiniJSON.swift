// A strict little JSON reader for what clients send the simulated Server API (the bearer JWT's
// header and claims, the notification history request body). Anything doubtful is refused:
// invalid UTF-8, a repeated key, a raw control character, trailing data, nesting deeper than 16
// levels. Integers are kept apart from other numbers, so `1.5` or `1e3` is never read as a time.

enum MiniJSON: Equatable {
    case null
    case bool(Bool)
    /// An integer literal (optional minus, digits, no fraction or exponent) that fits Int64.
    case int(Int64)
    /// Any other number, as written.
    case number(String)
    case string(String)
    case array([MiniJSON])
    /// Members in order; keys are unique.
    case object([(String, MiniJSON)])

    static func == (a: MiniJSON, b: MiniJSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.number(x), .number(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)): return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    struct Failure: Error {}

    /// The one value of `bytes`, or nil.
    static func parse(_ bytes: [UInt8], maxBytes: Int = 65_536) -> MiniJSON? {
        guard bytes.count <= maxBytes else { return nil }
        var p = Parser(b: bytes)
        guard let v = try? p.value(depth: 0) else { return nil }
        p.skipSpace()
        return p.i == bytes.count ? v : nil
    }

    subscript(key: String) -> MiniJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var int: Int64? { if case .int(let n) = self { return n } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var keys: [String] { if case .object(let m) = self { return m.map(\.0) } else { return [] } }

    private struct Parser {
        let b: [UInt8]
        var i = 0

        mutating func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        }

        mutating func value(depth: Int) throws -> MiniJSON {
            guard depth < 16 else { throw Failure() }
            skipSpace()
            guard i < b.count else { throw Failure() }
            switch b[i] {
            case UInt8(ascii: "{"):
                i += 1
                var members: [(String, MiniJSON)] = []
                var keys = Set<String>()
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                while true {
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw Failure() }
                    let key = try string()
                    guard keys.insert(key).inserted else { throw Failure() }
                    skipSpace()
                    guard i < b.count, b[i] == UInt8(ascii: ":") else { throw Failure() }
                    i += 1
                    members.append((key, try value(depth: depth + 1)))
                    skipSpace()
                    guard i < b.count else { throw Failure() }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    guard b[i] == UInt8(ascii: "}") else { throw Failure() }
                    i += 1
                    return .object(members)
                }
            case UInt8(ascii: "["):
                i += 1
                var items: [MiniJSON] = []
                skipSpace()
                if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard i < b.count else { throw Failure() }
                    if b[i] == UInt8(ascii: ",") { i += 1; continue }
                    guard b[i] == UInt8(ascii: "]") else { throw Failure() }
                    i += 1
                    return .array(items)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default:
                return try number()
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard i + n <= b.count else { throw Failure() }
            for k in 0..<n where b[i + k] != word.utf8Start[k] { throw Failure() }
            i += n
        }

        mutating func number() throws -> MiniJSON {
            let start = i
            if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
            let intStart = i
            while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
            let digits = i - intStart
            guard digits > 0, !(digits > 1 && b[intStart] == 48) else { throw Failure() }
            var integral = true
            if i < b.count, b[i] == UInt8(ascii: ".") {
                integral = false
                i += 1
                let f = i
                while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
                guard i > f else { throw Failure() }
            }
            if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
                integral = false
                i += 1
                if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
                let e = i
                while i < b.count, b[i] >= 48, b[i] <= 57 { i += 1 }
                guard i > e else { throw Failure() }
            }
            let text = String(decoding: b[start..<i], as: UTF8.self)
            if integral, let n = Int64(text) { return .int(n) }
            return .number(text)
        }

        /// A string literal starting at the opening quote; escapes decoded, UTF-8 checked.
        mutating func string() throws -> String {
            i += 1
            var out: [UInt8] = []
            while true {
                guard i < b.count else { throw Failure() }
                let c = b[i]
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 { throw Failure() }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < b.count else { throw Failure() }
                let e = b[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard i + 1 < b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else { throw Failure() }
                        i += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw Failure() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw Failure()
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw Failure() }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw Failure()
                }
            }
            guard let s = String(validating: out, as: UTF8.self) else { throw Failure() }
            return s
        }

        mutating func hex4() throws -> UInt32 {
            guard i + 4 <= b.count else { throw Failure() }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                let d: UInt8
                switch c {
                case 48...57: d = c - 48
                case 65...70: d = c - 55
                case 97...102: d = c - 87
                default: throw Failure()
                }
                v = v << 4 | UInt32(d)
                i += 1
            }
            return v
        }
    }
}
