import Foundation
import Postgres
@testable import JobStore
@testable import NightLearn
import Testing

/// `record_answers` applies a batch as sets (migration 11). Its merges must be the
/// per-answer function's (`record_answers_each`), several answers for one receipt or one
/// transaction in a batch included: the same seeded batches applied both ways to two schemas
/// leave the same rows.
@Suite("Answers recorded as sets", .serialized, .enabled(if: Harness.hasDatabase))
struct RecordAnswersSetTests {
    /// A small seeded generator (the same batches every run).
    struct Draw {
        var state: UInt64
        mutating func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(n))
        }
        mutating func maybe<T>(_ value: T) -> T? { next(3) == 0 ? nil : value }
    }

    static func record(_ d: inout Draw, attempt: Int) -> [String: Any] {
        let final = d.next(2) == 0
        var r: [String: Any] = [
            "r": "R\(d.next(25))", "n": attempt, "run": 1, "at": 1_790_000_000_000 + d.next(100_000),
            "env": d.next(4) == 0 ? "sandbox" : "production", "cls": ["ok", "retry", "reject"][d.next(3)],
            "ms": d.next(90), "sweep": d.next(5) == 0, "final": final, "state": d.next(8) != 0,
            "failed_runs": d.next(3), "runs_21002": d.next(2), "kind": d.next(3) == 0 ? "signed_transaction" : "receipt",
        ]
        r["http"] = d.maybe(200)
        r["st"] = d.maybe([0, 21002, 21003, 21007][d.next(4)])
        r["err"] = d.maybe("transport \(d.next(9))")
        r["next"] = d.maybe(1_790_000_100_000 + d.next(1000))
        r["verdict"] = d.maybe(["valid", "invalid_receipt", "wrong_bundle"][d.next(3)])
        r["bundle"] = d.maybe("com.example.game")
        r["start"] = d.maybe(["production", "sandbox"][d.next(2)])
        r["rej"] = d.maybe("bad_signature")
        if d.next(3) != 0 {
            // An answer names a transaction once (AnswerRecord's list has one entry per id).
            let first = d.next(18)
            r["txs"] = (0..<(1 + d.next(2))).map { k -> [String: Any] in
                let tid = "T\((first + k) % 18)"
                var t: [String: Any] = ["tid": tid, "otid": "T\(d.next(4))", "pid": "p\(d.next(3))", "q": 1 + d.next(2),
                                        "pd": 1_789_000_000_000 + d.next(50_000)]
                t["cd"] = d.next(4) == 0 ? 1_789_100_000_000 + d.next(1000) : nil
                t["cr"] = t["cd"] == nil ? nil : "0"
                t["price"] = d.maybe(990 + d.next(9))
                t["cur"] = t["price"] == nil ? nil : "USD"
                t["aat"] = d.maybe("a1b2c3d4-0000-4000-8000-00000000000\(d.next(9))")
                t["rvd"] = d.next(5) == 0 ? 1_789_200_000_000 + d.next(1000) : nil
                t["rvt"] = t["rvd"] == nil ? nil : ["REFUND_FULL", "FAMILY_REVOKE"][d.next(2)]
                t["sd"] = d.maybe(1_789_300_000_000 + d.next(1000))
                t["wol"] = d.maybe("W\(d.next(5))")
                return t
            }
        }
        return r
    }

    /// A table's rows as JSON text, sorted, without the columns `now()` fills.
    static func rows(_ db: PGConnection, _ schema: String, _ table: String) throws -> [String] {
        try db.query("""
            SELECT (to_jsonb(x) - 'updated_at' - 'first_learned_at' - 'learned_at')::text FROM \(ident: schema).\(ident: table) x ORDER BY 1
            """).rows.compactMap { $0[0] }
    }

    /// A test database with two migrated job schemas, the session's staging tables made.
    static func stagingPair(_ name: String, _ a: String, _ b: String) throws -> (TestDatabase, JobSchema, JobSchema) {
        let t = try TestDatabase(name)
        let x = try JobSchema(a), y = try JobSchema(b)
        try Migrations.apply(t.db, schema: x)
        try Migrations.apply(t.db, schema: y)
        try StagedAnswers.prepare(t.db, schema: x)
        return (t, x, y)
    }

    /// The four tables the answers fill hold the same rows (more than ten each) in both schemas.
    static func expectSameRows(_ db: PGConnection, _ a: String, _ b: String, _ howA: String, _ howB: String) throws {
        for table in ["verify_attempts", "receipt_state", "apple_transactions", "receipt_transactions"] {
            let x = try rows(db, a, table), y = try rows(db, b, table)
            let difference = zip(x, y).first { $0 != $1 }.map { "\($0)\n≠ \($1)" } ?? "(counts)"
            #expect(x.count > 10 && x == y, "\(table): \(x.count) rows \(howA), \(y.count) \(howB); first difference: \(difference)")
        }
    }

    @Test("seeded batches with repeated receipts and transactions: the set function leaves the per-answer function's rows")
    func setsEqualEach() throws {
        let t = try TestDatabase("answer_sets")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("ra"))
        try Migrations.apply(t.db, schema: try JobSchema("rb"))
        var d = Draw(state: 11)
        var attempts: [String: Int] = [:]
        var repeatedBatches = 0
        for _ in 0..<120 {
            let batch = (0..<(1 + d.next(14))).map { _ -> [String: Any] in
                var r = Self.record(&d, attempt: 0)
                let receipt = r["r"] as! String
                attempts[receipt, default: 0] += d.next(4) == 0 ? 0 : 1  // now and then the same attempt again
                r["n"] = max(1, attempts[receipt] ?? 1)
                return r
            }
            if Set(batch.map { $0["r"] as! String }).count < batch.count { repeatedBatches += 1 }
            let json = String(decoding: try JSONSerialization.data(withJSONObject: batch), as: UTF8.self)
            try t.db.query("SELECT ra.record_answers(\(json)::jsonb)")
            try t.db.query("SELECT rb.record_answers_each(\(json)::jsonb)")
        }
        #expect(repeatedBatches >= 20, "too few batches with a receipt twice: \(repeatedBatches)")
        try Self.expectSameRows(t.db, "ra", "rb", "as sets", "one by one")
        // Apple's facts merged over several answers: some transaction learned twice in a batch.
        #expect(try t.int("SELECT count(*) FROM ra.apple_transactions WHERE cancellation_date_ms IS NOT NULL") > 0)
    }

    @Test("seeded batches staged with COPY (migration 12, the writer's grouping): the per-answer function's rows")
    func stagedEqualsEach() throws {
        let (t, a, _) = try Self.stagingPair("answer_staged", "sa", "sb")
        defer { t.drop() }
        var d = Draw(state: 23)
        var attempts: [String: Int] = [:]
        var encoder = CopyTextEncoder()
        var split = 0, groups = 0
        for _ in 0..<120 {
            let batch = (0..<(1 + d.next(14))).map { _ -> [String: Any] in
                var r = Self.record(&d, attempt: 0)
                let receipt = r["r"] as! String
                attempts[receipt, default: 0] += d.next(4) == 0 ? 0 : 1
                r["n"] = max(1, attempts[receipt] ?? 1)
                // Text the COPY format must escape, now and then.
                if d.next(6) == 0 { r["err"] = "tab\there, new\nline, back\\slash, \r" }
                return r
            }
            let json = try JSONSerialization.data(withJSONObject: batch)
            let records = try JSONDecoder().decode([AnswerRecord].self, from: json)
            let parts = StagedAnswers.groups(records, size: 6)
            if parts.count > 1 { split += 1 }
            #expect(parts.flatMap { Array($0) } == records, "the groups keep every record, in order")
            for part in parts {
                #expect(Set(part.map(\.r)).count == part.count, "a receipt twice in one group")
                try StagedAnswers.record(part, db: t.db, schema: a, encoder: &encoder)
                groups += 1
                if groups % 5 == 0 { try StagedAnswers.vacuum(t.db) }  // as the writer does now and then
            }
            try t.db.query("SELECT sb.record_answers_each(\(String(decoding: json, as: UTF8.self))::jsonb)")
        }
        #expect(split >= 20, "too few batches split into groups: \(split)")
        try Self.expectSameRows(t.db, "sa", "sb", "staged", "one by one")
        #expect(try t.int("SELECT count(*) FROM sa.verify_attempts WHERE problem LIKE 'tab\there%'") > 0)
        // An upload verified offline sent no request: its state is stored, no attempt.
        var offline = try JSONDecoder().decode([AnswerRecord].self, from: try JSONSerialization.data(
            withJSONObject: [Self.record(&d, attempt: 1).merging(["r": "offline-1", "state": true]) { $1 }]))
        offline[0].asked = false
        try StagedAnswers.record(offline[0...], db: t.db, schema: a, encoder: &encoder)
        #expect(try t.int("SELECT count(*) FROM sa.receipt_state WHERE receipt_id = 'offline-1'") == 1)
        #expect(try t.int("SELECT count(*) FROM sa.verify_attempts WHERE receipt_id = 'offline-1'") == 0)
        // Emptied after each group: nothing staged is left to be merged twice.
        #expect(try t.int("SELECT count(*) FROM pg_temp.staged_answers") == 0)
        #expect(try t.int("SELECT count(*) FROM pg_temp.staged_transactions") == 0)
    }

    @Test("fresh uploads copied straight into the tables (migration 17) leave the staged rows; one stored already is merged")
    func freshEqualsStaged() throws {
        let (t, a, b) = try Self.stagingPair("answer_fresh", "fa", "fb")
        defer { t.drop() }
        var d = Draw(state: 41)
        var encoder = CopyTextEncoder()
        var paths: [StagedAnswers.Path] = []
        var stored = Set<String>()
        for g in 0..<40 {
            // Uploads verified offline, and App Store answers for other receipts, in one group;
            // the transactions come from a small pool, so uploads and answers share some.
            let group = try (0..<(1 + d.next(12))).map { k -> AnswerRecord in
                var raw = Self.record(&d, attempt: 1)
                raw["r"] = "U\(g)-\(k)"
                if d.next(4) == 0 { raw["r"] = "R\(d.next(30))-\(g)" }
                raw["state"] = true
                if d.next(3) == 0, let err = raw["err"] as? String { raw["err"] = err + "\tand a tab" }
                var record = try JSONDecoder().decode(AnswerRecord.self, from: JSONSerialization.data(withJSONObject: raw))
                if record.r.hasPrefix("U") {
                    (record.asked, record.kind, record.final, record.next, record.sweep) = (false, "signed_transaction", true, nil, false)
                    // Now and then a receipt the reader took for fresh was stored meanwhile.
                    if d.next(10) == 0, !stored.isEmpty { record.r = stored.sorted()[d.next(stored.count)] }
                    record.fresh = !stored.contains(record.r) || d.next(2) == 0
                    record.at = 1_795_230_000_000 + Int64(d.next(999))  // milliseconds that must survive the text
                    // An upload names one transaction: one the job knows (the small pool the
                    // answers share) or, half the time, one of its own, which is copied in new.
                    if var tx = record.txs?.first {
                        if d.next(2) == 0 { tx.tid = "N\(g)-\(k)" }
                        record.txs = [tx]
                    }
                }
                return record
            }
            for part in StagedAnswers.groups(group, size: 6) {
                paths.append(try StagedAnswers.record(part, db: t.db, schema: a, encoder: &encoder))
                var plain = part
                for i in plain.indices { plain[i].fresh = false }
                try StagedAnswers.record(plain, db: t.db, schema: b, encoder: &encoder)
                stored.formUnion(part.map(\.r))
            }
        }
        #expect(paths.filter { $0 == .direct }.count >= 10, "\(paths)")
        #expect(paths.contains(.stagedAfterConflict), "no group met a receipt stored meanwhile")
        try Self.expectSameRows(t.db, "fa", "fb", "copied", "staged")
        #expect(try t.int("SELECT count(*) FROM fa.receipt_state WHERE extract(milliseconds FROM last_attempt_at)::int % 1000 <> 0") > 10)
        #expect(try t.int("SELECT count(*) FROM fa.apple_transactions WHERE transaction_id LIKE 'N%'") > 10)
        #expect(try t.int("SELECT count(*) FROM pg_temp.staged_answers") == 0)
        #expect(try t.int("SELECT count(*) FROM pg_temp.staged_transactions") == 0)
    }
}
