#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// A statement, or a piece of one, and the values it binds: what `PGConnection` runs.
///
/// Written as a string literal. What is interpolated decides what it becomes:
///
///     let rows = try db.query("""
///         SELECT receipt_id FROM \(ident: schema).receipt_state
///         WHERE last_attempt_at < \(cutoff)::timestamptz AND attempts < \(limit)
///         """)
///
/// - `\(value)` — a `SQLValue` (`String`, `Int`, `Int64`, `Bool`, `Double`, `Date`, `[String]`;
///   an optional one that is nil is NULL) becomes a parameter `$n` and travels beside the text
///   (`PQexecParams`), never inside it. Its text form reaches Postgres untyped: cast it where the
///   context does not say the type (`\(day)::date`).
/// - `\(fragment)` — another `SQL` is spliced in as SQL, its parameters renumbered after the ones
///   before it.
/// - `\(ident: name)` — an identifier (a schema, a table, a column), double-quoted, `"` doubled.
/// - `\(literal: SQLLiteral.date(day))` — a typed literal in the text (`E'…'::date`), for where
///   Postgres takes no parameters: `COPY (…) TO STDOUT`, DDL, several statements in one text.
///
/// Nothing else reaches the text: there is no interpolation of raw strings. Fixed text kept as a
/// `String` (the frozen migrations) becomes SQL only through `SQL(unsafeSQL:)`.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    fileprivate enum Piece: Sendable, Hashable {
        case text(String)
        case value(String?)
    }

    fileprivate var pieces: [Piece]

    public init(stringLiteral value: String) {
        pieces = value.isEmpty ? [] : [.text(value)]
    }

    public init(stringInterpolation: StringInterpolation) {
        pieces = stringInterpolation.pieces
    }

    /// Text taken as SQL as it is: for fixed text the code holds as a `String` and does not build
    /// from values (a frozen migration, a function definition taken from one). Never for values.
    public init(unsafeSQL text: String) {
        pieces = text.isEmpty ? [] : [.text(text)]
    }

    /// The statement's text, parameters numbered `$1`, `$2`, … in order.
    public var text: String {
        var out = ""
        var n = 0
        for piece in pieces {
            switch piece {
            case .text(let t): out += t
            case .value:
                n += 1
                out += "$\(n)"
            }
        }
        return out
    }

    /// The parameters' text forms, in the order of `$1`, `$2`, …; nil is NULL.
    public var values: [String?] {
        pieces.compactMap { piece in
            if case .value(let v) = piece { return .some(v) }
            return nil
        }
    }

    /// True when the SQL binds at least one value (it then cannot run by the simple protocol or COPY).
    public var bindsValues: Bool {
        pieces.contains { if case .value = $0 { return true } else { return false } }
    }

    public var isEmpty: Bool { pieces.isEmpty }

    /// The text with its parameters' values after it, for errors and tests.
    public var description: String {
        let v = values
        return v.isEmpty ? text : text + " -- " + v.enumerated().map { "$\($0.offset + 1)=\($0.element ?? "NULL")" }.joined(separator: ", ")
    }

    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var out = lhs
        out.pieces += rhs.pieces
        return out
    }

    public static func += (lhs: inout SQL, rhs: SQL) {
        lhs.pieces += rhs.pieces
    }

    /// A double-quoted identifier, `"` doubled: `"public"`, `"apple_transactions"`.
    public static func ident(_ name: String) -> SQL {
        SQL(pieces: [.text(quotedIdentifier(name))])
    }

    /// A typed literal in the text (see `SQLLiteral`).
    public static func literal(_ literal: SQLLiteral) -> SQL {
        SQL(pieces: [.text(literal.rendered)])
    }

    fileprivate init(pieces: [Piece]) { self.pieces = pieces }

    public struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var pieces: [Piece] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            pieces.reserveCapacity(2 * interpolationCount + 1)
        }

        public mutating func appendLiteral(_ literal: String) {
            guard !literal.isEmpty else { return }
            if case .text(let t)? = pieces.last {
                pieces[pieces.count - 1] = .text(t + literal)
            } else {
                pieces.append(.text(literal))
            }
        }

        /// A value: parameter `$n`.
        public mutating func appendInterpolation(_ value: some SQLValue) {
            pieces.append(.value(value.sqlText))
        }

        /// A value or NULL: parameter `$n`.
        public mutating func appendInterpolation(_ value: (some SQLValue)?) {
            pieces.append(.value(value?.sqlText))
        }

        /// A piece of SQL, its parameters renumbered after those before it.
        public mutating func appendInterpolation(_ fragment: SQL) {
            for piece in fragment.pieces {
                if case .text(let t) = piece { appendLiteral(t) } else { pieces.append(piece) }
            }
        }

        /// An identifier, double-quoted.
        public mutating func appendInterpolation(ident name: String) {
            appendLiteral(quotedIdentifier(name))
        }

        /// A typed literal in the text, for where Postgres takes no parameters (`SQLLiteral`).
        public mutating func appendInterpolation(literal: SQLLiteral) {
            appendLiteral(literal.rendered)
        }
    }
}

extension Sequence where Element == SQL {
    /// The pieces one after another, `separator` between them: column lists, conditions.
    public func joined(separator: SQL = ", ") -> SQL {
        var out = SQL(pieces: [])
        for (i, piece) in enumerated() {
            if i > 0 { out += separator }
            out += piece
        }
        return out
    }
}

private func quotedIdentifier(_ name: String) -> String {
    precondition(!name.utf8.contains(0), "an SQL identifier cannot hold a NUL byte")
    return "\"" + name.replacingAll("\"", with: "\"\"") + "\""
}

/// A value that travels as a parameter: its text form, as Postgres reads it for the parameter's type.
public protocol SQLValue {
    var sqlText: String { get }
}

extension String: SQLValue { public var sqlText: String { self } }
extension Substring: SQLValue { public var sqlText: String { String(self) } }
extension Int: SQLValue { public var sqlText: String { String(self) } }
extension Int64: SQLValue { public var sqlText: String { String(self) } }
extension Int32: SQLValue { public var sqlText: String { String(self) } }
extension Bool: SQLValue { public var sqlText: String { self ? "true" : "false" } }
extension Double: SQLValue { public var sqlText: String { String(self) } }
/// A `text[]` (`\(names)::text[]`).
extension Array: SQLValue where Element == String { public var sqlText: String { textArrayLiteral(self) } }
/// A `timestamptz`, UTC to the millisecond (`\(date)::timestamptz`).
extension Date: SQLValue { public var sqlText: String { timestamptzStyle.format(self) } }

/// A value written into SQL text as a typed literal, `E'…'::type` with `'` and `\` doubled.
///
/// The one way a value reaches SQL text, for where Postgres takes no parameters: `COPY (…) TO
/// STDOUT`, DDL, several statements sent as one text (the simple protocol). Everywhere else a
/// value is a parameter (`\(value)` in `SQL`).
public struct SQLLiteral: Sendable, Hashable {
    let text: String
    /// nil: a bare string constant.
    let type: String?

    /// `E'…'`, a string constant without a type, where the grammar takes no expression (an
    /// option of a DDL statement: `PASSWORD`, `COMMENT … IS`).
    public static func string(_ value: String) -> SQLLiteral { SQLLiteral(text: value, type: nil) }

    /// `E'…'::text`
    public static func text(_ value: String) -> SQLLiteral { SQLLiteral(text: value, type: "text") }
    /// `E'42'::bigint`
    public static func int(_ value: Int64) -> SQLLiteral { SQLLiteral(text: String(value), type: "bigint") }
    public static func int(_ value: Int) -> SQLLiteral { SQLLiteral(text: String(value), type: "bigint") }
    /// `E'{"a","b"}'::text[]`: a list of texts (`textArrayLiteral`), each traveling as itself.
    public static func textArray(_ items: [String]) -> SQLLiteral { SQLLiteral(text: textArrayLiteral(items), type: "text[]") }
    /// `E'true'::boolean`
    public static func bool(_ value: Bool) -> SQLLiteral { SQLLiteral(text: value ? "true" : "false", type: "boolean") }
    /// `E'2026-11-21'::date` from a `YYYY-MM-DD` day (Postgres checks it).
    public static func date(_ day: String) -> SQLLiteral { SQLLiteral(text: day, type: "date") }
    /// `E'2026-11-21T03:00:00Z'::timestamptz` from a time as Postgres reads one (Postgres checks it).
    public static func timestamptz(_ time: String) -> SQLLiteral { SQLLiteral(text: time, type: "timestamptz") }
    /// `E'2026-11-21T03:00:00.001Z'::timestamptz`, UTC to the millisecond.
    public static func timestamptz(_ date: Date) -> SQLLiteral { SQLLiteral(text: date.sqlText, type: "timestamptz") }

    /// The literal as SQL text. `E'…'` reads the same whatever `standard_conforming_strings` says.
    var rendered: String {
        precondition(!text.utf8.contains(0), "an SQL literal cannot hold a NUL byte")
        var out = "E'"
        for c in text.unicodeScalars {
            if c == "'" || c == "\\" { out.unicodeScalars.append(c) }
            out.unicodeScalars.append(c)
        }
        out += "'"
        if let type { out += "::" + type }
        return out
    }
}

/// `2026-11-21T03:00:00.001Z`: as Postgres reads a timestamptz (UTC, milliseconds).
private let timestamptzStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

extension String {
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
