internal import CLibPQ

/// A connection string (`postgresql://…` URI or `key=value …`) checked before libpq sees it,
/// so that a malformed one is told apart from an unreachable server, and so that no error ever
/// echoes it: libpq's own parse errors quote the offending part, password included.
public struct ConnectionString: Sendable {
    public struct Malformed: Error, CustomStringConvertible, Sendable {
        /// What is wrong, in words that never contain the password.
        public var problem: String
        /// The string with any password replaced by `***`.
        public var redacted: String
        public var description: String { "\(problem) (\(redacted))" }
    }

    public let text: String

    /// The string with any password replaced by `***` (the URI's `user:password@` part and a
    /// `password` parameter or keyword).
    public var redacted: String { Self.redact(text) }

    public init(_ text: String) throws {
        self.text = text
        if let problem = Self.uriProblem(text) ?? Self.libpqProblem(text) {
            throw Malformed(problem: problem, redacted: Self.redact(text))
        }
    }

    static func isURI(_ s: String) -> Bool { s.hasPrefix("postgresql://") || s.hasPrefix("postgres://") }

    /// The checks libpq makes of a URI, with messages that name the part, never its text.
    static func uriProblem(_ s: String) -> String? {
        guard isURI(s) else { return nil }
        let bytes = Array(s.utf8)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, isHex(bytes[i + 1]), isHex(bytes[i + 2]) else {
                    return "it has a '%' that is not followed by two hexadecimal digits (percent-encoding)"
                }
                if bytes[i + 1] == UInt8(ascii: "0") && bytes[i + 2] == UInt8(ascii: "0") {
                    return "it has a percent-encoded NUL (%00)"
                }
                i += 3
            } else {
                i += 1
            }
        }
        let rest = s[s.firstRange(of: "://")!.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        // Hosts, comma-separated, each `host[:port]` or `[ipv6][:port]`.
        for host in authority.split(separator: ",", omittingEmptySubsequences: false) {
            var portText: Substring?
            if host.hasPrefix("[") {
                guard let close = host.firstIndex(of: "]") else { return "an IPv6 address in [ ] is not closed" }
                let after = host[host.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { return "unexpected text after the IPv6 address" }
                    portText = after.dropFirst()
                }
            } else {
                if host.contains("]") { return "a ']' without '['" }
                if let colon = host.firstIndex(of: ":") { portText = host[host.index(after: colon)...] }
            }
            if let portText, !portText.isEmpty {
                guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(portText), (1...65535).contains(port)
                else { return "the port is not a number from 1 to 65535" }
            }
        }
        return nil
    }

    /// libpq's own parser as the last word; its message is not shown (it quotes the string).
    static func libpqProblem(_ s: String) -> String? {
        var errmsg: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(s, &errmsg) else {
            let said = errmsg.map { String(cString: $0) } ?? ""
            if let errmsg { PQfreemem(errmsg) }
            if said.contains("out of memory") { return "libpq ran out of memory parsing it" }
            return isURI(s) ? "libpq cannot parse it as a URI" : "it is neither a postgresql:// URI nor key=value pairs libpq accepts"
        }
        PQconninfoFree(options)
        return nil
    }

    private static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
    }

    /// Where the passwords are: in a URI the text between the user's `:` and the last `@` of the
    /// authority, and every `password=` value (a URI parameter up to `&`, or a keyword up to a
    /// space, or quoted). Ascending, not overlapping.
    public static func passwordRanges(in s: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        if isURI(s), let scheme = s.firstRange(of: "://") {
            let rest = s[scheme.upperBound...]
            let end = rest.firstIndex(of: "?") ?? rest.endIndex
            if let at = rest[..<end].lastIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") {
                ranges.append(s.index(after: colon)..<at)
            }
        }
        var rest = s[...]
        while let r = rest.firstRange(of: "password=") {
            var j = r.upperBound
            if j < rest.endIndex, rest[j] == "'" {
                j = rest.index(after: j)
                while j < rest.endIndex, rest[j] != "'" {
                    if rest[j] == "\\" { j = rest.index(after: j); if j == rest.endIndex { break } }
                    j = rest.index(after: j)
                }
                if j < rest.endIndex { j = rest.index(after: j) }
            } else {
                while j < rest.endIndex, rest[j] != "&", rest[j] != " " { j = rest.index(after: j) }
            }
            if !(ranges.first?.overlaps(r.upperBound..<j) ?? false) { ranges.append(r.upperBound..<j) }
            rest = s[j...]
        }
        return ranges.sorted { $0.lowerBound < $1.lowerBound }
    }

    /// The string with every password (`passwordRanges`) replaced by `***`.
    public static func redact(_ s: String) -> String {
        var out = ""
        var from = s.startIndex
        for r in passwordRanges(in: s) {
            out += s[from..<r.lowerBound] + "***"
            from = r.upperBound
        }
        return out + s[from...]
    }
}
