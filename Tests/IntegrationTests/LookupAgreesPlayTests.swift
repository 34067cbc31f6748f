import Foundation
import Testing

extension LookupAgreesTests {
    /// lookup's one item for a Google Play purchase, asked as customer service asks: by Google's
    /// order id (`GPA.…`), or by token for a purchase without one.
    static func lookupPlay(_ night: TwoStoreNight, _ id: String) throws -> [String: Any] {
        let r = try runTool(
            "iap-reconcile",
            ["lookup"] + (id.hasPrefix("GPA.") ? [id] : ["--token", id]) + ["--json", "--as-of", night.asOf],
            environment: night.env)
        #expect(r.status == 0, "lookup \(id): \(r.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        let items = json?["transactions"] as? [[String: Any]] ?? []
        #expect(items.count == 1, "lookup \(id): \(r.stdout)")
        return items.first ?? [:]
    }

    /// The generator's two-store night: every Play row customer service acts on (compensate.csv,
    /// clawback.csv, unattributed.csv), and ten Play purchases no report lists, asked with `lookup`
    /// by order id or token. A listed row gets its report's verdict, user, order, units owed and
    /// grants to take back; a quiet purchase never gets a finding's verdict, and one granted names
    /// the shop's active grants of it and their user.
    @Test(
        "Google Play: every compensate, clawback and unattributed row, and purchases with no finding: the same verdict, user, order and grants"
    )
    func everyPlayRow() throws {
        let night = try TwoStoreNight.ranOnce("lookup_agrees_play").night
        defer { night.stop() }

        // compensate.csv: verdict, user, order (exact, inferred or none), units owed, and the night that listed it.
        let compensate = night.playRows("compensate.csv")
        for row in compensate {
            let tid = row["transaction_id"] ?? ""
            let item = try Self.lookupPlay(night, tid)
            #expect(item["verdict"] as? String == "compensate", "\(tid): \(item["text"] ?? "")")
            #expect(
                item["user_id"] as? String == row["user_id"],
                "\(tid): user \(item["user_id"] ?? "nil") ≠ \(row["user_id"] ?? "")")
            #expect(
                (item["order_id"] as? String ?? "") == row["order_id"],
                "\(tid) (\(row["match"] ?? "")): order \(item["order_id"] ?? "nil") ≠ \(row["order_id"] ?? "")")
            #expect(
                item["owed"] as? Int == Int(row["quantity"] ?? ""),
                "\(tid): owed \(item["owed"] ?? "nil") ≠ \(row["quantity"] ?? "")")
            #expect(
                item["report"] as? String == "compensate.csv" && item["first_seen"] as? String == row["first_seen"],
                "\(tid): \(item["report"] ?? "nil") \(item["first_seen"] ?? "nil")")
        }

        // clawback.csv: one row per grant; lookup names the purchase's grants to take back and the
        // user of the first of them.
        let clawback = night.playRows("clawback.csv")
        for (tid, rows) in Dictionary(grouping: clawback, by: { $0["transaction_id"] ?? "" }) {
            let item = try Self.lookupPlay(night, tid)
            let first = rows.min {
                ($0["granted_at"] ?? "", $0["grant_id"] ?? "") < ($1["granted_at"] ?? "", $1["grant_id"] ?? "")
            }
            #expect(
                item["verdict"] as? String == "claw_back", "\(tid) (\(first?["reason"] ?? "")): \(item["text"] ?? "")")
            #expect(
                Set(item["grant_ids"] as? [String] ?? []) == Set(rows.map { $0["grant_id"] ?? "" }), "\(tid): \(item)")
            #expect(
                item["user_id"] as? String == first?["user_id"],
                "\(tid): \(item["user_id"] ?? "nil") ≠ \(first?["user_id"] ?? "")")
        }

        // unattributed.csv: ask the customer, and the night listed it.
        let unattributed = night.playRows("unattributed.csv")
        for row in unattributed {
            let tid = row["transaction_id"] ?? ""
            let item = try Self.lookupPlay(night, tid)
            #expect(
                item["verdict"] as? String == "unknown_to_us" && item["report"] as? String == "unattributed.csv"
                    && item["user_id"] == nil, "\(tid): \(item)")
        }
        #expect(!compensate.isEmpty && !clawback.isEmpty && !unattributed.isEmpty)
        #expect(compensate.count + Set(clawback.map { $0["transaction_id"] }).count + unattributed.count >= 10)

        // Purchases with no finding: never a finding's verdict; granted ones name the shop's active
        // grants of the purchase (by order id or token) and their user.
        var listed = Set<String>()
        for file in [
            "compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv",
            "acknowledge.csv",
        ] {
            listed.formUnion(night.playRows(file).compactMap { $0["transaction_id"] })
        }
        let quiet = try night.t.db.query(
            """
            SELECT p.token, coalesce(p.order_id, p.token),
                   coalesce(string_agg(g.grant_id, ' ' ORDER BY g.granted_at, g.grant_id COLLATE "C"), ''),
                   (array_agg(g.user_id ORDER BY g.granted_at, g.grant_id COLLATE "C"))[1]
            FROM recon.play_purchases p
            LEFT JOIN iap_grants g ON g.store = 'google_play' AND g.revoked_at IS NULL
                                  AND g.transaction_id IN (p.token, p.order_id)
            GROUP BY p.token, p.order_id ORDER BY md5(p.token)
            """
        ).rows.filter { !listed.contains($0[1] ?? "") }.prefix(10)
        #expect(quiet.count == 10)
        var kinds: Set<String> = []
        for row in quiet {
            let id = row[1] ?? ""
            let item = try Self.lookupPlay(night, id)
            let verdict = item["verdict"] as? String ?? ""
            kinds.insert(verdict)
            #expect(
                !["compensate", "claw_back"].contains(verdict) && item["report"] == nil,
                "\(id) has no finding, but lookup says \(item["text"] ?? "")")
            if verdict == "granted" {
                #expect((item["grant_ids"] as? [String] ?? []).joined(separator: " ") == row[2], "\(id): \(item)")
                #expect(item["user_id"] as? String == row[3], "\(id): \(item)")
            }
        }
        #expect(kinds.contains("granted"), "\(kinds)")
    }
}
