/// Splits one COPY text-format line into fields, undoing its escapes. nil is `\N`.
public enum CopyText {
    public static func fields(_ line: UnsafeBufferPointer<UInt8>) -> [String?] {
        var out: [String?] = []
        out.reserveCapacity(16)
        var current: [UInt8] = []
        current.reserveCapacity(64)
        var isNull = false
        var i = 0
        let n = line.count
        while i < n {
            let b = line[i]
            if b == 9 {
                out.append(isNull ? nil : String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
                isNull = false
            } else if b == 92, i + 1 < n {
                i += 1
                switch line[i] {
                case 78: isNull = true
                case 116: current.append(9)
                case 110: current.append(10)
                case 114: current.append(13)
                case 98: current.append(8)
                case 102: current.append(12)
                case 118: current.append(11)
                default: current.append(line[i])
                }
            } else {
                current.append(b)
            }
            i += 1
        }
        out.append(isNull ? nil : String(decoding: current, as: UTF8.self))
        return out
    }
}
