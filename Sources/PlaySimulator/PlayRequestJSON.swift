// The JSON bodies the simulator is sent (Pub/Sub's pull and acknowledge, orders.reviewrefund),
// read as strictly as the job reads Google's (StrictJSON: no repeated key, valid UTF-8, one value)
// and then member by member, as Google's front end does: a member it does not know is refused, a
// value of the wrong type or out of range is refused naming the field. Every refusal is a 400
// INVALID_ARGUMENT whose message names the field.

import StrictJSON

/// One JSON value of a request body, owned (the body's buffer is not kept).
indirect enum RequestValue {
    case null
    case boolean(Bool)
    /// The number's lexeme, exactly as sent.
    case number(String)
    case string(String)
    case array([RequestValue])
    case object([String: RequestValue])

    /// "null", "a boolean", "a number", "a string", "an array", "an object".
    var kindName: String {
        switch self {
        case .null: return "null"
        case .boolean: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// A request body that Google refuses: the 400's message.
struct BadRequest: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A request body's one JSON object, its members read one by one.
struct RequestObject {
    private let members: [String: RequestValue]

    /// The body as one JSON object whose members are all among `known`.
    init(_ body: [UInt8], known: Set<String>) throws(BadRequest) {
        let parsed: RequestValue? = body.withUnsafeBufferPointer { buffer in
            guard let doc = try? JSONDocument(buffer) else { return nil }
            return Self.value(doc, 0)
        }
        guard case .object(let members) = parsed else {
            throw BadRequest("Invalid JSON payload received. The body is not one JSON object.")
        }
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw BadRequest(
                "Invalid JSON payload received. Unknown name \"\(Sanitized.text(unknown.utf8, limit: 40))\": "
                    + "Cannot find field.")
        }
        self.members = members
    }

    private static func value(_ doc: JSONDocument, _ index: Int) -> RequestValue {
        switch doc.kind(index) {
        case .null: return .null
        case .true: return .boolean(true)
        case .false: return .boolean(false)
        case .number: return .number(doc.text(index) ?? "")
        case .string, .escapedString: return .string(doc.text(index) ?? "")
        case .array:
            var out: [RequestValue] = []
            doc.forEachElement(of: index) { _, element in out.append(value(doc, element)) }
            return .array(out)
        case .object:
            var out: [String: RequestValue] = [:]
            doc.forEachMember(of: index) { key, member in out[doc.text(key) ?? ""] = value(doc, member) }
            return .object(out)
        }
    }

    /// The member's value; nil when it is absent or null (proto3's JSON: the field is not set).
    private func member(_ name: String) -> RequestValue? {
        guard let value = members[name] else { return nil }
        if case .null = value { return nil }
        return value
    }

    /// A string member, nil when absent.
    func string(_ name: String) throws(BadRequest) -> String? {
        guard let value = member(name) else { return nil }
        guard case .string(let text) = value else { throw BadRequest("\(name) is \(value.kindName), not a string.") }
        return text
    }

    /// A boolean member, nil when absent.
    func boolean(_ name: String) throws(BadRequest) -> Bool? {
        guard let value = member(name) else { return nil }
        guard case .boolean(let flag) = value else { throw BadRequest("\(name) is \(value.kindName), not a boolean.") }
        return flag
    }

    /// An integer member in `range`, nil when absent: a JSON integer, or a string of digits (as
    /// proto3's JSON reads an int32 or an int64). No sign, fraction or exponent, at most 18 digits.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws(BadRequest) -> Int64? {
        guard let value = member(name) else { return nil }
        let text: String
        switch value {
        case .number(let lexeme), .string(let lexeme): text = lexeme
        default: throw BadRequest("\(name) is \(value.kindName), not an integer.")
        }
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            let number = Int64(text)
        else { throw BadRequest("\(name) is not a whole number.") }
        guard range.contains(number) else {
            throw BadRequest("\(name) must be \(range.lowerBound) to \(range.upperBound).")
        }
        return number
    }

    /// An array member, nil when absent.
    func array(_ name: String) throws(BadRequest) -> [RequestValue]? {
        guard let value = member(name) else { return nil }
        guard case .array(let items) = value else { throw BadRequest("\(name) is \(value.kindName), not an array.") }
        return items
    }

    /// A required member: `read`'s value, or "`name` is required."
    func required<T>(_ name: String, _ read: (String) throws(BadRequest) -> T?) throws(BadRequest) -> T {
        guard let value = try read(name) else { throw BadRequest("\(name) is required.") }
        return value
    }
}
