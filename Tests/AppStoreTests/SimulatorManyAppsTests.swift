// The simulated Server API serving several apps, over real HTTP: a token is for one
// of the apps served and every answer is scoped to it; another app is refused; rate limits are
// counted per app; a key per app; a refused app's key; one stray 401.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: several apps")
struct SimulatorManyAppsTests {
    static let gameA = APIWorld.bundle
    static let gameB = "com.example.puzzle"
    static let day = APIWorld.day

    /// A: customer UA with 3 consumables (one refunded); B: customer UB with 3 (one refunded) and a
    /// non-consumable bought with a known order id.
    static func rows(now: Int64) -> [AppleTruthRow] {
        var rows: [AppleTruthRow] = []
        for i in 0..<3 {
            rows.append(APIWorld.row("700000000000000\(i)", customer: "UA", daysAgo: 10 - Int64(i), now: now, bundle: gameA,
                                     refund: i == 1 ? SimRefund(cancellationDateMs: now - 2 * day, reason: "0") : nil))
            rows.append(APIWorld.row("800000000000000\(i)", customer: "UB", daysAgo: 10 - Int64(i), now: now, bundle: gameB,
                                     refund: i == 2 ? SimRefund(cancellationDateMs: now - day, reason: "1") : nil))
        }
        rows.append(AppleTruthRow(transactionID: "8000000000000009", productID: gameB + ".no_ads", productType: .nonConsumable,
                                  purchaseDateMs: now - 4 * day, bundleID: gameB, customer: "UB", orderID: "MBPUZZLE01"))
        rows.append(AppleTruthRow(transactionID: "7000000000000009", productID: gameA + ".no_ads", productType: .nonConsumable,
                                  purchaseDateMs: now - 4 * day, bundleID: gameA, customer: "UA", orderID: "MAGAME0001"))
        return rows
    }

    static func world(rates: [SimAPIEndpoint: Int] = [:], appKeys: [String: AppKey] = [:], refused: Set<String> = [],
                      stray401: Int? = nil) throws -> APIWorld {
        try APIWorld(rows: rows(now: Int64(Date().timeIntervalSince1970 * 1000)), rates: rates, otherBundles: [gameB],
                     appKeys: appKeys, refused: refused, stray401: stray401)
    }

    /// Every notification one app's token lists over the last 30 days: (type, transaction id, bundleId).
    static func notifications(_ w: APIWorld, bid: String) throws -> [(String, String, String)] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let body = #"{"startDate":\#(now - 30 * day),"endDate":\#(now)}"#
        var out: [(String, String, String)] = []
        var token: String?
        for _ in 0..<10 {
            let r = try w.call("/inApps/v1/notifications/history" + (token.map { "?paginationToken=" + $0 } ?? ""),
                               method: "POST", body: body, bid: bid)
            #expect(r.status == 200, "\(r.status) \(r.text)")
            for item in r.json?["notificationHistory"] as? [[String: Any]] ?? [] {
                guard let jws = item["signedPayload"] as? String, case .success(let object) = w.verifier.verifySignedObject(jws),
                      let payload = try JSONSerialization.jsonObject(with: Data(object.payload)) as? [String: Any],
                      let data = payload["data"] as? [String: Any],
                      let t = w.verified(data["signedTransactionInfo"], bundle: data["bundleId"] as? String ?? "") else {
                    Issue.record("a notification that does not verify")
                    continue
                }
                out.append((payload["notificationType"] as? String ?? "", t.transaction.transactionID,
                            data["bundleId"] as? String ?? ""))
            }
            guard r.json?["hasMore"] as? Bool == true else { break }
            token = r.json?["paginationToken"] as? String
        }
        return out
    }

    @Test("a token for app B reads B's transactions and notifications only; A's are 404 4040010 for it")
    func scopedToTheTokensApp() throws {
        let w = try Self.world()
        let b = Self.gameB
        // B's own transaction, signed as B's, its history with B's bundleId and B's appAppleId.
        let info = try w.call("/inApps/v1/transactions/8000000000000000", bid: b)
        #expect(info.status == 200, "\(info.status) \(info.text)")
        let t = try #require(w.verified(info.json?["signedTransactionInfo"], bundle: b))
        #expect(t.transaction.productID == b + ".coins100")
        let history = try w.call("/inApps/v2/history/8000000000000000", bid: b)
        #expect(history.status == 200 && history.json?["bundleId"] as? String == b)
        #expect((history.json?["signedTransactions"] as? [String])?.count == 4, "B's customer's four transactions")
        #expect(history.json?["appAppleId"] as? Int == 1_258_428_154, "the second app's appAppleId")
        let refunds = try w.call("/inApps/v2/refund/lookup/8000000000000000", bid: b)
        #expect(refunds.status == 200 && (refunds.json?["signedTransactions"] as? [String])?.count == 1)
        let order = try w.call("/inApps/v1/lookup/MBPUZZLE01", bid: b)
        #expect(order.json?["status"] as? Int == 0 && (order.json?["signedTransactions"] as? [String])?.count == 1)

        // A's transaction asked with B's token: Apple does not know it in B.
        for path in ["/inApps/v1/transactions/7000000000000000", "/inApps/v2/history/7000000000000000",
                     "/inApps/v2/refund/lookup/7000000000000001"] {
            let r = try w.call(path, bid: b)
            #expect(r.status == 404 && r.errorCode == 4_040_010, "\(path) with B's token: \(r.status) \(r.text)")
            #expect(try w.call(path).status == 200, "\(path) with A's token")
        }
        let consumption = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#
        let put = try w.call("/inApps/v2/transactions/consumption/7000000000000000", method: "PUT", body: consumption, bid: b)
        #expect(put.status == 404 && put.errorCode == 4_040_010, "\(put.status) \(put.text)")
        #expect(try w.call("/inApps/v2/transactions/consumption/8000000000000000", method: "PUT", body: consumption, bid: b)
            .status == 202)
        #expect(w.sim.consumptionAnswers.map(\.transactionID) == ["8000000000000000"], "A's transaction was never answered")
        // A's order with B's token: Look Up Order ID's "no such order" (status 1), as for any order Apple lacks.
        let otherOrder = try w.call("/inApps/v1/lookup/MAGAME0001", bid: b)
        #expect(otherOrder.status == 200 && otherOrder.json?["status"] as? Int == 1)
        #expect(try w.call("/inApps/v1/lookup/MAGAME0001").json?["status"] as? Int == 0)

        // Notification history: each app's own, every one naming its app.
        let listedB = try Self.notifications(w, bid: b)
        let listedA = try Self.notifications(w, bid: Self.gameA)
        #expect(!listedB.isEmpty && listedB.allSatisfy { $0.2 == b && $0.1.hasPrefix("8") }, "\(listedB)")
        #expect(!listedA.isEmpty && listedA.allSatisfy { $0.2 == Self.gameA && $0.1.hasPrefix("7") }, "\(listedA)")
        #expect(listedB.contains { $0.0 == "REFUND" && $0.1 == "8000000000000002" })
        #expect(listedA.contains { $0.0 == "REFUND" && $0.1 == "7000000000000001" })
        // A transactionId filter naming the other app's transaction finds nothing.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let filtered = try w.call("/inApps/v1/notifications/history", method: "POST",
                                  body: #"{"startDate":\#(now - 30 * Self.day),"endDate":\#(now),"transactionId":"7000000000000001"}"#,
                                  bid: b)
        #expect(filtered.status == 200 && (filtered.json?["notificationHistory"] as? [Any])?.isEmpty == true)
    }

    @Test("a token whose bid is not an app served is a 401")
    func unservedApp() throws {
        let w = try Self.world()
        let r = try w.call("/inApps/v1/transactions/8000000000000000", bid: "com.example.chess")
        #expect(r.status == 401)
        #expect(w.sim.calls.last?.outcome == "401:bid")
        // A single-app simulator refuses the second app's token as before.
        let single = try APIWorld(rows: Self.rows(now: w.now))
        #expect(try single.call("/inApps/v1/transactions/8000000000000000", bid: Self.gameB).status == 401)
        #expect(try single.call("/inApps/v1/transactions/7000000000000000").status == 200)
    }

    @Test("rate limits are counted per app: A exhausted, B still answers")
    func ratesPerApp() throws {
        let w = try Self.world(rates: [.orderLookup: 2])
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try w.call("/inApps/v1/lookup/MAGAME0001").status) }
        #expect(statuses.prefix(2) == [200, 200] && statuses.last == 429, "A: \(statuses)")
        // Within the same second: B has its own window.
        let b = try (0..<2).map { _ in try w.call("/inApps/v1/lookup/MBPUZZLE01", bid: Self.gameB).status }
        #expect(b == [200, 200], "B: \(b)")
        #expect(try w.call("/inApps/v1/lookup/MBPUZZLE01", bid: Self.gameB).status == 429, "and B's own limit holds")
    }

    @Test("--refuse-app: every token of the refused app is a 401, the other app is answered")
    func refusedApp() throws {
        let w = try Self.world(refused: [Self.gameB])
        for path in ["/inApps/v1/transactions/8000000000000000", "/inApps/v2/history/8000000000000000",
                     "/inApps/v1/lookup/MBPUZZLE01"] {
            #expect(try w.call(path, bid: Self.gameB).status == 401, "\(path)")
        }
        #expect(w.sim.calls.filter { $0.outcome == "401:refused" }.count == 3)
        #expect(try w.call("/inApps/v1/transactions/7000000000000000").status == 200)
        #expect(try w.call("/inApps/v1/transactions/8000000000000000", bid: Self.gameB).status == 401, "still refused")
    }

    @Test("--stray-401: the n-th request gets one 401 with a good token, the next one with the same token succeeds")
    func strayUnauthorized() throws {
        let w = try Self.world(stray401: 3)
        let token = "Bearer " + (try APIWorld.token(bid: Self.gameB))
        var statuses: [Int] = []
        for _ in 0..<6 {
            statuses.append(try w.call("/inApps/v1/transactions/8000000000000000", authorization: token).status)
        }
        #expect(statuses == [200, 200, 401, 200, 200, 200], "\(statuses)")
        #expect(w.sim.calls.map(\.outcome) == ["200", "200", "401:stray", "200", "200", "200"])
        // Counted over every app: the first request of the other app after it is answered too.
        #expect(try w.call("/inApps/v1/transactions/7000000000000000").status == 200)
    }

    @Test("--api-key-for: an app with a key of its own needs tokens signed by it (and its kid); the other app keeps the default key")
    func keyPerApp() throws {
        let ownPEM = APICredentials.newPrivateKeyPEM()
        let own = AppKey(keyID: "PUZZLEKEY1", publicKey: try APICredentials.publicKey(pem: ownPEM))
        let w = try Self.world(appKeys: [Self.gameB: own])
        let path = "/inApps/v1/transactions/8000000000000000"
        func status(_ token: String, _ path: String = path) throws -> Int {
            try w.call(path, authorization: "Bearer " + token).status
        }
        #expect(try status(APIWorld.token(keyPEM: ownPEM, kid: "PUZZLEKEY1", bid: Self.gameB)) == 200)
        #expect(try status(APIWorld.token(bid: Self.gameB)) == 401, "B's token made with the default key and kid")
        #expect(w.sim.calls.last?.outcome == "401:kid")
        #expect(try status(APIWorld.token(kid: "PUZZLEKEY1", bid: Self.gameB)) == 401, "B's kid, the default key")
        #expect(w.sim.calls.last?.outcome == "401:signature")
        #expect(try status(APIWorld.token(keyPEM: ownPEM, kid: "PUZZLEKEY1"), "/inApps/v1/transactions/7000000000000000") == 401,
                "A's token made with B's key")
        #expect(try status(APIWorld.token(), "/inApps/v1/transactions/7000000000000000") == 200, "A keeps the default key")

        // Same key id, another key: the signature decides.
        let sameKid = try Self.world(appKeys: [Self.gameB: AppKey(keyID: APIWorld.keyID,
                                                                  publicKey: try APICredentials.publicKey(pem: ownPEM))])
        #expect(try sameKid.call(path, authorization: "Bearer " + APIWorld.token(keyPEM: ownPEM, bid: Self.gameB)).status == 200)
        #expect(try sameKid.call(path, bid: Self.gameB).status == 401)
        #expect(sameKid.sim.calls.last?.outcome == "401:signature")
    }
}
