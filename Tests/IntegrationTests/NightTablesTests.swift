import Foundation
import Postgres
@testable import ReconcileJob
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
        for key in keys { try t.db.query("INSERT INTO k VALUES ($1)", [key]) }
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
}
