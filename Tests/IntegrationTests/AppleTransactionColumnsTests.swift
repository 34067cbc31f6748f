import Foundation
import Postgres
import Reconciliation
@testable import JobStore
@testable import NightLearn
import Testing

/// The one description of `apple_transactions` (AppleTransactionColumns) against what the frozen
/// migrations made and run: the table's columns, the staging table's, the merge of answers.
@Suite struct AppleTransactionColumnsTests {
    @Test("the description names the migrated table's columns, in order, with their types")
    func matchesTheMigratedTable() throws {
        let t = try TestDatabase("atcolumns")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        let table = try t.db.query("""
            SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
            WHERE a.attrelid = 'recon.apple_transactions'::regclass AND a.attnum > 0 AND NOT a.attisdropped
            ORDER BY a.attnum
            """).rows.map { "\($0[0] ?? "") \($0[1] ?? "")" }
        let described = AppleTransactionColumns.all.map { "\($0.name) \($0.type.rawValue)" }
        #expect(described == table)
        // The staging table (answer_staging, migrations 12 and 17): the answer's receipt,
        // environment and kind, the record list, then whether the receipt's link is stored already.
        try t.db.execute("SELECT recon.answer_staging()")
        let staged = try t.db.query("""
            SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
            WHERE a.attrelid = 'pg_temp.staged_transactions'::regclass AND a.attnum > 3 AND NOT a.attisdropped
            ORDER BY a.attnum
            """).rows.map { $0[0] ?? "" }
        #expect(AppleTransactionColumns.recordList.text.replacingOccurrences(of: "\"", with: "")
                    .replacingOccurrences(of: "timestamptz", with: "timestamp with time zone") + ", linked boolean"
                    == staged.joined(separator: ", "))
    }

    @Test("the insert and merge lists are the ones the latest merge of answers runs (migration 17)")
    func matchesTheFrozenMerge() throws {
        func normalized(_ s: String) -> String {
            let noComments = s.split(separator: "\n").map { line in line.range(of: "--").map { line[..<$0.lowerBound] } ?? line }
            // Identifiers the description quotes ("quantity") are plain in the migrations' text.
            return noComments.joined(separator: " ").split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
                .replacingOccurrences(of: "( ", with: "(").replacingOccurrences(of: " )", with: ")")
                .replacingOccurrences(of: "\"", with: "")
        }
        let schema = try JobSchema("recon")
        let merge = normalized(try #require(Migrations.migration(17)).sql.replacingOccurrences(of: "{S}", with: "\"recon\""))
        let insert = normalized("INSERT INTO \"recon\".apple_transactions AS t (\(AppleTransactionColumns.insertList.text))")
        let set = normalized("ON CONFLICT (transaction_id, environment) DO UPDATE SET \(AppleTransactionColumns.mergeList(schema: schema).text);")
        #expect(merge.contains(insert), "\(insert)")
        #expect(merge.contains(set), "\(set)")
    }

    @Test("a learned transaction's fields are the record list, in its order (the staging COPY, learn_transactions' JSON)")
    func fieldsAreTheRecord() {
        let t = AnswerRecord.Transaction(AppleTransaction(
            transactionID: "1", originalTransactionID: "1", productID: "p", quantity: 1, purchaseDate: 0, environment: .production))
        let labels = Mirror(reflecting: t).children.compactMap(\.label)
        #expect(labels == AppleTransactionColumns.fields)
        #expect(AppleTransactionColumns.stagedCopy.text.hasPrefix(#"COPY pg_temp.staged_transactions (r, env, kind, "tid", "otid", "pid","#))
    }
}
