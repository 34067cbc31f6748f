// Text for SpreadsheetML: XML 1.0 escaping plus the one escape Excel adds on its own.

enum XMLText {
    /// `text` as element content or an attribute value (quotes escaped too, so one function
    /// serves both). Characters XML 1.0 forbids (C0 controls other than tab, LF, CR, and
    /// U+FFFE/U+FFFF) are dropped: a parser refuses the whole sheet otherwise, and Excel then
    /// offers to "repair" the workbook by deleting the sheet's data.
    ///
    /// CR is written as `&#13;`, since a parser turns a literal CR (and CRLF) into LF. And a
    /// `_xHHHH_` in the text gets its `_` written as `_x005F_`: Excel and LibreOffice decode
    /// `_xHHHH_` in cell text as the character U+HHHH, so a value that merely contains those
    /// seven characters would otherwise come back changed.
    static func escape(_ text: String) -> String {
        // Most cells (ids, codes, dates, reasons with `_`) need nothing: one pass over the bytes,
        // no copy.
        var previousUnderscore = false
        if !text.utf8.contains(where: { b in
            defer { previousUnderscore = b == 0x5F }
            return mayChange(b, afterUnderscore: previousUnderscore)
        }) {
            return text
        }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        let scalars = Array(text.unicodeScalars)
        for (i, u) in scalars.enumerated() {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(u)
            case "_" where looksLikeExcelEscape(scalars, at: i): out += "_x005F_"
            default:
                if u.value < 0x20 || u.value == 0xFFFE || u.value == 0xFFFF { continue }
                out.unicodeScalars.append(u)
            }
        }
        return out
    }

    /// What `plain` did with a text.
    enum Plain {
        /// Copied as it is: ASCII, `count` bytes.
        case ascii(count: Int)
        /// Copied as it is, with characters beyond ASCII.
        case copied
        /// Nothing copied: the text needs `escape`.
        case needsEscape
    }

    /// Appends `text` to `xml` when `escape` would return it unchanged (the test `escape` makes
    /// first, here in one pass over contiguous bytes that also tells whether the text is ASCII).
    static func plain(_ text: String, into xml: inout [UInt8]) -> Plain {
        var text = text
        return text.withUTF8 { bytes in
            var previousUnderscore = false
            var high: UInt8 = 0
            for b in bytes {
                if mayChange(b, afterUnderscore: previousUnderscore) { return .needsEscape }
                previousUnderscore = b == 0x5F
                high |= b
            }
            xml.append(contentsOf: bytes)
            return high < 0x80 ? .ascii(count: bytes.count) : .copied
        }
    }

    /// Whether `escape` may change the text at the byte `b` (`afterUnderscore`: the byte before
    /// it is `_`): markup, a control character, the lead byte of U+FFFE/U+FFFF (0xEF), or the `x`
    /// of a possible `_xHHHH_`. False for every byte of a text `escape` returns unchanged.
    @inline(__always)
    private static func mayChange(_ b: UInt8, afterUnderscore: Bool) -> Bool {
        b < 0x20 || b == 0x26 || b == 0x3C || b == 0x3E || b == 0x22 || b == 0x27 || b == 0xEF
            || (afterUnderscore && (b == 0x78 || b == 0x58))
    }

    /// `_x` + four hex digits + `_` starting at `i`.
    private static func looksLikeExcelEscape(_ s: [Unicode.Scalar], at i: Int) -> Bool {
        guard i + 6 < s.count, s[i + 1] == "x" || s[i + 1] == "X", s[i + 6] == "_" else { return false }
        return s[(i + 2)...(i + 5)].allSatisfy { $0.properties.isASCIIHexDigit }
    }

    /// True when the text needs `xml:space="preserve"` to keep its leading or trailing blanks.
    static func needsPreserve(_ text: String) -> Bool {
        // Printable ASCII at both ends (nearly every cell) is no blank; only the rest is looked up.
        if let first = text.utf8.first, let last = text.utf8.last, first > 0x20, first < 0x80, last > 0x20, last < 0x80 {
            return false
        }
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last else { return false }
        return first.properties.isWhitespace || last.properties.isWhitespace
    }
}
