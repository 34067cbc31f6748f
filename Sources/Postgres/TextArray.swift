/// A Postgres `text[]` literal for a parameter (`$1::text[]`): each element quoted, its `\` and
/// `"` escaped, so any text travels as itself.
public func textArrayLiteral(_ items: [String]) -> String {
    var out = "{"
    for (i, item) in items.enumerated() {
        if i > 0 { out += "," }
        out += "\""
        for c in item {
            if c == "\\" || c == "\"" { out += "\\" }
            out.append(c)
        }
        out += "\""
    }
    return out + "}"
}
