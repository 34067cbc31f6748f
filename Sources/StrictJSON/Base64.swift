// Strict base64 (RFC 4648), both alphabets: the one decoder every store's signed data and
// answers go through (Apple's JWS segments and certificates, Google's assertions and Pub/Sub data).

/// Strict base64 decoding. Foundation's decoder is not used: it takes padding in base64url,
/// skips nothing or everything depending on options, and says nothing about where the text
/// stops being base64. Here exactly one text encodes each byte string (unused low bits must be
/// zero), so a DER certificate and its base64 are one-to-one, which the chain cache relies on.
package enum Base64 {
    /// The 6-bit value of an alphabet byte, 0xFF for any other byte. Index 0 is the standard
    /// alphabet (`+` `/`), index 1 base64url (`-` `_`).
    private static let tables: [[UInt8]] = [makeTable(plus: UInt8(ascii: "+"), slash: UInt8(ascii: "/")),
                                            makeTable(plus: UInt8(ascii: "-"), slash: UInt8(ascii: "_"))]

    private static func makeTable(plus: UInt8, slash: UInt8) -> [UInt8] {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            t[Int(c)] = UInt8(i)
        }
        t[Int(plus)] = 62
        t[Int(slash)] = 63
        return t
    }

    /// Why a text is not base64; `offset` counts bytes of the text from 0.
    package enum Problem: Error, Equatable {
        /// A byte outside the alphabet.
        case badByte(UInt8, offset: Int)
        /// A length no base64 text has.
        case badLength(Int)
        /// Bits past the last byte are not zero (another text for the same bytes).
        case nonCanonical
        /// Nothing at all.
        case empty

        /// The problem in a few words, with the offset.
        package var text: String {
            switch self {
            case .badByte(let b, let offset):
                let shown = b >= 0x21 && b <= 0x7E && b != 0x27 ? "'\(Character(Unicode.Scalar(b)))'" : "byte " + Base64.hex(b)
                return "\(shown) at offset \(offset)"
            case .badLength(let n): return "length \(n) is impossible"
            case .nonCanonical: return "unused bits are not zero"
            case .empty: return "empty"
            }
        }
    }

    /// base64url without padding (RFC 7515 §2): the JWS segments.
    package static func decodeURL(_ s: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], Problem> {
        decode(s, table: 1, padded: false)
    }

    /// Standard base64 with its `=` padding (RFC 4648 §4): the `x5c` certificates (RFC 7515 §4.1.6).
    package static func decodeStandard(_ s: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], Problem> {
        decode(s, table: 0, padded: true)
    }

    private static func decode(_ s: UnsafeBufferPointer<UInt8>, table: Int, padded: Bool) -> Result<[UInt8], Problem> {
        guard !s.isEmpty else { return .failure(.empty) }
        var n = s.count
        if padded {
            guard n % 4 == 0 else { return .failure(.badLength(n)) }
            if s[n - 1] == UInt8(ascii: "=") { n -= 1 }
            if s[n - 1] == UInt8(ascii: "=") { n -= 1 }
        }
        let tail = n % 4
        guard tail != 1 else { return .failure(.badLength(s.count)) }
        var problem: Problem?
        let out = [UInt8](unsafeUninitializedCapacity: n / 4 * 3 + max(0, tail - 1)) { out, initialized in
            tables[table].withUnsafeBufferPointer { t in
                // Four characters make three bytes; a value above 63 marks a byte outside the alphabet.
                func value(_ i: Int) -> UInt32? {
                    let v = t[Int(s[i])]
                    if v == 0xFF { problem = .badByte(s[i], offset: i) }
                    return v == 0xFF ? nil : UInt32(v)
                }
                var i = 0, o = 0
                while i + 4 <= n {
                    let a = t[Int(s[i])], b = t[Int(s[i + 1])], c = t[Int(s[i + 2])], d = t[Int(s[i + 3])]
                    guard (a | b | c | d) & 0x80 == 0 else {
                        for j in i..<(i + 4) where value(j) == nil { break }
                        initialized = o
                        return
                    }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    out[o] = UInt8(truncatingIfNeeded: v >> 16)
                    out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
                if tail >= 2 {
                    guard let a = value(i), let b = value(i + 1) else { initialized = o; return }
                    out[o] = UInt8(truncatingIfNeeded: a << 2 | b >> 4)
                    o += 1
                    if tail == 3 {
                        guard let c = value(i + 2) else { initialized = o; return }
                        out[o] = UInt8(truncatingIfNeeded: (b & 0xF) << 4 | c >> 2)
                        o += 1
                        // Canonical: the bits past the last byte are zero.
                        if c & 0x3 != 0 { problem = .nonCanonical }
                    } else if b & 0xF != 0 {
                        problem = .nonCanonical
                    }
                }
                initialized = o
            }
        }
        if let problem { return .failure(problem) }
        return .success(out)
    }

    /// base64url without padding.
    package static func encodeURL<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        encode(bytes, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", padded: false)
    }

    private static func encode<C: Collection>(_ bytes: C, alphabet: StaticString, padded: Bool) -> String
    where C.Element == UInt8 {
        let a = alphabet.utf8Start
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var it = bytes.makeIterator()
        while let b0 = it.next() {
            let b1 = it.next(), b2 = b1 == nil ? nil : it.next()
            let v = UInt32(b0) << 16 | UInt32(b1 ?? 0) << 8 | UInt32(b2 ?? 0)
            out.append(a[Int(v >> 18)])
            out.append(a[Int(v >> 12 & 63)])
            if b1 != nil { out.append(a[Int(v >> 6 & 63)]) } else if padded { out.append(UInt8(ascii: "=")) }
            if b2 != nil { out.append(a[Int(v & 63)]) } else if padded { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `0x` and two capital hex digits.
    package static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0xF)])
    }
}
