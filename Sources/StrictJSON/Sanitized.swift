/// Text from outside made safe to show in a problem line or a log: printable ASCII only (any other
/// byte is `?`), whitespace runs folded to one space, cut to a limit. Every store's answers,
/// certificates and receipts are shown through it, so no control byte or long secret-bearing
/// body ever reaches a log whole.
package enum Sanitized {
    /// Printable ASCII only, whitespace runs folded, cut to `limit` characters (then "…").
    package static func text<S: Sequence>(_ bytes: S, limit: Int) -> String where S.Element == UInt8 {
        var out = ""
        var lastSpace = false
        for c in bytes {
            if out.utf8.count >= limit {
                out += "…"
                break
            }
            if c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D {
                if !lastSpace, !out.isEmpty { out.append(" ") }
                lastSpace = true
                continue
            }
            lastSpace = false
            out.append(c >= 0x21 && c <= 0x7E ? Character(Unicode.Scalar(c)) : "?")
        }
        return out
    }
}
