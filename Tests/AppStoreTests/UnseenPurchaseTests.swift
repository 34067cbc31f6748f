// Purchases the shop never saw (`iap-sim seed --unseen-share`): the truth's
// `notifications` column reads back, and the notification history lists nothing of them (the
// sales report is the only place they show: Tests/IntegrationTests/SalesReportSimulatorTests).

import AppStore
@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

@Suite("generator: purchases the shop never saw")
struct UnseenPurchaseTests {
    @Test("notifications=none reads back; the notification history lists the seen purchase and not the unseen one")
    func noNotification() throws {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let seen = APIWorld.row("7100000000000001", customer: "U1", daysAgo: 3, now: now)
        var unseen = APIWorld.row("7100000000000002", customer: "S000000001", daysAgo: 2, now: now)
        unseen.notified = false
        let text = AppleTruthFile.header + AppleTruthFile.line(seen) + AppleTruthFile.line(unseen)
        #expect(try AppleTruthFile.parse(text) == [seen, unseen])
        #expect(AppleTruthFile.line(unseen).hasSuffix("\tnone\n") && !AppleTruthFile.line(seen).contains("none"))
        #expect(throws: AppleTruthError.self) {
            try AppleTruthFile.parse(AppleTruthFile.header.replacingOccurrences(of: "\n", with: "") + "\n"
                + AppleTruthFile.line(seen).replacingOccurrences(of: "\n", with: "") + "yes\n")
        }
        let w = try APIWorld(rows: [seen, unseen])
        let listed = try SimulatorManyAppsTests.notifications(w, bid: APIWorld.bundle).map(\.1)
        #expect(listed.contains(seen.transactionID))
        #expect(!listed.contains(unseen.transactionID))
    }

    @Test("the unseen purchases: share × Apple's production purchases, ids and customers of their own, the same for the same seed")
    func drawn() {
        var settings = GeneratorSettings(users: 10, seed: 3, asOf: 1_795_000_000_000, catalog: Catalog(bundle: "com.example.game"),
                                         refundsServed: true, badRows: false)
        settings.otherApps = [Catalog(bundle: "com.example.puzzle")]
        #expect(UnseenPurchases.count(share: 0, sold: 5000) == 0)
        #expect(UnseenPurchases.count(share: 0.01, sold: 1949) == 19)
        let rows = UnseenPurchases.rows(share: 0.02, sold: 1000, settings: settings)
        #expect(rows.count == 20 && rows.allSatisfy { !$0.notified && $0.environment == .production })
        #expect(Set(rows.map(\.transactionID)).count == 20 && rows.allSatisfy { $0.transactionID.hasPrefix("1000002") })
        #expect(rows.allSatisfy { $0.customer.hasPrefix("S") && $0.price != nil && $0.purchaseDateMs < settings.asOf })
        #expect(Set(rows.map(\.bundleID)).count == 2, "both apps")
        #expect(rows == UnseenPurchases.rows(share: 0.02, sold: 1000, settings: settings))
    }
}
