import Foundation
import Postgres
import Testing

/// The COPY reader against what Postgres itself writes: every field of a line read by
/// `CopyText.fields` equals the same value read through an ordinary query.
@Suite("COPY lines read back", .serialized, .enabled(if: Harness.hasDatabase))
struct CopyTextTests {
    /// What both directions are tried with: escapes, nulls, a literal `\N`, control bytes,
    /// non-ASCII (é composed and decomposed), a long value, a formula.
    static let hostile: [String?] = [
        "plain", "", nil, "\\N", "\\", "a\tb", "line\nbreak\r\n", "back\\slash\\", "\u{8}\u{c}\u{b}",
        "订单 ✓ 🎮", "trailing space ", "\\t is not a tab", "\t", "\n", String(repeating: "x", count: 10_000),
        String(repeating: "x\\", count: 10_000), "=1+2", "é", "e\u{301}",
    ]

    /// Table `v (i, s)`: row `i` holds `hostile[i]`, inserted with bound values (not COPY, which
    /// is what the tests read back). Returns the values.
    static func hostileTable(_ db: PGConnection) throws -> [String?] {
        try db.execute("CREATE TABLE v (i int, s text)")
        for (i, value) in hostile.enumerated() {
            try db.query("INSERT INTO v VALUES (\(i)::int, \(value))")
        }
        return hostile
    }

    @Test("escapes, nulls, empty text, a literal \\N, tabs, newlines, backslashes and non-ASCII come back as Postgres holds them")
    func hostileFields() throws {
        let t = try TestDatabase("copytext")
        defer { t.drop() }
        let values = try Self.hostileTable(t.db)
        let query: SQL = "SELECT i, s, s, NULL::text, '' FROM v ORDER BY i"
        let expected = try t.db.query(query)
        var lines = 0
        try t.db.copyOut("COPY (\(query)) TO STDOUT") { line in
            let fields = CopyText.fields(line)
            #expect(fields.count == 5)
            guard fields.count == 5, let i = fields[0].flatMap({ Int($0) }) else { return }
            #expect(fields[1] == expected.value(i, 1), "row \(i)")
            #expect(fields[2] == values[i], "row \(i)")
            #expect(fields[3] == nil)
            #expect(fields[4] == "")
            lines += 1
        }
        #expect(lines == values.count)
    }

    @Test("the COPY writer: the same hostile values written with PGCopyWriter.row come back from Postgres unchanged")
    func writerRoundTrip() throws {
        let t = try TestDatabase("copywriter")
        defer { t.drop() }
        let values = Self.hostile
        try t.db.execute("CREATE TABLE w (i int, s text, n text)")
        try t.db.copyIn("COPY w FROM STDIN") { w in
            for (i, value) in values.enumerated() { try w.row([String(i), value, nil]) }
        }
        let back = try t.db.query("SELECT i, s, n IS NULL FROM w ORDER BY i")
        #expect(back.rowCount == values.count)
        for row in 0..<back.rowCount {
            let i = try #require(back.value(row, 0).flatMap { Int($0) })
            // Compared as bytes: Swift's == would call é composed and decomposed equal.
            #expect(back.value(row, 1).map { Array($0.utf8) } == values[i].map { Array($0.utf8) }, "row \(i)")
            #expect(back.value(row, 2) == "t")
        }
    }

    @Test("CopyTextEncoder (the answer writer's rows): hostile text, nulls, integers at their limits and booleans come back unchanged")
    func encoderRoundTrip() throws {
        let t = try TestDatabase("copyencoder")
        defer { t.drop() }
        let values = Self.hostile
        let numbers: [Int64?] = [0, -1, Int64.max, Int64.min, nil, 1_790_000_000_000]
        try t.db.execute("CREATE TABLE e (i int, s text, n bigint, b boolean, z text)")
        // A small start: the buffer grows many times over.
        var e = CopyTextEncoder(capacity: 16)
        for (i, value) in values.enumerated() {
            e.field(i); e.field(value); e.field(numbers[i % numbers.count])
            e.field(i % 3 == 0 ? nil : i % 3 == 1); e.field(nil as String?)
            e.endRow()
        }
        try t.db.copyIn("COPY e FROM STDIN") { try $0.write(Array(e.bytes)) }
        let back = try t.db.query("SELECT i, s, n, b, z IS NULL FROM e ORDER BY i")
        #expect(back.rowCount == values.count)
        for row in 0..<back.rowCount {
            let i = try #require(back.value(row, 0).flatMap { Int($0) })
            #expect(back.value(row, 1).map { Array($0.utf8) } == values[i].map { Array($0.utf8) }, "row \(i)")
            #expect(back.value(row, 2) == numbers[i % numbers.count].map { String($0) }, "row \(i)")
            #expect(back.value(row, 3) == (i % 3 == 0 ? nil : (i % 3 == 1 ? "t" : "f")), "row \(i)")
            #expect(back.value(row, 4) == "t")
        }
    }

    @Test("a script of COPYs and statements: each COPY reads its own data, in order, hostile values unchanged, one transaction")
    func scriptOfCopies() throws {
        let t = try TestDatabase("copyscript")
        defer { t.drop() }
        try t.db.execute("CREATE TABLE a (i int, s text); CREATE TABLE b (i int, s text); CREATE TABLE done (n int)")
        var e = CopyTextEncoder()
        for (i, value) in Self.hostile.enumerated() { e.field(i); e.field(value); e.endRow() }
        let firstEnd = e.bytes.count
        e.field(7); e.field("b's only row"); e.endRow()
        try t.db.execute(script: """
            COPY a FROM STDIN; COPY b FROM STDIN; COPY b FROM STDIN;
            INSERT INTO done SELECT count(*) FROM a
            """, copyData: [e.bytes[..<firstEnd], e.bytes[firstEnd...], []])
        let back = try t.db.query("SELECT i, s FROM a ORDER BY i")
        #expect(back.rowCount == Self.hostile.count)
        for row in 0..<back.rowCount {
            let i = try #require(back.value(row, 0).flatMap { Int($0) })
            #expect(back.value(row, 1).map { Array($0.utf8) } == Self.hostile[i].map { Array($0.utf8) }, "row \(i)")
        }
        #expect(try t.db.query("SELECT i, s FROM b").rows == [["7", "b's only row"]])
        // The INSERT ran after the first COPY, in the same script.
        #expect(try t.scalar("SELECT n FROM done") == String(Self.hostile.count))
    }

    @Test("a script that fails leaves nothing: a bad row in its second COPY, more COPYs than data, fewer")
    func scriptFailsWhole() throws {
        let t = try TestDatabase("copyscriptfail")
        defer { t.drop() }
        try t.db.execute("CREATE TABLE a (i int, s text); CREATE TABLE b (i int)")
        let good = Array("1\tone\n2\ttwo\n".utf8)
        let bad = Array("3\nthree\n".utf8)
        // The second COPY's row is not an integer: the server's error, and the first COPY undone.
        let error = #expect(throws: PGError.self) {
            try t.db.execute(script: "COPY a FROM STDIN; COPY b FROM STDIN", copyData: [good[...], bad[...]])
        }
        #expect(error?.sqlState == "22P02")
        #expect(error?.message.contains("three") == true)
        #expect(try t.scalar("SELECT count(*) FROM a") == "0")
        // A COPY with no data given is aborted, and the script with it.
        #expect(throws: PGError.self) {
            try t.db.execute(script: "COPY a FROM STDIN; COPY b FROM STDIN", copyData: [good[...]])
        }
        #expect(try t.scalar("SELECT count(*) FROM a") == "0")
        // Data for a COPY the script does not have: said, not ignored.
        #expect(throws: PGError.self) {
            try t.db.execute(script: "COPY a FROM STDIN", copyData: [good[...], good[...]])
        }
        // The connection is usable after each failure, and a script with values is refused unsent.
        try t.db.execute(script: "COPY a FROM STDIN", copyData: [good[...]])
        #expect(try t.scalar("SELECT count(*) FROM a") == "4")
        let refused = #expect(throws: PGError.self) {
            try t.db.execute(script: "COPY a FROM STDIN; SELECT \(1)", copyData: [good[...]])
        }
        #expect(refused?.message.contains("cannot bind") == true)
        #expect(try t.scalar("SELECT count(*) FROM a") == "4")
    }

    @Test("binary COPY: the same hostile texts, nulls, int4 and booleans come back as Postgres holds them")
    func binaryFields() throws {
        let t = try TestDatabase("copybinary")
        defer { t.drop() }
        let values = try Self.hostileTable(t.db)
        var rows = 0
        try t.db.copyOutBinary("SELECT i, s, NULL::text, (i % 2 = 0), -(i % 2) - 2147483647 FROM v ORDER BY i", columns: 5) { row in
            guard let i = row.int32(0).map(Int.init) else { Issue.record("no row number"); return }
            #expect(row.count == 5)
            #expect(row.text(1) == values[i], "row \(i)")
            #expect(row.text(2) == nil && row.bytes(2) == nil)
            #expect(row.bool(3) == (i % 2 == 0))
            #expect(row.int32(4) == Int32(-(i % 2) - 2_147_483_647))
            #expect(row.int32(1) == nil || values[i]?.utf8.count == 4, "a text is not an int4")
            rows += 1
        }
        #expect(rows == values.count)
        // A query whose rows do not have the fields asked for is refused, not misread.
        #expect(throws: CopyBinaryReader.Problem.self) {
            try t.db.copyOutBinary("SELECT 1::int4, 2::int4", columns: 3) { _ in }
        }
    }

    @Test("binary COPY: truncated, overlong, misnumbered and trailing data are named problems")
    func binaryHostileMessages() throws {
        let header = CopyBinaryReaderTestBytes.header
        func row(_ fields: [[UInt8]?]) -> [UInt8] {
            var out: [UInt8] = [UInt8(fields.count >> 8), UInt8(fields.count & 0xFF)]
            for f in fields {
                let n = f.map { Int32($0.count) } ?? -1
                out += withUnsafeBytes(of: n.bigEndian) { Array($0) } + (f ?? [])
            }
            return out
        }
        func read(_ messages: [[UInt8]], columns: Int = 2) throws -> [[String?]] {
            var reader = CopyBinaryReader(columns: columns)
            var out: [[String?]] = []
            for m in messages {
                try m.withUnsafeBufferPointer { b in try reader.read(b) { r in out.append((0..<r.count).map { r.text($0) }) } }
            }
            return out
        }
        let good = row([Array("a".utf8), nil])
        #expect(try read([header + good, row([Array("b".utf8), Array("".utf8)]), [0xFF, 0xFF]]) == [["a", nil], ["b", ""]])
        let bad: [(String, [[UInt8]])] = [
            ("no signature", [Array("PGCOPY\n".utf8) + good]),
            ("header cut", [Array(header.prefix(12))]),
            ("extension past the end", [Array(header.prefix(15)) + [0, 0, 0, 9]]),
            ("row cut in its count", [header + [0]]),
            ("row cut in a length", [header + [0, 2, 0, 0]]),
            ("length past the message", [header + row([Array("abc".utf8), nil]).dropLast(1)]),
            ("negative length", [header + [0, 2, 0xFF, 0xFF, 0xFF, 0xFE, 0, 0, 0, 0]]),
            ("three fields where two were asked", [header + row([nil, nil, nil])]),
            ("data after the trailer", [header + good + [0xFF, 0xFF] + good]),
        ]
        for (name, messages) in bad {
            #expect(throws: CopyBinaryReader.Problem.self, "\(name)") { _ = try read(messages) }
        }
    }
}

/// The 19 bytes before the first row of a binary COPY: the signature, flags 0, no extension.
enum CopyBinaryReaderTestBytes {
    static let header: [UInt8] = [80, 71, 67, 79, 80, 89, 10, 255, 13, 10, 0] + [0, 0, 0, 0] + [0, 0, 0, 0]
}
