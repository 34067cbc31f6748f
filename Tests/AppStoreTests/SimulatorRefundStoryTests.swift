// The simulated notification history tells a refund's whole story: a prorated refund
// as REFUND_PRORATED with its percentage, a refund and its REFUND_REVERSED, the storefront's price
// from the truth, and Apple's repeats: a retried notification listed twice with the same UUID.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: refund stories and repeated notifications")
struct SimulatorRefundStoryTests {
    static let day = APIWorld.day
    static let prorated = "6000000000000001", reversed = "7000000000000001"

    /// U6: two gem packs bought in Japan, half refunded; U7: a German purchase refunded 12 days
    /// ago and the refund reversed 9 days ago; U8: 60 purchases, so that some notifications repeat.
    static func world() throws -> APIWorld {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var rows = [
            AppleTruthRow(transactionID: prorated, productID: APIWorld.bundle + ".gems_pack", productType: .consumable,
                          quantity: 2, purchaseDateMs: now - 20 * day, bundleID: APIWorld.bundle, customer: "U6",
                          refund: SimRefund(cancellationDateMs: now - 10 * day, reason: "1", type: "REFUND_PRORATED",
                                            percentage: 50_000),
                          storefront: SimStorefront.named("JPN")!, price: 3_200_000),
            AppleTruthRow(transactionID: reversed, productID: APIWorld.bundle + ".coins100", productType: .consumable,
                          purchaseDateMs: now - 20 * day, bundleID: APIWorld.bundle, customer: "U7",
                          refund: SimRefund(cancellationDateMs: now - 12 * day, reason: "0", reversedMs: now - 9 * day),
                          storefront: SimStorefront.named("DEU")!, price: 1_090),
        ]
        for i in 0..<60 {
            rows.append(APIWorld.row("80000000000001\(10 + i)", customer: "U8", daysAgo: 50 - Int64(i / 2), now: now))
        }
        return try APIWorld(rows: rows)
    }

    /// The world's `now` is taken when it starts, a moment after the rows' own.
    static func near(_ ms: Int64?, _ expected: Int64, within: Int64 = 5_000) -> Bool {
        ms.map { abs($0 - expected) <= within } ?? false
    }

    static func body(_ w: APIWorld, type: String, from: Int64? = nil, to: Int64? = nil) -> String {
        #"{"startDate":\#(from ?? w.now - 60 * day),"endDate":\#(to ?? w.now + 3_600_000),"notificationType":"\#(type)"}"#
    }

    @Test("a prorated refund: REFUND_PRORATED with its percentage, Apple's price and storefront from the truth")
    func proratedRefund() throws {
        let w = try Self.world()
        let items = try SimulatorNotificationTests.all(w, Self.body(w, type: "REFUND")).items
        let n = try #require(items.first { $0.transaction.transaction.transactionID == Self.prorated })
        #expect(n.transaction.revocationType == "REFUND_PRORATED" && n.transaction.revocationPercentage == 50_000)
        #expect(n.transaction.revocationReason == 1 && Self.near(n.transaction.revocationDate, w.now - 10 * Self.day))
        #expect(n.transaction.price == 3_200_000 && n.transaction.currency == "JPY" && n.transaction.storefront == "JPN")
        #expect(n.transaction.storefrontID == "143462")
        // Transaction info shows the same revocation now.
        let info = try #require(w.verified(try w.call("/inApps/v1/transactions/\(Self.prorated)").json?["signedTransactionInfo"]))
        #expect(info.revocationType == "REFUND_PRORATED" && info.revocationPercentage == 50_000)
    }

    @Test("a reversed refund: REFUND, then REFUND_REVERSED without revocation; the API shows it unrefunded")
    func reversedRefund() throws {
        let w = try Self.world()
        let refunds = try SimulatorNotificationTests.all(w, Self.body(w, type: "REFUND")).items
            .filter { $0.transaction.transaction.transactionID == Self.reversed }
        #expect(Set(refunds.map(\.uuid)).count == 1)
        let refund = try #require(refunds.first)
        #expect(refund.transaction.revocationType == "REFUND_FULL" && Self.near(refund.transaction.revocationDate, w.now - 12 * Self.day))
        #expect(refund.transaction.price == 1_090 && refund.transaction.currency == "EUR")
        let back = try SimulatorNotificationTests.all(w, Self.body(w, type: "REFUND_REVERSED")).items
        #expect(Set(back.map(\.uuid)).count == 1 && back.allSatisfy { $0.type == "REFUND_REVERSED" })
        let reversal = try #require(back.first)
        #expect(reversal.transaction.transaction.transactionID == Self.reversed && reversal.uuid != refund.uuid)
        #expect(reversal.transaction.revocationDate == nil && reversal.transaction.revocationType == nil)
        // The reversal date the job reads is the notification's signedDate: after the refund.
        #expect(Self.near(reversal.signedDate, w.now - 9 * Self.day + 15_000, within: 20_000), "sent seconds after the reversal")
        #expect(reversal.signedDate > refund.transaction.revocationDate!)
        // Now: no revocation, and the refund history no longer lists it.
        let info = try #require(w.verified(try w.call("/inApps/v1/transactions/\(Self.reversed)").json?["signedTransactionInfo"]))
        #expect(info.revocationDate == nil)
        let history = try w.call("/inApps/v2/refund/lookup/\(Self.reversed)")
        #expect(history.status == 200 && (history.json?["signedTransactions"] as? [Any])?.isEmpty == true)
    }

    @Test("Apple repeats: a retried notification is listed twice, same UUID and payload, an hour apart")
    func repeats() throws {
        let w = try Self.world()
        let (items, pages) = try SimulatorNotificationTests.all(w, Self.body(w, type: "ONE_TIME_CHARGE"))
        var byUUID: [String: [SimulatorNotificationTests.Notification]] = [:]
        for n in items { byUUID[n.uuid, default: []].append(n) }
        #expect(byUUID.count == 62, "every purchase once")
        let repeated = byUUID.values.filter { $0.count > 1 }
        #expect(!repeated.isEmpty && repeated.count < 20, "\(repeated.count) repeated")
        #expect(items.count == 62 + repeated.count && pages == (items.count + 19) / 20)
        for pair in repeated {
            #expect(pair.count == 2 && pair[0].signedDate == pair[1].signedDate)
            #expect(pair[0].transaction.transaction.transactionID == pair[1].transaction.transaction.transactionID)
            #expect(pair.allSatisfy { $0.attempts == ["TIMED_OUT", "SUCCESS"] })
        }
        #expect(byUUID.values.filter { $0.count == 1 }.allSatisfy { $0.first!.attempts.count == 2 || $0.first!.attempts == ["SUCCESS"] })
        // Two nights whose windows meet between the send and the retry both see it: idempotence is the client's.
        let n = try #require(repeated.first?.first)
        let cut = n.signedDate + 60_000
        let night1 = try SimulatorNotificationTests.all(w, Self.body(w, type: "ONE_TIME_CHARGE", to: cut)).items
        let night2 = try SimulatorNotificationTests.all(w, Self.body(w, type: "ONE_TIME_CHARGE", from: cut)).items
        #expect(night1.filter { $0.uuid == n.uuid }.count == 1 && night2.filter { $0.uuid == n.uuid }.count == 1)
        // Failures only: never the retried ones (they were delivered in the end).
        let failures = try SimulatorNotificationTests.all(w, #"{"startDate":\#(w.now - 60 * Self.day),"endDate":\#(w.now + 3_600_000),"onlyFailures":true}"#).items
        #expect(failures.allSatisfy { $0.attempts == ["TIMED_OUT", "NO_RESPONSE"] })
    }
}
