import AppStoreSimulator
import Foundation
import Postgres
import Testing

/// `lookup` from what customer service holds: our own order id (`--our-order`) and our user id
/// (`--user`). Both decide through the night's code, so on a generated night they agree with its
/// reports: every compensate.csv row with an order, asked by that order; every compensate.csv and
/// clawback.csv row, asked by its user; a sample of granted purchases, asked by their order. With
/// the Server API (Apple asked now) and without it (our data and what the nights learned).
@Suite("lookup --our-order and --user agree with the night", .serialized, .enabled(if: Harness.hasDatabase))
struct LookupOursTests {
    /// The answer of `lookup ARGS --json`, parsed; the exit status beside it.
    static func ask(_ w: ServerAPINightTests.World, _ arguments: [String], environment: [String: String]) throws
        -> (status: Int32, answer: [String: Any], stderr: String) {
        let r = try w.run(["lookup"] + arguments + ["--json", "--as-of", NightTests.asOf], environment: environment)
        let answer = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]) ?? [:]
        return (r.status, answer, r.stderr)
    }

    static func items(_ answer: [String: Any]) -> [[String: Any]] { answer["transactions"] as? [[String: Any]] ?? [] }

    /// The environment without the Server API's key: lookup answers from our data.
    static func withoutAPI(_ env: [String: String]) -> [String: String] {
        env.filter { !["IAP_ISSUER_ID", "IAP_KEY_ID", "IAP_PRIVATE_KEY_FILE"].contains($0.key) }
    }

    @Test("every compensate row by its order, every compensate and clawback row by its user, granted purchases by their order; with and without the Server API")
    func agreesWithTheNight() throws {
        let w = try ServerAPINightTests.world("lookup_ours", share: "0.25")
        defer { w.stop() }
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        let compensate = LookupAgreesTests.report(day, "compensate.csv")
        let clawback = LookupAgreesTests.report(day, "clawback.csv")
        let duplicates = LookupAgreesTests.report(day, "duplicate_grants.csv")
        let unattributed = LookupAgreesTests.report(day, "unattributed.csv")
        let withOrder = compensate.filter { !$0["order_id"]!.isEmpty }
        // The property covers the cases of the issue, or it proves little.
        #expect(withOrder.contains { $0["match"] == "inferred" } && withOrder.contains { $0["match"] == "exact" },
                "no inferred and exact orders to agree on")
        #expect(compensate.contains { $0["source"] == "transaction_history" }, "no purchase found only in transaction history")
        let learned = Set(try column(w.t, "SELECT transaction_id FROM recon.apple_transactions"))
        let unseen = clawback.filter { !learned.contains($0["transaction_id"]!) }
        #expect(!unseen.isEmpty, "no clawback of a grant whose transaction Apple never showed")

        // Granted purchases with no finding, by the order of their one active grant.
        let listed = Set((compensate + clawback + duplicates + unattributed).map { $0["transaction_id"]! })
        let granted = try w.t.db.query("""
            SELECT g.order_id, g.transaction_id, g.grant_id FROM iap_grants g
            JOIN recon.apple_transactions t ON t.transaction_id = g.transaction_id AND t.environment = 'production'
            WHERE g.revoked_at IS NULL AND g.order_id IS NOT NULL AND g.quantity >= t.quantity
              AND t.cancellation_date_ms IS NULL AND t.revocation_date_ms IS NULL
              AND (SELECT count(*) FROM iap_grants x WHERE x.order_id = g.order_id) = 1
            ORDER BY md5(g.transaction_id)
            """).rows.filter { !listed.contains($0[1]!) }.prefix(15)
        #expect(granted.count == 15)

        var noAPI = Self.withoutAPI(w.env)
        noAPI["IAP_API_URL_PRODUCTION"] = "http://127.0.0.1:9/unused"
        for (label, env) in [("apple", w.env), ("ours", noAPI)] {
            let source = label == "apple" ? "apple" : "our data and what the nights learned"
            let callsBefore = w.apiCalls().count

            for row in withOrder {
                let (tid, order) = (row["transaction_id"]!, row["order_id"]!)
                let r = try Self.ask(w, ["--our-order", order], environment: env)
                #expect(r.status == 0 && r.answer["asked"] as? String == "our_order" && r.answer["source"] as? String == source,
                        "\(label) \(order): \(r.status) \(r.stderr)")
                // Apple was asked about the purchase, even one only the inferred match ties to the order.
                #expect(r.answer["apple"] as? String == (label == "apple" ? "found" : "not_asked"), "\(label) \(order): \(r.answer)")
                let item = Self.items(r.answer).first { $0["transaction_id"] as? String == tid }
                #expect(item?["verdict"] as? String == "compensate", "\(label) \(order) (\(row["match"]!)): \(tid) \(item ?? [:])")
                #expect(item?["user_id"] as? String == row["user_id"] && item?["order_id"] as? String == order
                        && item?["owed"] as? Int == Int(row["quantity"]!), "\(label) \(order): \(item ?? [:]) ≠ \(row)")
                #expect(item?["report"] as? String == "compensate.csv" && item?["first_seen"] as? String == row["first_seen"],
                        "\(label) \(order): \(item ?? [:])")
                let orders = r.answer["orders"] as? [[String: Any]] ?? []
                if row["match"] == "exact" || !orders.isEmpty {
                    let paidBy = orders.first?["paid_by"] as? [String] ?? []
                    #expect(paidBy.contains(tid), "\(label) \(order): \(orders)")
                }
            }

            for (order, tid, grant) in granted.map({ ($0[0]!, $0[1]!, $0[2]!) }) {
                let r = try Self.ask(w, ["--our-order", order], environment: env)
                let item = Self.items(r.answer).first { $0["transaction_id"] as? String == tid }
                #expect(r.status == 0 && item?["verdict"] as? String == "granted"
                        && (item?["grant_ids"] as? [String] ?? []).contains(grant) && item?["report"] == nil,
                        "\(label) \(order): \(tid) \(item ?? [:]) \(r.stderr)")
            }

            // By user: every row of the user's, over all the days the generator wrote (clawbacks are not windowed).
            let users = Set((compensate + clawback).map { $0["user_id"]! })
            #expect(users.count >= 10)
            for user in users.sorted() {
                let r = try Self.ask(w, ["--user", user, "--days", "3660"], environment: env)
                #expect(r.status == 0 && r.answer["asked"] as? String == "user" && r.answer["known"] as? Bool == true
                        && r.answer["source"] as? String == source, "\(label) \(user): \(r.status) \(r.stderr)")
                let items = Self.items(r.answer)
                for row in compensate where row["user_id"] == user {
                    let tid = row["transaction_id"]!
                    let item = items.first { $0["transaction_id"] as? String == tid }
                    #expect(item?["verdict"] as? String == "compensate" && item?["user_id"] as? String == user
                            && (item?["order_id"] as? String ?? "") == row["order_id"] && item?["owed"] as? Int == Int(row["quantity"]!)
                            && item?["report"] as? String == "compensate.csv",
                            "\(label) --user \(user): \(tid) (\(row["source"]!), \(row["match"]!)) \(item ?? [:])")
                }
                for (tid, rows) in Dictionary(grouping: clawback.filter { $0["user_id"] == user }, by: { $0["transaction_id"]! }) {
                    let item = items.first { $0["transaction_id"] as? String == tid }
                    let all = Set(clawback.filter { $0["transaction_id"] == tid }.map { $0["grant_id"]! })
                    #expect(item?["verdict"] as? String == "claw_back" && Set(item?["grant_ids"] as? [String] ?? []) == all
                            && item?["report"] as? String == "clawback.csv",
                            "\(label) --user \(user): \(tid) (\(rows.map { $0["reason"]! })) \(item ?? [:])")
                }
                // Newest first.
                let dates = items.compactMap { $0["purchase_date"] as? String }
                #expect(dates == dates.sorted(by: >), "\(label) --user \(user): \(dates)")
            }

            // The default days are the night's window: a compensation is inside it.
            let row = try #require(compensate.first)
            let r = try Self.ask(w, ["--user", row["user_id"]!], environment: env)
            #expect(r.answer["days"] as? Int == 30 && Self.items(r.answer).contains { $0["transaction_id"] as? String == row["transaction_id"] })
            let asked = w.apiCalls().dropFirst(callsBefore).filter { $0.endpoint == "transaction_info" }
            if label == "apple" {
                #expect(asked.contains { $0.id == row["transaction_id"]! }, "lookup --user did not ask Apple")
            } else {
                #expect(asked.isEmpty, "lookup asked Apple without credentials: \(asked.prefix(3))")
            }
        }

        // Without credentials: --transaction too, and the words say where the answer comes from.
        let row = try #require(withOrder.first)
        let words = try w.run(["lookup", "--our-order", row["order_id"]!, "--as-of", NightTests.asOf], environment: Self.withoutAPI(w.env))
        #expect(words.status == 0 && words.stdout.hasPrefix("Apple was not asked") && words.stdout.contains("compensate")
                && words.stdout.contains("compensate.csv"), "\(words.stdout)\(words.stderr)")
        let byTransaction = try Self.ask(w, ["--transaction", row["transaction_id"]!], environment: Self.withoutAPI(w.env))
        #expect(byTransaction.status == 0 && byTransaction.answer["apple"] as? String == "not_asked"
                && Self.items(byTransaction.answer).first?["verdict"] as? String == "compensate", "\(byTransaction)")
        // Apple's invoice order ID needs Apple: still 78.
        let invoice = try w.run(["lookup", "MK5TTTVWJH"], environment: Self.withoutAPI(w.env))
        #expect(invoice.status == 78 && invoice.stderr.contains("IAP_PRIVATE_KEY_FILE"), "\(invoice.stderr)")

        // An order with no payment known, and an order nobody knows.
        let open = try #require(try w.t.scalar("""
            SELECT o.order_id FROM iap_orders o
            WHERE o.transaction_id IS NULL AND o.status <> 'delivered'
              AND NOT EXISTS (SELECT 1 FROM iap_receipts r WHERE r.order_id = o.order_id)
              AND NOT EXISTS (SELECT 1 FROM iap_grants g WHERE g.order_id = o.order_id)
              AND NOT EXISTS (SELECT 1 FROM recon.apple_transactions t WHERE lower(t.app_account_token) = lower(o.order_id))
              AND o.order_id <> ALL(\(compensate.map { $0["order_id"]! })::text[])
            ORDER BY o.order_id LIMIT 1
            """))
        for env in [w.env, Self.withoutAPI(w.env)] {
            let unpaid = try w.run(["lookup", "--our-order", open, "--as-of", NightTests.asOf], environment: env)
            #expect(unpaid.status == 0 && unpaid.stdout.contains("our order \(open)") && unpaid.stdout.contains("no verified payment known")
                    && unpaid.stdout.contains("MK5TTTVWJH"), "\(unpaid.stdout)\(unpaid.stderr)")
            let nobody = try Self.ask(w, ["--our-order", "no-such-order-4711"], environment: env)
            #expect(nobody.status == 0 && nobody.answer["known"] as? Bool == false && Self.items(nobody.answer).isEmpty, "\(nobody)")
            let stranger = try Self.ask(w, ["--user", "no-such-user-4711"], environment: env)
            #expect(stranger.status == 0 && stranger.answer["known"] as? Bool == false && Self.items(stranger.answer).isEmpty, "\(stranger)")
        }
    }

    @Test("hostile ids and options: exit 64 with one clear line, before anything is read")
    func hostileIDs() throws {
        // No database or simulator is needed: the ids are refused first (a database that does not exist proves it).
        let env = ["PGHOST": "/nonexistent", "PGDATABASE": "none", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? ""]
        let cases: [([String], String)] = [
            (["--our-order", ""], "empty"), (["--user", ""], "empty"),
            (["--our-order", String(repeating: "a", count: 201)], "201 bytes"),
            (["--user", "u\u{7}1"], "U+0007"), (["--our-order", "o\n1"], "U+000A"), (["--user", "u\u{9B}1"], "U+009B"),
            (["--user", "u\u{202E}1"], "U+202E"), (["--user", "u\u{FFFD}"], "not valid UTF-8"),
            (["--user", "u1", "--days", "0"], "--days 0"), (["--user", "u1", "--days", "99999"], "--days 99999"),
            (["--our-order", "o1", "--days", "3"], "--days goes with --user"),
            (["--our-order", "o1", "--user", "u1"], "give one of"), (["MK5TTTVWJH", "--user", "u1"], "give one of"),
        ]
        for (arguments, says) in cases {
            let r = try runTool("iap-reconcile", ["lookup"] + arguments, environment: env)
            #expect(r.status == 64 && r.stderr.contains(says) && r.stdout.isEmpty, "\(arguments): \(r.status) \(r.stderr)")
        }
        // An id of ours at the longest is taken (and then fails on the database, not as usage).
        let longest = try runTool("iap-reconcile", ["lookup", "--our-order", String(repeating: "a", count: 200)], environment: env)
        #expect(longest.status != 64, "\(longest.stderr)")
        // Bytes that are not UTF-8 on the command line.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", #"exec "$0" lookup --user "$(printf 'u\377\376')""#, Harness.binDir.appendingPathComponent("iap-reconcile").path]
        p.environment = env
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(p.terminationStatus == 64 && text.contains("not valid UTF-8"), "\(p.terminationStatus) \(text)")
    }
}
