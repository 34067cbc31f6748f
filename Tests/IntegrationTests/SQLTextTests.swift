import Foundation
import Postgres
import Testing

/// SQL that binds its values: what the `SQL` type does, against a real Postgres,
/// and a look through the sources for the old pattern, values written into SQL text by hand.
@Suite struct SQLTextTests {
    // MARK: The type

    @Test("values become $n in order, fragments are renumbered after the values before them, nil is NULL")
    func bindsAndRenumbers() {
        let user = "u1", limit = 5
        let inner: SQL = "product_id = \(Optional<String>.none) OR quantity > \(2)"
        let sql: SQL = "SELECT 1 FROM t WHERE user_id = \(user) AND (\(inner)) LIMIT \(limit)"
        #expect(sql.text == "SELECT 1 FROM t WHERE user_id = $1 AND (product_id = $2 OR quantity > $3) LIMIT $4")
        #expect(sql.values == ["u1", nil, "2", "5"])
        #expect(sql.bindsValues)
        let joined = [inner, inner].joined(separator: " AND ")
        #expect(joined.text == "product_id = $1 OR quantity > $2 AND product_id = $3 OR quantity > $4")
        let plain: SQL = "SELECT 1"
        #expect(!plain.bindsValues && plain.values.isEmpty && plain.text == "SELECT 1")
    }

    @Test("identifiers are double-quoted with \" doubled; literals are E'…'::type with ' and \\ doubled")
    func identifiersAndLiterals() {
        let ident: SQL = "SELECT * FROM \(ident: "recon").\(ident: "we\"ird")"
        #expect(ident.text == #"SELECT * FROM "recon"."we""ird""# && !ident.bindsValues)
        let literal: SQL = "COPY (SELECT \(literal: .text("it's a \\ back")), \(literal: .date("2026-11-21")), \(literal: .int(-3))) TO STDOUT"
        #expect(literal.text == #"COPY (SELECT E'it''s a \\ back'::text, E'2026-11-21'::date, E'-3'::bigint) TO STDOUT"#)
        #expect(SQL.literal(.timestamptz("2026-11-21T03:00:00Z")).text == "E'2026-11-21T03:00:00Z'::timestamptz")
        #expect(SQL.literal(.timestamptz(Date(timeIntervalSince1970: 1_795_230_000.25))).text
                == "E'2026-11-21T03:00:00.250Z'::timestamptz")
        #expect(SQL.literal(.string("pw'd")).text == "E'pw''d'")
    }

    @Test("hostile values come back from Postgres as themselves, as parameters and as typed literals")
    func hostileValuesRoundTrip() throws {
        let t = try TestDatabase("sqltext")
        defer { t.drop() }
        let hostile = ["'; DROP TABLE x; --", "a\\'b", "\\", "''", "$1", "\"q\"", "tab\there", "订单🎮", "E'x'", "back\\\\slash\\"]
        for value in hostile {
            let bound = try t.db.query("SELECT \(value)::text, \(value)::text = \(literal: .text(value))")
            #expect(bound.value(0, 0) == value && bound.value(0, 1) == "t", "\(value)")
            var copied: [String?] = []
            try t.db.copyOut("COPY (SELECT \(literal: .text(value))) TO STDOUT") { copied = CopyText.fields($0) }
            #expect(copied == [value], "\(value)")
        }
        // With the simple protocol's escapes off, too: E'' reads the same either way.
        try t.db.execute("SET standard_conforming_strings = off")
        for value in hostile {
            #expect(try t.scalar("SELECT \(literal: .text(value))") == value, "\(value)")
        }
        // A list of texts: each element comes back as itself, in order, a quote followed by a
        // combining mark (one Swift Character, not equal to a quote) included.
        let list = hostile + ["\"\u{301}", "a\"\u{301},\"b", "", "\\\u{301}"]
        for sent in [list, [], [""]] {
            let r = try t.db.query("SELECT x FROM unnest(\(sent)::text[]) WITH ORDINALITY u(x, i) ORDER BY i")
            #expect(r.rows.map { $0[0] ?? "(null)" } == sent, "\(sent)")
            #expect(try t.scalar("SELECT \(literal: .textArray(sent)) = \(sent)::text[]") == "t")
        }
        let at = Date(timeIntervalSince1970: 1_795_230_000.25)
        #expect(try t.scalar("SELECT \(literal: .timestamptz(at)) = to_timestamp(1795230000.25) AND \(at)::timestamptz = to_timestamp(1795230000.25)") == "t")
    }

    @Test("execute, copyOut and copyIn refuse SQL that binds values, before anything is sent")
    func simpleProtocolAndCopyRefuseParameters() throws {
        let t = try TestDatabase("sqlrefuse")
        defer { t.drop() }
        try t.db.execute("CREATE TABLE v (s text)")
        let value = "x"
        #expect(throws: PGError.self) { try t.db.execute("INSERT INTO v VALUES (\(value))") }
        #expect(throws: PGError.self) { try t.db.copyOut("COPY (SELECT \(value)) TO STDOUT") { _ in } }
        #expect(throws: PGError.self) { try t.db.copyIn("COPY v FROM STDIN WHERE s <> \(value)") { _ in } }
        do {
            try t.db.execute("INSERT INTO v VALUES (\(value))")
        } catch let error as PGError {
            #expect(error.message.contains("cannot bind parameters") && error.message.contains("SQLLiteral"), "\(error)")
        }
        #expect(try t.int("SELECT count(*) FROM v") == 0)
        try t.db.query("INSERT INTO v VALUES (\(value))")
        #expect(try t.int("SELECT count(*) FROM v") == 1)
    }

    // MARK: The sources

    /// What the look through the sources finds in `text` (the source of one file): one line per
    /// value written into SQL text outside `SQLLiteral` and `\(ident:)`.
    static func spliced(in text: String, file: String) -> [String] {
        var found: [String] = []
        for literal in SwiftLiterals.all(in: text) where literal.looksLikeSQL {
            let at = "\(file):\(literal.line)"
            if literal.interpolations.isEmpty {
                // Fixed SQL text held as a String: interpolated into SQL later, it would bind as a value.
                if literal.isDeclaration, literal.ownerType(in: text) == "String" {
                    found.append("\(at): SQL text held as a String (\(literal.preview)): declare it SQL")
                }
                continue
            }
            for (expression, problem) in literal.problems() {
                found.append("\(at): \\(\(expression)) \(problem)")
            }
            if literal.hasValueInterpolation, let owner = literal.ownerType(in: text), owner == "String" {
                found.append("\(at): SQL text built as a String (\(literal.preview)): a value in it is spliced, not bound")
            }
        }
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.contains("SQL(unsafeSQL:") && !Self.unsafeAllowed.contains(file) {
                found.append("\(file):\(n + 1): SQL(unsafeSQL:) outside the frozen migrations' runner")
            }
            if line.contains("SQL(stringLiteral:") || line.contains(".appendLiteral(") && !file.hasPrefix("Postgres/") {
                found.append("\(file):\(n + 1): text made SQL by hand")
            }
        }
        return found
    }

    /// Where fixed text held as a String may become SQL: the runner of the frozen migrations
    /// (their texts, `{S}` the quoted schema).
    static let unsafeAllowed: Set<String> = ["JobStore/Migrations/Migrations.swift"]

    /// This checkout's Sources, or `IAP_SQL_SOURCES` (another tree's Sources: pointed at a tree from before the `SQL` type,
    /// the test fails, listing each place).
    static var sourcesDirectory: URL {
        if let other = ProcessInfo.processInfo.environment["IAP_SQL_SOURCES"], !other.isEmpty {
            return URL(fileURLWithPath: other)
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// Every Swift file of Sources but the frozen migration texts and the renderer itself.
    static func sourceFiles(under root: URL) throws -> [(name: String, text: String)] {
        let paths = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
        return try paths.filter { path in
            path.hasSuffix(".swift") && path != "Postgres/SQL.swift"
                && !(path.hasPrefix("JobStore/Migrations/00"))
        }.sorted().map { ($0, try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8)) }
    }

    @Test("no value is written into SQL text in Sources outside SQLLiteral (the old pattern: '\\(day)'::date, BETWEEN \\(from) …)")
    func noValueSplicedIntoSQLText() throws {
        let files = try Self.sourceFiles(under: Self.sourcesDirectory)
        #expect(files.count > 100, "the sources were not found at \(Self.sourcesDirectory.path)")
        let found = files.flatMap { Self.spliced(in: $0.text, file: $0.name) }
        #expect(found.isEmpty, "values spliced into SQL text:\n\(found.joined(separator: "\n"))")
    }

    /// Lines of the sources before the `SQL` type, each one the old pattern: the look must find each.
    static let oldLines: [(file: String, text: String)] = [
        ("NightDecide/Reports/ReportWriter.swift", #"""
            func q() -> String {
                return """
                    SELECT report FROM \(S).findings WHERE closed_on = '\(UTC.date(settings.asOf))'::date
                    """
            }
            """#),
        ("NightDecide/Decision/Attribution.swift", #"""
            var refundsSQL: String {
                let from = settings.refundWindowStart
                let window = "BETWEEN \(from) AND \(settings.asOf)"
                return "SELECT 1"
            }
            """#),
        ("NightLearn/Verification/ReceiptSelection.swift", #"""
            let q = """
              AND coalesce(greatest(s.last_swept_at, s.last_attempt_at), '-infinity') < now() - interval '\(settings.sweepIntervalHours) hours'
            """
            """#),
        ("NightDecide/Decision/Conservation.swift", #"""
            func findings(_ report: ReportFile) -> String {
                "\(S).current_findings WHERE report = '\(report.rawValue)'"
            }
            """#),
        ("NightDecide/Decision/NightTables.swift", #"""
                try db.execute("""
                    SELECT set_config('search_path', '\(schema.quoted), ' || current_setting('search_path'), false);
                    SET work_mem = '128MB'; SET jit = off; SET max_parallel_workers_per_gather = 0
                    """)
            """#),
        ("NightReview/LookupFamilies.swift", #"""
                try db.copyOut("COPY (SELECT order_id FROM \(src).iap_orders WHERE created_at >= '\(from)'::timestamptz) TO STDOUT") { line in
                }
            """#),
        ("NightLearn/Verification/SignedUploads.swift", #"""
                let result = try db.query("""
                    SELECT r.receipt_data FROM \(job).receipt_state s
                    JOIN "\(settings.sourceSchema)".iap_receipts r ON r.receipt_id = s.receipt_id
                    """)
            """#),
        ("NightDecide/Input/ProductColumns.swift", #"""
                static let usablePrice = "price >= 0 AND price < 1e12 AND currency::text ~ '^[A-Z]{3}$'"
            """#),
        ("NightDecide/Decision/Attribution.swift", #"""
                try db.copyOut("""
                    COPY (SELECT order_id FROM o WHERE created_ms >= \(settings.windowStart - 86_400_000)) TO STDOUT
                    """) { line in }
            """#),
    ]

    @Test("the look through the sources finds each old line of main, and the old code as a whole")
    func findsTheOldPattern() throws {
        for old in Self.oldLines {
            #expect(!Self.spliced(in: old.text, file: old.file).isEmpty, "not found: \(old.text)")
        }
        // The same lines written the new way pass.
        let new = #"""
            let window: SQL = "BETWEEN \(settings.refundWindowStart)::bigint AND \(settings.asOf)::bigint"
            try db.copyOut("COPY (SELECT order_id FROM o WHERE created_ms >= \(literal: .int(start))) TO STDOUT") { _ in }
            let q: SQL = "SELECT 1 FROM \(ident: schema).findings WHERE closed_on = \(literal: .date(day)) AND x = \(y)"
            throw JobError(.usage, "schema name '\(name)' is not a plain identifier (lower-case letters, digits, _)")
            """#
        #expect(Self.spliced(in: new, file: "x.swift").isEmpty, "\(Self.spliced(in: new, file: "x.swift"))")
    }
}

/// Swift string literals of a file with their interpolations, read well enough for the look
/// through the sources: comments skipped, `"…"`, `"""…"""` and raw `#"…"#` forms, nested
/// interpolations and strings inside them.
struct SwiftLiterals {
    struct Literal {
        /// The literal's text, each interpolation a `\u{1}` in it.
        var text: String
        var interpolations: [String]
        var line: Int
        var start: String.Index

        var preview: String { String(text.replacingOccurrences(of: "\u{1}", with: "\\(…)").prefix(60)).replacingOccurrences(of: "\n", with: " ") }

        /// Upper-case SQL words (a message to a person holds none), a cast, an interval.
        var looksLikeSQL: Bool {
            let words = #"\b(SELECT|INSERT INTO|UPDATE|DELETE FROM|COPY|CREATE|DROP|ALTER|TRUNCATE|ANALYZE|FROM|WHERE|JOIN|BETWEEN|LIMIT|CASE WHEN)\b|set_config\(|::|interval '"#
            return text.range(of: words, options: .regularExpression) != nil
        }

        /// `COPY (…) TO STDOUT` or `COPY … FROM STDIN`: Postgres takes no parameters there.
        var isCopy: Bool { text.contains("COPY ") && (text.contains("TO STDOUT") || text.contains("FROM STDIN")) }

        /// An interpolation that binds under `SQL` (no label) or splices under `String`.
        var hasValueInterpolation: Bool {
            interpolations.contains { !$0.hasPrefix("ident:") && !$0.hasPrefix("literal:") }
        }

        /// Interpolations inside an SQL string ('…'), inside a hand-quoted identifier ("…"), or of
        /// the old hand-quoting helper (`.quoted`).
        func problems() -> [(String, String)] {
            var out: [(String, String)] = []
            var inQuote = false, inComment = false, index = 0
            var previous: Character = " "
            for c in text {
                if c == "\u{1}" {
                    let e = interpolations[index]
                    index += 1
                    if inComment { previous = c; continue }
                    if inQuote { out.append((e, "inside an SQL string literal ('…'): a value written into the text")) }
                    else if previous == "\"" { out.append((e, "inside a hand-quoted identifier (\"…\"): use \\(ident:)")) }
                    else if e.contains(".quoted") { out.append((e, "the old hand-quoted identifier: use \\(ident:)")) }
                    else if isCopy, !e.hasPrefix("ident:"), !e.hasPrefix("literal:"),
                            e.range(of: #"\s[-+*/]\s|\.rawValue|String\("#, options: .regularExpression) != nil {
                        out.append((e, "a value in a COPY text: Postgres takes no parameters there, use \\(literal:)"))
                    }
                    previous = c
                    continue
                }
                if inComment { if c == "\n" { inComment = false } }
                else if c == "'" { inQuote.toggle() }
                else if !inQuote, c == "-", previous == "-" { inComment = true }
                previous = c
            }
            return out
        }

        /// The type the literal gets from where it stands: `let x = "…"` is a String (`let x: SQL =`
        /// an SQL), a literal returned (`return "…"`, or alone on its line) has the type of the
        /// declaration above it (`-> String {`, `var q: String {`). nil: an argument, an operand.
        /// `let x = "…"`, `static var y: T = "…"`: the literal is a declaration's value.
        var isDeclaration: Bool {
            let head = Self.withoutModifiers(declarationHead.trimmingCharacters(in: .whitespaces))
            return head.hasSuffix("=") && (head.hasPrefix("let ") || head.hasPrefix("var "))
        }

        /// The text of the literal's line before it.
        var declarationHead: String

        static func withoutModifiers(_ line: String) -> String {
            var l = Substring(line)
            for word in ["private ", "fileprivate ", "internal ", "public ", "static ", "nonisolated "] where l.hasPrefix(word) {
                l = l.dropFirst(word.count)
            }
            for word in ["static "] where l.hasPrefix(word) { l = l.dropFirst(word.count) }
            return String(l)
        }

        func ownerType(in source: String) -> String? {
            let lines = source[..<start].split(separator: "\n", omittingEmptySubsequences: false)
            let head = Self.withoutModifiers((lines.last.map(String.init) ?? "").trimmingCharacters(in: .whitespaces))
            if head.hasSuffix("="), head.hasPrefix("let ") || head.hasPrefix("var ") {
                let decl = head.dropLast()
                guard let colon = decl.firstIndex(of: ":") else { return "String" }
                return decl[decl.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            guard head.isEmpty || head.hasSuffix("return") else { return nil }
            for line in lines.dropLast().suffix(30).reversed() {
                let l = line.trimmingCharacters(in: .whitespaces)
                guard l.hasSuffix("{"), l.contains("func ") || l.hasPrefix("var ") || l.contains(" var ") else { continue }
                if let arrow = l.range(of: "-> ", options: .backwards) {
                    return String(l[arrow.upperBound...].dropLast()).trimmingCharacters(in: .whitespaces)
                }
                if !l.contains("func "), let colon = l.range(of: ": ") {
                    return String(l[colon.upperBound...].dropLast()).trimmingCharacters(in: .whitespaces)
                }
                return nil
            }
            return nil
        }
    }

    /// Every literal of `source` that holds at least one interpolation.
    static func interpolated(in source: String) -> [Literal] { all(in: source).filter { !$0.interpolations.isEmpty } }

    /// Every string literal of `source` (not those inside interpolations).
    static func all(in source: String) -> [Literal] {
        var out: [Literal] = []
        let chars = Array(source)
        var i = 0, line = 1
        let indices = Array(source.indices)
        func at(_ k: Int, _ s: String) -> Bool {
            let a = Array(s)
            return k + a.count <= chars.count && Array(chars[k..<k + a.count]) == a
        }
        // Reads a literal whose opening quote(s) end before `k`; returns the index after it.
        func literal(from k: Int, multiline: Bool, hashes: Int, startLine: Int, record: Bool) -> Int {
            var k = k
            var text = "", interps: [String] = []
            let close = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
            let escape = "\\" + String(repeating: "#", count: hashes)
            while k < chars.count {
                if at(k, close) { k += close.count; break }
                if chars[k] == "\n" { line += 1 }
                if at(k, escape + "(") {
                    k += escape.count + 1
                    var depth = 1, expr = ""
                    while k < chars.count, depth > 0 {
                        if chars[k] == "\"" {
                            let multi = at(k, "\"\"\"")
                            let end = literal(from: k + (multi ? 3 : 1), multiline: multi, hashes: 0, startLine: line, record: false)
                            expr += String(chars[k..<end]); k = end; continue
                        }
                        if chars[k] == "(" { depth += 1 }
                        if chars[k] == ")" { depth -= 1; if depth == 0 { k += 1; break } }
                        if chars[k] == "\n" { line += 1 }
                        expr.append(chars[k]); k += 1
                    }
                    text.append("\u{1}"); interps.append(expr.trimmingCharacters(in: .whitespaces))
                    continue
                }
                if at(k, escape) { text.append(chars[k + escape.count]); k += escape.count + 1; continue }
                text.append(chars[k]); k += 1
            }
            if record {
                let start = indices[min(i, indices.count - 1)]
                let lineStart = source[..<start].lastIndex(of: "\n").map { source.index(after: $0) } ?? source.startIndex
                out.append(Literal(text: text, interpolations: interps, line: startLine, start: start,
                                   declarationHead: String(source[lineStart..<start])))
            }
            return k
        }
        while i < chars.count {
            if at(i, "//") { while i < chars.count, chars[i] != "\n" { i += 1 }; continue }
            if at(i, "/*") {
                while i < chars.count, !at(i, "*/") { if chars[i] == "\n" { line += 1 }; i += 1 }
                i += 2; continue
            }
            if chars[i] == "\n" { line += 1; i += 1; continue }
            var hashes = 0
            while at(i + hashes, "#") { hashes += 1 }
            if at(i + hashes, "\"") {
                let multi = at(i + hashes, "\"\"\"")
                i = literal(from: i + hashes + (multi ? 3 : 1), multiline: multi, hashes: hashes, startLine: line, record: true)
                continue
            }
            i += max(1, hashes)
        }
        return out
    }
}
