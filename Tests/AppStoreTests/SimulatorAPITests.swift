// The simulated App Store Server API's endpoints over real HTTP: each one's answer, its paging,
// and every signed object in it verified against the test PKI's root, as the job verifies.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: endpoints")
struct SimulatorAPITests {
    static let day = APIWorld.day

    /// U1: 26 consumables 40 to 15 days ago (one refunded yesterday) and a non-consumable;
    /// U2: 22 consumables, each refunded, a day apart; a sandbox purchase; another app's purchase;
    /// an auto-renewable and its renewal.
    static func rows(now: Int64) -> [AppleTruthRow] {
        var rows: [AppleTruthRow] = []
        for i in 0..<26 {
            rows.append(APIWorld.row("10000000000001\(10 + i)", customer: "U1", daysAgo: 40 - Int64(i), now: now,
                                     refund: i == 5 ? SimRefund(cancellationDateMs: now - day, reason: "1") : nil))
        }
        rows.append(APIWorld.row("1000000000000199", customer: "U1", daysAgo: 10, now: now, type: .nonConsumable))
        for i in 0..<22 {
            rows.append(APIWorld.row("20000000000000\(10 + i)", customer: "U2", daysAgo: 45, now: now,
                                     refund: SimRefund(cancellationDateMs: now - (30 - Int64(i)) * day, reason: "0")))
        }
        rows.append(APIWorld.row("3000000000000001", customer: "U3", daysAgo: 5, now: now, env: .sandbox))
        rows.append(APIWorld.row("4000000000000001", customer: "U4", daysAgo: 5, now: now, bundle: "com.other.app"))
        rows.append(AppleTruthRow(transactionID: "5000000000000001", productID: "com.example.game.vip_month",
                                  productType: .autoRenewable, purchaseDateMs: now - 40 * day, expiresDateMs: now - 10 * day,
                                  webOrderLineItemID: "5100000000000001", bundleID: APIWorld.bundle, customer: "U5"))
        rows.append(AppleTruthRow(transactionID: "5000000000000002", originalTransactionID: "5000000000000001",
                                  productID: "com.example.game.vip_month", productType: .autoRenewable,
                                  purchaseDateMs: now - 10 * day, originalPurchaseDateMs: now - 40 * day,
                                  expiresDateMs: now + 20 * day, webOrderLineItemID: "5100000000000002",
                                  bundleID: APIWorld.bundle, customer: "U5"))
        return rows
    }

    static func world(rates: [SimAPIEndpoint: Int] = [:], faults: FaultPlan = FaultPlan()) throws -> APIWorld {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try APIWorld(rows: rows(now: now), rates: rates, faults: faults)
    }

    @Test("Get Transaction Info: a signed transaction that verifies, refunds shown as REFUND_FULL, original ids too")
    func transactionInfo() throws {
        let w = try Self.world()
        let r = try w.call("/inApps/v1/transactions/1000000000000110")
        #expect(r.status == 200)
        let t = try #require(w.verified(r.json?["signedTransactionInfo"]))
        #expect(t.transaction.transactionID == "1000000000000110" && t.transaction.quantity == 1)
        #expect(t.transaction.productID == "com.example.game.coins100" && t.environmentName == "Production")
        #expect(t.revocationDate == nil && t.type == "Consumable")
        #expect(abs(t.signedDate - w.now) < 60_000, "signed at the time of the answer")

        let refunded = try #require(w.verified(try w.call("/inApps/v1/transactions/1000000000000115").json?["signedTransactionInfo"]))
        #expect(refunded.revocationType == "REFUND_FULL" && refunded.revocationReason == 1)
        #expect(refunded.revocationDate != nil && refunded.transaction.cancellationDate == refunded.revocationDate)

        let renewal = try #require(w.verified(try w.call("/inApps/v1/transactions/5000000000000002").json?["signedTransactionInfo"]))
        #expect(renewal.transaction.originalTransactionID == "5000000000000001" && renewal.transactionReason == "RENEWAL")
        let sandbox = try #require(w.verified(try w.call("/inApps/v1/transactions/3000000000000001", env: "sandbox")
            .json?["signedTransactionInfo"]))
        #expect(sandbox.environmentName == "Sandbox")
    }

    @Test("4040010 for an unknown id, the wrong environment and another app's transaction; 4000006 for a bad id")
    func notFound() throws {
        let w = try Self.world()
        for (path, env) in [("/inApps/v1/transactions/1999999999999999", "production"),
                            ("/inApps/v1/transactions/3000000000000001", "production"),
                            ("/inApps/v1/transactions/1000000000000110", "sandbox"),
                            ("/inApps/v1/transactions/4000000000000001", "production"),
                            ("/inApps/v2/history/3000000000000001", "production"),
                            ("/inApps/v2/refund/lookup/1999999999999999", "production")] {
            let r = try w.call(path, env: env)
            #expect(r.status == 404 && r.errorCode == 4_040_010, "\(env)\(path): \(r.status) \(r.text)")
        }
        for bad in ["abc", "12345678901234567890123", "1%2F2"] {
            let r = try w.call("/inApps/v1/transactions/\(bad)")
            #expect(r.status == 400 && r.errorCode == 4_000_006, "\(bad): \(r.status)")
        }
        #expect(try w.call("/inApps/v9/nothing/1").status == 404)
        #expect(try w.post("/inApps/v1/transactions/1000000000000110").status == 405)
    }

    @Test("Get Transaction History v2: 20 a page ascending by modified date, revision kept for later changes")
    func history() throws {
        let w = try Self.world()
        var seen: [String] = []
        var revision: String?
        var pages = 0
        repeat {
            let query = "?sort=ASCENDING" + (revision.map { "&revision=" + $0 } ?? "")
            let r = try w.call("/inApps/v2/history/1000000000000199" + query)
            #expect(r.status == 200)
            let body = try #require(r.json)
            #expect(body["bundleId"] as? String == APIWorld.bundle && body["environment"] as? String == "Production")
            let signed = try #require(body["signedTransactions"] as? [Any])
            #expect(signed.count <= 20)
            seen += signed.compactMap { w.verified($0)?.transaction.transactionID }
            revision = try #require(body["revision"] as? String)
            pages += 1
            if body["hasMore"] as? Bool != true { break }
        } while pages < 5
        #expect(pages == 2 && seen.count == 27 && Set(seen).count == 27)
        // The refunded one changed yesterday: last.
        #expect(seen.last == "1000000000000115" && seen.first == "1000000000000110")
        // Nothing new since the kept revision, until Apple refunds one more.
        let later = try w.call("/inApps/v2/history/1000000000000110?sort=ASCENDING&revision=\(revision!)")
        #expect((later.json?["signedTransactions"] as? [Any])?.count == 0 && later.json?["hasMore"] as? Bool == false)
        w.sim.setRefunds(["1000000000000111": SimRefund(cancellationDateMs: w.now - 1000, reason: "0")])
        let changed = try w.call("/inApps/v2/history/1000000000000110?sort=ASCENDING&revision=\(revision!)")
        let again = (changed.json?["signedTransactions"] as? [Any] ?? []).compactMap { w.verified($0) }
        #expect(again.map(\.transaction.transactionID) == ["1000000000000111"] && again.first?.revocationDate == w.now - 1000)
    }

    @Test("history filters: product type, revoked, dates, DESCENDING; bad parameters are 400s")
    func historyFilters() throws {
        let w = try Self.world()
        func ids(_ query: String) throws -> [String] {
            let r = try w.call("/inApps/v2/history/1000000000000110" + query)
            #expect(r.status == 200, "\(query): \(r.text)")
            return (r.json?["signedTransactions"] as? [Any] ?? []).compactMap { w.verified($0)?.transaction.transactionID }
        }
        #expect(try ids("?productType=NON_CONSUMABLE") == ["1000000000000199"])
        #expect(try ids("?revoked=true") == ["1000000000000115"])
        #expect(try ids("?revoked=false&productType=CONSUMABLE").count == 20)
        #expect(try ids("?productType=NON_CONSUMABLE&productType=AUTO_RENEWABLE") == ["1000000000000199"])
        #expect(try ids("?startDate=\(w.now - 15 * Self.day - Self.day / 2)&endDate=\(w.now)") == ["1000000000000135", "1000000000000199"])
        #expect(try ids("?sort=DESCENDING").first == "1000000000000115")
        for (query, code) in [("?sort=SIDEWAYS", 4_000_021), ("?productType=GEMS", 4_000_022), ("?revoked=maybe", 4_000_030),
                              ("?revision=nope", 4_000_005), ("?revision=12_34&revision=12_35", 4_000_005),
                              ("?sort=DESCENDING&revision=12_34", 4_000_005), ("?startDate=x", 4_000_015),
                              ("?startDate=9&endDate=1", 4_000_013), ("?inAppOwnershipType=STOLEN", 4_000_026)] {
            let r = try w.call("/inApps/v2/history/1000000000000110" + query)
            #expect(r.status == 400 && r.errorCode == code, "\(query): \(r.status) \(r.text)")
        }
    }

    @Test("Get Refund History v2: refunded transactions ascending by revocation date, 20 a page")
    func refundHistory() throws {
        let w = try Self.world()
        let first = try w.call("/inApps/v2/refund/lookup/2000000000000010")
        let page1 = (first.json?["signedTransactions"] as? [Any] ?? []).compactMap { w.verified($0) }
        #expect(page1.count == 20 && first.json?["hasMore"] as? Bool == true)
        let revision = try #require(first.json?["revision"] as? String)
        let second = try w.call("/inApps/v2/refund/lookup/2000000000000010?revision=\(revision)")
        let page2 = (second.json?["signedTransactions"] as? [Any] ?? []).compactMap { w.verified($0) }
        #expect(page2.count == 2 && second.json?["hasMore"] as? Bool == false)
        let dates = (page1 + page2).compactMap(\.revocationDate)
        #expect(dates.count == 22 && dates == dates.sorted())
        #expect((page1 + page2).allSatisfy { $0.revocationType == "REFUND_FULL" })
        let none = try w.call("/inApps/v2/refund/lookup/5000000000000002")
        #expect((none.json?["signedTransactions"] as? [Any])?.isEmpty == true && none.json?["hasMore"] as? Bool == false)
        #expect(try w.call("/inApps/v2/refund/lookup/2000000000000010?revision=x_1").errorCode == 4_000_005)
    }

    @Test("Look Up Order ID: the order's transactions, status 1 with none for an unknown order, no sandbox")
    func orderLookup() throws {
        let w = try Self.world()
        let order = AppleOrderID.derive(transactionID: "1000000000000110")
        #expect(order.count == 10 && order.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) })
        let found = try w.call("/inApps/v1/lookup/\(order)")
        #expect(found.status == 200 && found.json?["status"] as? Int == 0)
        let signed = try #require(found.json?["signedTransactions"] as? [Any])
        #expect(signed.compactMap { w.verified($0)?.transaction.transactionID } == ["1000000000000110"])
        let unknown = try w.call("/inApps/v1/lookup/ZZZZZZZZZZ")
        #expect(unknown.status == 200 && unknown.json?["status"] as? Int == 1 && unknown.json?["signedTransactions"] == nil)
        #expect(try w.call("/inApps/v1/lookup/\(AppleOrderID.derive(transactionID: "4000000000000001"))").json?["status"] as? Int == 1)
        #expect(try w.call("/inApps/v1/lookup/\(order)", env: "sandbox").status == 404)
        #expect(try w.call("/inApps/v1/lookup/a-b").status == 400)
    }
}
