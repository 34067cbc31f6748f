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

    @Test("lookup's merge, written from the description, leaves the rows learn_transactions leaves")
    func lookupMergesAsTheNights() throws {
        let t = try TestDatabase("atlearn")
        defer { t.drop() }
        let schema = try JobSchema("recon")
        try Migrations.apply(t.db, schema: schema)
        // The same transaction four times (a refund seen, then an answer without it; a second
        // history user; a reversal; a less direct source after a more direct one), an upper-case
        // token, nulls wherever the table allows them, the same id in two environments, huge and
        // negative numbers, and text that needs quoting.
        let elements: [String] = [
            #"{"tid":"1","otid":"1","pid":"p","q":1,"pd":1000,"aat":"ABC-DEF","env":"Production","src":"notification","sd":5}"#,
            #"{"tid":"1","otid":"1","pid":"p","q":2,"pd":1000,"cd":2000,"cr":"1","env":"Production","src":"transaction_history","hu":"u1","sd":3}"#,
            #"{"tid":"1","otid":"0","pid":"p2","q":1,"pd":1001,"env":"Production","src":"receipt","hu":"u2","rvsd":7,"sd":9}"#,
            #"{"tid":"1","otid":"0","pid":"p2","q":1,"pd":1001,"env":"Production","src":"signed_transaction","rvsd":4,"price":9223372036854775807}"#,
            #"{"tid":"1","otid":"x","pid":"q'\"\\","q":-5,"pd":-1,"env":"Sandbox","src":"notification","trial":true,"rvp":-1}"#,
            #"{"tid":"2","otid":"2","pid":"p","q":1,"pd":0,"opd":null,"exp":null,"cd":null,"aat":null,"env":"Production","src":"notification"}"#,
        ]
        try t.db.query("SELECT recon.learn_transactions(\("[" + elements.joined(separator: ",") + "]")::jsonb)")
        try t.db.execute("""
            CREATE TEMPORARY TABLE lk_apple (LIKE recon.apple_transactions INCLUDING DEFAULTS);
            ALTER TABLE lk_apple ADD PRIMARY KEY (transaction_id, environment)
            """)
        for element in elements {
            try t.db.query(AppleTransactionColumns.learnSQL(into: "pg_temp.lk_apple", element: "\(element)::jsonb", schema: schema))
        }
        let columns = AppleTransactionColumns.all.filter { $0.merge != .madeAt && $0.merge != .touchedAt }
            .map { "\(ident: $0.name)" as SQL }.joined()
        func rows(_ table: SQL) throws -> [[String?]] {
            try t.db.query("SELECT \(columns) FROM \(table) ORDER BY transaction_id, environment").rows
        }
        let nights = try rows("recon.apple_transactions"), lookup = try rows("pg_temp.lk_apple")
        #expect(nights.count == 3)
        #expect(lookup == nights)
        // What the rules say, so that two wrong merges cannot agree unseen.
        let one = try t.db.query("""
            SELECT cancellation_date_ms, app_account_token, history_user_id, reversed_date_ms, source, signed_date_ms, product_id
            FROM pg_temp.lk_apple WHERE transaction_id = '1' AND environment = 'Production'
            """).rows.first
        #expect(one == ["2000", "abc-def", "u1", "7", "receipt", "9", "p2"])
    }
}

