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

    @Test("escapes, nulls, empty text, a literal \\N, tabs, newlines, backslashes and non-ASCII come back as Postgres holds them")
    func hostileFields() throws {
        let t = try TestDatabase("copytext")
        defer { t.drop() }
        let values = Self.hostile
        try t.db.execute("CREATE TABLE v (i int, s text)")
        for (i, value) in values.enumerated() {
            try t.db.query("INSERT INTO v VALUES (\(i)::int, \(value))")
        }
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
        var e = CopyTextEncoder()
        for (i, value) in values.enumerated() {
            e.field(i); e.field(value); e.field(numbers[i % numbers.count])
            e.field(i % 3 == 0 ? nil : i % 3 == 1); e.field(nil as String?)
            e.endRow()
        }
        try t.db.copyIn("COPY e FROM STDIN") { try $0.write(e.bytes) }
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
}
