import Foundation
import Postgres
@testable import NightDecide
@testable import NightLearn
import Testing

/// The decide stage reads its two kinds of family rows as two streams sorted by Postgres with
/// `COLLATE "C"` and merges them in Swift (FamilyStreams.swift): Swift's comparison must be
/// exactly Postgres's, or a family would be cut in two and decided twice.
@Suite("Family keys in Postgres's C order", .serialized, .enabled(if: Harness.hasDatabase))
struct NightTablesTests {
    @Test("precedesInC and equalsInC agree with ORDER BY … COLLATE \"C\" on hostile keys")
    func cOrderMatchesPostgres() throws {
        let t = try TestDatabase("corder")
        defer { t.drop() }
        let keys = [
            "9", "10", "100", "1000000000000000000000", "-1", "", " ", "a", "ab", "A", "Z", "z", "~", "_",
            "é", "e\u{301}", "ｅ", "订单", "订", "🎮", "\u{7f}", "a\u{0}b".replacingOccurrences(of: "\u{0}", with: "\u{1}"),
            "2000000001234567", "2000000001234568", "20000000012345670",
        ]
        try t.db.execute("CREATE TABLE k (k text)")
        for key in keys { try t.db.query("INSERT INTO k VALUES (\(key))") }
        let sorted = try t.db.query("SELECT k FROM k ORDER BY k COLLATE \"C\"")
        let order = (0..<sorted.rowCount).map { sorted.value($0, 0)! }
        #expect(order.count == keys.count)
        for (a, b) in zip(order, order.dropFirst()) {
            #expect(a.precedesInC(b), "\(a.unicodeScalars.map { $0.value }) before \(b.unicodeScalars.map { $0.value })")
            #expect(!b.precedesInC(a))
            #expect(!a.equalsInC(b))
        }
        // A key equals itself however its storage was made (small or large, copied or built
        // anew), and never precedes itself.
        for key in order {
            let rebuilt = String(decoding: Array(key.utf8), as: UTF8.self)
            #expect(key.equalsInC(rebuilt) && rebuilt.equalsInC(key), "\(key.unicodeScalars.map { $0.value })")
            #expect(!key.precedesInC(rebuilt) && !rebuilt.precedesInC(key))
            #expect(!(key + "x").equalsInC(key) && key.precedesInC(key + "x") && !(key + "x").precedesInC(key))
        }
        // Swift's own == says these two are one key; Postgres (and the merge) keep them apart.
        #expect("é" == "e\u{301}")
        #expect(!"é".equalsInC("e\u{301}"))
    }

    @Test("a family row's quiet flag and plain key are read from the line as COPY sends it, hostile keys too")
    func quietFlagAndKey() throws {
        let t = try TestDatabase("quietflag")
        defer { t.drop() }
        // (key, fourth field, how many fields): what plainKey and quietFlag must say of each.
        let cases: [(key: String?, flag: String?, fields: Int, plain: String?, quiet: Bool)] = [
            ("1000000000000160", "t", 29, "1000000000000160", true),
            ("1000000000000160", "f", 29, "1000000000000160", false),
            ("1000000000000160", "t", 4, "1000000000000160", true),
            ("1000000000000160", "tt", 29, "1000000000000160", false),
            ("1000000000000160", "true", 29, "1000000000000160", false),
            ("1000000000000160", "", 29, "1000000000000160", false),
            ("1000000000000160", nil, 29, "1000000000000160", false),
            ("1000000000000160", "t", 3, "1000000000000160", false),
            ("", "t", 29, "", true),
            (nil, "t", 29, nil, true),
            ("a\tb", "t", 29, nil, true),
            ("a\\b", "t", 29, nil, true),
            ("a\nb", "t", 29, nil, true),
            ("订单🎮", "t", 29, "订单🎮", true),
            ("é", "t", 29, "é", true),
        ]
        var lines: [[UInt8]] = []
        for c in cases {
            // COPY takes no parameters: the values go in as typed literals (SQLLiteral).
            func literal(_ value: String?) -> SQL { value.map { SQL.literal(.text($0)) } ?? "NULL::text" }
            var list: [SQL] = [literal(c.key), "'T'", "'id'", literal(c.flag)]
            while list.count < c.fields { list.append("NULL::text") }
            try t.db.copyOut("COPY (SELECT \(list.prefix(c.fields).joined(separator: ", "))) TO STDOUT") { lines.append(Array($0)) }
        }
        #expect(lines.count == cases.count)
        for (c, line) in zip(cases, lines) {
            line.withUnsafeBufferPointer { buffer in
                #expect(FamilyRow.quietFlag(buffer) == c.quiet, "flag of \(c)")
                #expect(FamilyRow.plainKey(buffer) == c.plain, "key of \(c)")
            }
        }
    }

    @Test("the copies' epoch milliseconds equal numeric extract's at the fast path's edges, .5 ms, every time zone")
    func epochMillisecondsExact() throws {
        let t = try TestDatabase("epochms")
        defer { t.drop() }
        // Times at and around the fast path's bounds, far outside them, half milliseconds (where
        // a float rounding would go wrong) and random microseconds up to the bound.
        try t.db.execute("""
            SELECT setseed(0.42);
            CREATE TABLE ts (c timestamptz);
            INSERT INTO ts VALUES (NULL), ('1970-01-01 00:00:00.0005+00'), ('1969-12-31 23:59:59.9995+00'),
                ('1970-01-01 23:59:59.9995+00'), ('1970-01-02 00:00:00.0005+00'), ('1970-01-02 00:00:00.0004+00'),
                ('1970-01-02 00:00:00.0005+14'), ('2040-12-31 23:59:59.9995+00'), ('2041-01-01 00:00:00.0005-12'),
                ('2041-01-01 00:00:00.0005+00'), ('2041-05-08 00:00:00.0005+00'), ('0001-01-01 00:00:00.0005+00'),
                ('4713-01-01 00:00:00.0005+00 BC'), ('294276-12-31 23:59:59.999999+00'), ('2026-11-21 03:00:00.0015+00');
            INSERT INTO ts SELECT to_timestamp(0) + ((random() * 2240000000000)::bigint * 1000 + 500) * interval '1 microsecond'
                FROM generate_series(1, 100000);
            INSERT INTO ts SELECT to_timestamp(0) + (random() * 2240000000000000)::bigint * interval '1 microsecond'
                FROM generate_series(1, 100000);
            """)
        #expect(try t.int("SELECT count(*) FROM ts") == 200_015)
        let fast = SourceRelation.epochMilliseconds("c")
        for zone in ["UTC", "Pacific/Kiritimati", "Pacific/Niue", "Asia/Kolkata"] {
            try t.db.query("SELECT set_config('TimeZone', \(zone), false)")
            let differ = try t.int("""
                SELECT count(*) FROM ts WHERE (\(fast)) IS DISTINCT FROM (extract(epoch FROM c) * 1000)::bigint
                """)
            #expect(differ == 0, "\(differ) times differ in \(zone)")
        }
        // The fast path is taken (the check above would pass on the numeric path alone).
        #expect(fast.text.contains("date_part"))
        #expect(try t.scalar("SELECT \(fast) FROM (SELECT timestamptz '2026-11-21 03:00:00.0015+00' AS c) x") == "1795230000002")
    }
}
