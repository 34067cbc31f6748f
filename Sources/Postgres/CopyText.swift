/// Splits one COPY text-format line into fields, undoing its escapes. nil is `\N`.
public enum CopyText {
    public static func fields(_ line: UnsafeBufferPointer<UInt8>) -> [String?] {
        var out: [String?] = []
        out.reserveCapacity(16)
        let n = line.count
        var start = 0
        while true {
            // One field: up to the next tab. Most fields have no escape and become a String
            // straight from the buffer; the rest are unescaped byte by byte.
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
