// The simulated Get Notification History: REFUND and ONE_TIME_CHARGE notifications from the
// truth, signed (the notification and the transaction inside it), paged, stable, and the 400s of
// a wrong request body.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: notification history")
struct SimulatorNotificationTests {
    struct Notification {
        var type: String
        var uuid: String
        var signedDate: Int64
        var transaction: SignedTransaction
        /// `sendAttemptResult` of each attempt.
        var attempts: [String]
    }

    /// Every page of one request; each notification verified and read.
    static func all(_ w: APIWorld, _ body: String, env: String = "production") throws -> (items: [Notification], pages: Int) {
        var items: [Notification] = []
        var token: String?
        var pages = 0
        while pages < 20 {
            let r = try w.post("/inApps/v1/notifications/history" + (token.map { "?paginationToken=" + $0 } ?? ""),
                               env: env, body: body)
            #expect(r.status == 200, "\(r.status) \(r.text)")
            pages += 1
            let history = try #require(r.json?["notificationHistory"] as? [[String: Any]])
            #expect(history.count <= 20)
            for item in history {
                #expect((item["sendAttempts"] as? [[String: Any]])?.isEmpty == false)
                let jws = try #require(item["signedPayload"] as? String)
                guard case .success(let object) = w.verifier.verifySignedObject(jws) else {
                    Issue.record("the notification does not verify")
                    continue
                }
                let payload = try #require(try JSONSerialization.jsonObject(with: Data(object.payload)) as? [String: Any])
                #expect(payload["version"] as? String == "2.0")
                let data = try #require(payload["data"] as? [String: Any])
                #expect(data["bundleId"] as? String == APIWorld.bundle)
                guard let t = w.verified(data["signedTransactionInfo"]) else { continue }
                let attempts = (item["sendAttempts"] as? [[String: Any]] ?? []).map { $0["sendAttemptResult"] as? String ?? "" }
                items.append(Notification(type: payload["notificationType"] as? String ?? "", uuid: payload["notificationUUID"] as? String ?? "",
                                          signedDate: object.signedDate, transaction: t, attempts: attempts))
            }
            guard r.json?["hasMore"] as? Bool == true else { break }
            token = try #require(r.json?["paginationToken"] as? String)
        }
        return (items, pages)
    }

    /// Each notification once (the first listing of a repeated one).
    static func firstListings(_ items: [Notification]) -> [Notification] {
        var seen = Set<String>()
        return items.filter { seen.insert($0.uuid).inserted }
    }

    static func body(_ w: APIWorld, from days: Int64 = 60, extra: String = "") -> String {
        #"{"startDate":\#(w.now - days * APIWorld.day),"endDate":\#(w.now + 3_600_000)\#(extra)}"#
    }

    @Test("REFUND: one per refund, the transaction as refunded, in send order, over two pages")
    func refunds() throws {
        let w = try SimulatorAPITests.world()
        let (items, pages) = try Self.all(w, Self.body(w, extra: #","notificationType":"REFUND""#))
        // Apple repeats a retried notification (SimulatorRefundStoryTests): 23 refunds, some listed twice.
        let first = Self.firstListings(items)
        #expect(first.count == 23 && items.count < 30 && pages == (items.count + 19) / 20)
        #expect(items.allSatisfy { $0.type == "REFUND" && $0.transaction.revocationType == "REFUND_FULL" })
        #expect(first.map(\.signedDate) == first.map(\.signedDate).sorted())
        #expect(items.allSatisfy { $0.signedDate >= $0.transaction.revocationDate! })
        #expect(items.allSatisfy { UUID(uuidString: $0.uuid) != nil })
        // The same request twice: the same notifications (UUIDs stable, for deduplication).
        let again = try Self.all(w, Self.body(w, extra: #","notificationType":"REFUND""#)).items
        #expect(again.map(\.uuid) == items.map(\.uuid))
    }

    @Test("ONE_TIME_CHARGE: consumables and non-consumables, not auto-renewables, as bought (no revocation)")
    func oneTimeCharges() throws {
        let w = try SimulatorAPITests.world()
        let (items, pages) = try Self.all(w, Self.body(w, extra: #","notificationType":"ONE_TIME_CHARGE""#))
        #expect(Self.firstListings(items).count == 49 && pages == (items.count + 19) / 20)
        #expect(items.allSatisfy { $0.type == "ONE_TIME_CHARGE" && $0.transaction.revocationDate == nil })
        #expect(!items.contains { $0.transaction.type == "Auto-Renewable Subscription" })
        #expect(items.allSatisfy { $0.signedDate > $0.transaction.transaction.purchaseDate })
        // One customer's notifications, every type: U1's 27 purchases and its refund.
        let u1 = try Self.all(w, Self.body(w, extra: #","transactionId":"1000000000000110""#)).items
        #expect(Self.firstListings(u1).count == 28 && Self.firstListings(u1).filter { $0.type == "REFUND" }.count == 1)
        // Sandbox: only sandbox notifications, 30 days back at most.
        let sandbox = try Self.all(w, Self.body(w, from: 20), env: "sandbox").items
        #expect(Set(sandbox.map(\.transaction.transaction.transactionID)) == ["3000000000000001"])
        // A window that ends before anything was sent.
        #expect(try Self.all(w, Self.body(w, from: 60).replacingOccurrences(of: "\(w.now + 3_600_000)", with: "\(w.now - 59 * APIWorld.day)")).items.isEmpty)
    }

    @Test("a wrong request body or pagination token is a 400 with Apple's code")
    func badRequests() throws {
        let w = try SimulatorAPITests.world()
        let path = "/inApps/v1/notifications/history"
        let cases: [(String, String, Int)] = [
            ("production", #"{"startDate":\#(w.now),"endDate":\#(w.now - 1000)}"#, 4_000_013),
            ("production", Self.body(w, from: 181), 4_000_012),
            ("sandbox", Self.body(w, from: 31), 4_000_012),
            ("production", Self.body(w, extra: #","notificationType":"REFUND","transactionId":"1000000000000110""#), 4_000_019),
            ("production", Self.body(w, extra: #","notificationType":"REFUNDS""#), 4_000_018),
            ("production", Self.body(w, extra: #","notificationSubtype":"VOLUNTARY""#), 4_000_018),
            ("production", #"{"endDate":\#(w.now)}"#, 4_000_015),
            ("production", #"{"startDate":\#(w.now - 1000),"endDate":"soon"}"#, 4_000_016),
            ("production", #"{"startDate":1.5e12,"endDate":\#(w.now)}"#, 4_000_015),
            ("production", "not json", 4_000_000),
            ("production", #"{"startDate":1,"startDate":2,"endDate":3}"#, 4_000_000),
        ]
        for (env, body, code) in cases {
            let r = try w.post(path, env: env, body: body)
            #expect(r.status == 400 && r.errorCode == code, "\(env) \(body): \(r.status) \(r.text)")
        }
        // A token only continues the request that gave it.
        let first = try w.post(path, body: Self.body(w))
        let token = try #require(first.json?["paginationToken"] as? String)
        #expect(try w.post(path + "?paginationToken=" + token, body: Self.body(w, from: 59)).errorCode == 4_000_014)
        #expect(try w.post(path + "?paginationToken=garbage", body: Self.body(w)).errorCode == 4_000_014)
        #expect(try w.call(path).status == 405)
    }
}
