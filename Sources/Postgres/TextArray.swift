/// A Postgres `text[]` literal for a parameter (`$1::text[]`): each element quoted, its `\` and
/// `"` escaped, so any text travels as itself. Built over the UTF-8 bytes: both are ASCII and
/// never part of a longer character's bytes, so a quote followed by a combining mark (one
/// Swift `Character`, not equal to `"`) is escaped too; and a batch of 10,000 ids is built
/// without decoding a character of them (character by character it was a quarter of Google
/// Play's decide step).
public func textArrayLiteral(_ items: [String]) -> String {
    let backslash = UInt8(ascii: "\\"), quote = UInt8(ascii: "\"")
    var bytes: [UInt8] = []
    bytes.reserveCapacity(items.reduce(2) { $0 + $1.utf8.count + 3 })
    bytes.append(UInt8(ascii: "{"))
    for (i, item) in items.enumerated() {
        if i > 0 { bytes.append(UInt8(ascii: ",")) }
        bytes.append(quote)
        for b in item.utf8 {
            if b == backslash || b == quote { bytes.append(backslash) }
            bytes.append(b)
        }
        bytes.append(quote)
    }
    bytes.append(UInt8(ascii: "}"))
    return String(decoding: bytes, as: UTF8.self)
}
