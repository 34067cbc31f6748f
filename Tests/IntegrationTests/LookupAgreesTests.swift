import AppStoreSimulator
import Foundation
import Testing

/// Issue "One rule book": `lookup` and the night decide through the same code, so they agree on
/// every purchase of a generated night: every row of compensate.csv, clawback.csv and
/// unattributed.csv, and a sample of purchases with no finding, asked as customer service asks
/// (`lookup --transaction … --json`) against the simulator's Server API.
@Suite("lookup agrees with the night", .serialized, .enabled(if: Harness.hasDatabase))
struct LookupAgreesTests {
    /// A report of the night as rows keyed by column name.
    static func report(_ folder: URL, _ file: String) -> [[String: String]] {
        let rows = GarbageAnswerTests.csvRows(NightTests.read(folder.appendingPathComponent(file)))
        guard let header = rows.first else { return [] }
        return rows.dropFirst().filter { $0.count == header.count }.map { Dictionary(uniqueKeysWithValues: zip(header, $0)) }
    }

    /// lookup's item for a transaction, or nil when Apple does not know it.
    static func lookup(_ w: ServerAPINightTests.World, _ tid: String) throws -> [String: Any]? {
        let r = try w.run(["lookup", "--transaction", tid, "--json", "--as-of", NightTests.asOf])
        #expect(r.status == 0, "lookup \(tid): \(r.stderr)")
        let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        return (parsed?["transactions"] as? [[String: Any]])?.first { $0["transaction_id"] as? String == tid }
    }

    @Test("every compensate, clawback and unattributed row, and purchases with no finding: the same verdict, user, order and grants")
    func everyRow() throws {
        let w = try ServerAPINightTests.world("lookup_agrees", share: "0.25")
        defer { w.stop() }
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        NightTests.expectReportsMatchTruth(day, expected: w.expected)

        // compensate.csv: verdict, user, order (exact or inferred), units owed, and the night that listed it.
        let compensate = Self.report(day, "compensate.csv").filter { $0["environment"] == "production" }
        #expect(compensate.contains { $0["source"] == "transaction_history" },
                "the night has no purchase found only in transaction history: the property would miss the case of the issue")
        #expect(compensate.contains { $0["match"] == "inferred" }, "no inferred match to agree on")
        for row in compensate {
            let tid = row["transaction_id"]!
            let item = try #require(try Self.lookup(w, tid), "Apple does not know \(tid)")
            #expect(item["verdict"] as? String == "compensate", "\(tid) (\(row["source"]!)): \(item["text"] ?? "")")
            #expect(item["user_id"] as? String == row["user_id"], "\(tid): user \(item["user_id"] ?? "nil") ≠ \(row["user_id"]!)")
            #expect((item["order_id"] as? String ?? "") == row["order_id"],
                    "\(tid) (\(row["match"]!)): order \(item["order_id"] ?? "nil") ≠ \(row["order_id"]!)")
            #expect(item["owed"] as? Int == Int(row["quantity"]!), "\(tid): owed \(item["owed"] ?? "nil") ≠ \(row["quantity"]!)")
            #expect(item["report"] as? String == "compensate.csv" && item["first_seen"] as? String == row["first_seen"],
                    "\(tid): \(item["report"] ?? "nil") \(item["first_seen"] ?? "nil")")
        }

        // clawback.csv: one row per grant; lookup names the transaction's grants to take back and
        // the user of the first of them. A transaction Apple never showed is not found by lookup.
        let clawback = Self.report(day, "clawback.csv")
        for (tid, rows) in Dictionary(grouping: clawback, by: { $0["transaction_id"]! }) {
            let item = try Self.lookup(w, tid)
            guard let item else {
                #expect(rows.allSatisfy { ["invalid_receipt", "wrong_bundle", "transaction_not_found"].contains($0["reason"]!) },
                        "Apple does not know \(tid), clawed back as \(rows.map { $0["reason"]! })")
                continue
            }
            let first = rows.min { ($0["granted_at"]!, $0["grant_id"]!) < ($1["granted_at"]!, $1["grant_id"]!) }!
            #expect(item["verdict"] as? String == "claw_back", "\(tid) (\(first["reason"]!)): \(item["text"] ?? "")")
            #expect(Set(item["grant_ids"] as? [String] ?? []) == Set(rows.map { $0["grant_id"]! }), "\(tid): \(item)")
            #expect(item["user_id"] as? String == first["user_id"], "\(tid): \(item["user_id"] ?? "nil") ≠ \(first["user_id"]!)")
        }

        // unattributed.csv: ask the customer, and the night listed it.
        let unattributed = Self.report(day, "unattributed.csv")
        for row in unattributed {
            let tid = row["transaction_id"]!
            let item = try #require(try Self.lookup(w, tid))
            #expect(item["verdict"] as? String == "unknown_to_us" && item["report"] as? String == "unattributed.csv"
                    && item["user_id"] == nil, "\(tid): \(item)")
        }

        // Purchases with no finding: never compensate or claw back; granted ones name their active grants.
        let listed = Set(compensate.map { $0["transaction_id"]! } + clawback.map { $0["transaction_id"]! }
                         + unattributed.map { $0["transaction_id"]! })
        let quiet = try w.t.db.query("""
            SELECT t.transaction_id, coalesce(string_agg(g.grant_id, ' ' ORDER BY g.granted_at, g.grant_id)
                                              FILTER (WHERE g.revoked_at IS NULL), '')
            FROM recon.apple_transactions t LEFT JOIN iap_grants g ON g.transaction_id = t.transaction_id
            WHERE t.environment = 'production' GROUP BY t.transaction_id ORDER BY md5(t.transaction_id)
            """).rows.filter { !listed.contains($0[0]!) }.prefix(40)
        #expect(quiet.count == 40)
        var kinds: Set<String> = []
        for row in quiet {
            let tid = row[0]!
            let item = try #require(try Self.lookup(w, tid))
            let verdict = item["verdict"] as? String ?? ""
            kinds.insert(verdict)
            #expect(!["compensate", "claw_back"].contains(verdict) && item["report"] as? String != "unattributed.csv",
                    "\(tid) has no finding, but lookup says \(item["text"] ?? "")")
            if verdict == "granted" {
                #expect((item["grant_ids"] as? [String] ?? []).joined(separator: " ") == row[1]!, "\(tid): \(item)")
            }
        }
        #expect(kinds.contains("granted"), "\(kinds)")
    }

    @Test("before the job schema is migrated (or when it is behind, or another build migrated it), lookup stops with 78")
    func needsTheMigratedSchema() throws {
        let w = try ServerAPINightTests.world("lookup_schema", users: 60)
        defer { w.stop() }
        let truth = try String(contentsOf: w.truth, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }
        let header = truth[0].split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        let row = truth.dropFirst().map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            .first { $0[header.firstIndex(of: "environment")!] == "production" }!
        let tid = row[header.firstIndex(of: "transaction_id")!]
        let before = try w.run(["lookup", "--transaction", tid])
        #expect(before.status == 78 && before.stderr.contains("not there yet") && before.stderr.contains("iap-reconcile migrate"),
                "\(before.stderr)")
        #expect(try w.run(["migrate"]).status == 0)
        // The latest migration's record gone (a database that an older build migrated), then back.
        let latest = try w.t.db.query("""
            DELETE FROM recon.schema_migrations WHERE version = (SELECT max(version) FROM recon.schema_migrations)
            RETURNING version::text, name
            """).rows[0]
        let behind = try w.run(["lookup", "--transaction", tid])
        #expect(behind.status == 78 && behind.stderr.contains("at migration"), "\(behind.stderr)")
        try w.t.db.query("INSERT INTO recon.schema_migrations (version, name) VALUES (\(latest[0])::int, \(latest[1]))")
        // A text of another build recorded: 78 naming the version; the row back without
        // a checksum (not backfilled yet: lookup writes nothing) is accepted.
        try w.t.db.execute("UPDATE recon.schema_migrations SET checksum = 'x' WHERE version = 2")
        let different = try w.run(["lookup", "--transaction", tid])
        #expect(different.status == 78 && different.stderr.contains("migrated by a different build (version 2:"), "\(different.stderr)")
        try w.t.db.execute("UPDATE recon.schema_migrations SET checksum = NULL WHERE version = 2")
        let after = try w.run(["lookup", "--transaction", tid, "--json"])
        #expect(after.status == 0 && after.stdout.contains("\"verdict\""), "\(after.stderr)")
    }
}
