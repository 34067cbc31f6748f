// How PlayStore reads Google's bodies: strictly (StrictJSON's scanner: no repeated key, no invalid
// UTF-8, nothing after the value), then field by field with a problem text that names the field
// by its path (`productLineItem[0].productOfferDetails.quantity`) and shows at most 20 sanitized
// characters of the value. Google's JSON follows proto3's mapping: an int64 comes as a string of
// digits, an int32 as a number, an enum as its name, a field at its default value may be absent.

import Reconciliation
import StrictJSON

/// A Google body that is not what Google sends: never believed, retried like a timeout.
public struct PlayGarbage: Error, Sendable, Equatable, CustomStringConvertible {
    /// One line: what is wrong, where.
    public let problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}

/// One object of a parsed body, its members by name. Valid only while the body's buffer is.
struct PlayObject {
    let doc: JSONDocument
    /// For problem texts: "body", or the member's path.
    let path: String
    private var members: [String: Int] = [:]

    /// The object at `index`; "<path> is a string, not an object" otherwise.
    init(_ doc: JSONDocument, _ index: Int, path: String) throws(PlayGarbage) {
        self.doc = doc
        self.path = path
        guard doc.kind(index) == .object else { throw PlayGarbage("\(path) is \(doc.kindName(index)), not an object") }
        var members: [String: Int] = [:]
        doc.forEachMember(of: index) { key, value in members[doc.text(key) ?? ""] = value }
        self.members = members
    }

    /// Parses `body` as one JSON object and hands it to `read` (the body's bytes stay valid during
    /// the call only).
    static func reading<T>(_ body: [UInt8], _ read: (PlayObject) throws(PlayGarbage) -> T) -> Result<T, PlayGarbage> {
        body.withUnsafeBufferPointer { buffer in
            do {
                let doc: JSONDocument
                do { doc = try JSONDocument(buffer) } catch { throw PlayGarbage("body is not JSON: \(error)") }
                return .success(try read(try PlayObject(doc, 0, path: "body")))
            } catch let garbage as PlayGarbage {
                return .failure(garbage)
            } catch {
                return .failure(PlayGarbage("\(error)"))
            }
        }
    }

    func name(_ key: String) -> String { path == "body" ? key : "\(path).\(key)" }

    /// The member's index; nil when it is absent or null (proto3's JSON omits default values).
    func index(_ key: String) -> Int? {
        guard let i = members[key], doc.kind(i) != .null else { return nil }
        return i
    }

    /// A string of 1…`limit` bytes, each one `allowed` says (nil: printable ASCII but space).
    /// `secret`: the value is never shown in a problem (an access token).
    func string(
        _ key: String, limit: Int, allowed: ((UInt8) -> Bool)? = nil, secret: Bool = false
    ) throws(PlayGarbage) -> String? {
        guard let i = index(key) else { return nil }
        guard doc.kind(i) == .string || doc.kind(i) == .escapedString, let text = doc.text(i) else {
            throw PlayGarbage("\(name(key)) is \(doc.kindName(i)), not a string")
        }
        guard !text.isEmpty else { throw PlayGarbage("\(name(key)) is empty") }
        guard text.utf8.count <= limit else { throw PlayGarbage("\(name(key)) is longer than \(limit) bytes") }
        let ok = text.utf8.allSatisfy { c in allowed?(c) ?? (c >= 0x21 && c <= 0x7E) }
        guard ok else { throw PlayGarbage("\(name(key))\(secret ? "" : " " + doc.shown(i)) has a character it may not have") }
        return text
    }

    /// A required string.
    func required(
        _ key: String, limit: Int, allowed: ((UInt8) -> Bool)? = nil, secret: Bool = false
    ) throws(PlayGarbage) -> String {
        guard let text = try string(key, limit: limit, allowed: allowed, secret: secret) else {
            throw PlayGarbage("\(name(key)) is missing")
        }
        return text
    }

    /// An integer in `range`: a JSON integer or a string of digits (proto3 sends an int64 as a
    /// string, an int32 as a number; Google's guides show both for some fields). No fraction, no
    /// exponent, at most 18 digits; a `-` only when `range` reaches below zero (Money).
    func integer(_ key: String, in range: ClosedRange<Int64>) throws(PlayGarbage) -> Int64? {
        guard let i = index(key) else { return nil }
        let k = doc.kind(i)
        guard k == .number || k == .string else { throw PlayGarbage("\(name(key)) is \(doc.kindName(i)), not an integer") }
        var s = doc.raw(i)[...]
        let negative = range.lowerBound < 0 && s.first == UInt8(ascii: "-")
        if negative { s = s.dropFirst() }
        guard !s.isEmpty, s.count <= 18, s.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw PlayGarbage("\(name(key)) \(doc.shown(i)) is not an integer of at most 18 digits")
        }
        var v: Int64 = 0
        for c in s { v = v * 10 + Int64(c - 0x30) }
        if negative { v = -v }
        guard range.contains(v) else {
            throw PlayGarbage("\(name(key)) \(doc.shown(i)) is out of range \(range.lowerBound)-\(range.upperBound)")
        }
        return v
    }

    /// true or false (a JSON boolean only).
    func boolean(_ key: String) throws(PlayGarbage) -> Bool? {
        guard let i = index(key) else { return nil }
        switch doc.kind(i) {
        case .true: return true
        case .false: return false
        default: throw PlayGarbage("\(name(key)) is \(doc.kindName(i)), not a boolean")
        }
    }

    /// An RFC 3339 time (`2026-11-20T08:15:00.123456789Z` or with an offset), as Unix ms (the
    /// fraction past the millisecond dropped); from 2000 to the end of 9999.
    func time(_ key: String) throws(PlayGarbage) -> EpochMillis? {
        guard let text = try string(key, limit: 40) else { return nil }
        let b = Array(text.utf8)
        let zoned =
            b.last == UInt8(ascii: "Z") || (b.count >= 25 && (b[b.count - 6] == UInt8(ascii: "+") || b[b.count - 6] == UInt8(ascii: "-")))
        guard b.count >= 20, b[10] == UInt8(ascii: "T"), zoned, let ms = UTC.parse(text) else {
            throw PlayGarbage("\(name(key)) \(doc.shown(index(key)!)) is not an RFC 3339 time")
        }
        guard ms >= 946_684_800_000, ms < 253_402_300_800_000 else {
            throw PlayGarbage("\(name(key)) \(doc.shown(index(key)!)) is out of range")
        }
        return ms
    }

    /// Milliseconds since 1970 (Google's `*Millis`, an int64: a string of digits), from 2000 to
    /// the end of 9999.
    func millis(_ key: String) throws(PlayGarbage) -> EpochMillis? {
        try integer(key, in: 946_684_800_000...253_402_300_799_999)
    }

    /// A nested object.
    func object(_ key: String) throws(PlayGarbage) -> PlayObject? {
        guard let i = index(key) else { return nil }
        return try PlayObject(doc, i, path: name(key))
    }

    /// The objects of an array member (absent or null: none), at most `limit`.
    func objects(_ key: String, limit: Int) throws(PlayGarbage) -> [PlayObject] {
        guard let i = index(key) else { return [] }
        guard doc.kind(i) == .array else { throw PlayGarbage("\(name(key)) is \(doc.kindName(i)), not an array") }
        var indices: [Int] = []
        doc.forEachElement(of: i) { _, element in indices.append(element) }
        guard indices.count <= limit else { throw PlayGarbage("\(name(key)) has \(indices.count) elements, more than \(limit)") }
        var out: [PlayObject] = []
        for (n, element) in indices.enumerated() { out.append(try PlayObject(doc, element, path: "\(name(key))[\(n)]")) }
        return out
    }

    /// An enum's name, one of `names`.
    func enumeration(_ key: String, _ names: Set<String>) throws(PlayGarbage) -> String? {
        guard let text = try string(key, limit: 64) else { return nil }
        guard names.contains(text) else { throw PlayGarbage("\(name(key)) \(doc.shown(index(key)!)) is not one of Google's values") }
        return text
    }
}

/// The characters Google's ids are made of.
enum PlayCharacters {
    static func isAlphanumeric(_ c: UInt8) -> Bool { (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) }
    /// A purchase token: letters, digits, `.`, `-`, `_` (what Google's tokens are made of; no
    /// slash, percent or space, so a token is safe in a path as it is).
    static func isTokenCharacter(_ c: UInt8) -> Bool { isAlphanumeric(c) || c == 46 || c == 45 || c == 95 }
    /// An order id: `GPA.1234-5678-9012-34567` (letters, digits, `.`, `-`).
    static func isOrderCharacter(_ c: UInt8) -> Bool { isAlphanumeric(c) || c == 46 || c == 45 }
    /// A product id: letters, digits, `.`, `_` (Play Console's rule: lowercase letters, digits,
    /// underscores and periods; upper case read too).
    static func isProductCharacter(_ c: UInt8) -> Bool { isAlphanumeric(c) || c == 46 || c == 95 }
}
