// The Apple truth file (`iap-sim seed --apple-truth`, `iap-sim serve --apple-truth`): what the
// generator writes for its scenarios, and that the text reads back to the same rows.

import Foundation
import Reconciliation
import Testing

@testable import AppStoreSimulator

@Suite("Apple truth")
struct AppleTruthTests {
    static let asOf: Int64 = 1_795_000_000_000

    static func plan(users: Int = 400, refunds: Bool = true) -> ScenarioPlan {
        ScenarioPlan(settings: GeneratorSettings(users: users, seed: 7, asOf: asOf, catalog: Catalog(bundle: "com.example.game"),
                                                 refundsServed: refunds, badRows: true))
    }

    @Test("a line reads back to the same row; the header may come in any order; bad lines are named")
    func roundTrip() throws {
        let rows = [
            AppleTruthRow(transactionID: "1000000000000001", productID: "p.coins", productType: .consumable, quantity: 3,
                          purchaseDateMs: 1_790_000_000_123, bundleID: "com.example.game", customer: "U000000001",
                          appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138",
                          refund: SimRefund(cancellationDateMs: 1_790_000_100_000, reason: "1"), receiptID: "R1"),
            AppleTruthRow(transactionID: "1000000000000003", originalTransactionID: "1000000000000002", productID: "p.vip",
                          productType: .autoRenewable, purchaseDateMs: 1_790_000_000_000, originalPurchaseDateMs: 1_780_000_000_000,
                          expiresDateMs: 1_792_000_000_000, webOrderLineItemID: "1000001000000003", environment: .sandbox,
                          bundleID: "com.example.game", customer: "U\t2"),
        ]
        let text = AppleTruthFile.header + rows.map(AppleTruthFile.line).joined()
        var back = try AppleTruthFile.parse("# comment\n\n" + text)
        #expect(back.count == 2 && back[0] == rows[0])
        #expect(back[1].customer == "U 2")
        back[1].customer = "U\t2"
        #expect(back[1] == rows[1])
        let reordered = try AppleTruthFile.parse("bundle_id\tenvironment\tpurchase_date_ms\tproduct_id\ttransaction_id\textra\n"
            + "com.x\tsandbox\t5\tp\t42\tignored\n")
        #expect(reordered.count == 1 && reordered[0].customer == "customer-of-42" && reordered[0].orderID == AppleOrderID.derive(transactionID: "42"))
        for bad in ["transaction_id\tproduct_id\n1\tp\n", AppleTruthFile.header + "1\t1\tp\tconsumable\t1\tsoon\n",
                    AppleTruthFile.header + "1\t1\tp\tgem\t1\t5\t5\t\t\tproduction\tb\tU\n",
                    AppleTruthFile.header + "1\t1\tp\tconsumable\t1\t5\t5\t\t\tmoon\tb\tU\n"] {
            #expect(throws: AppleTruthError.self) { try AppleTruthFile.parse(bad) }
        }
    }

    @Test("Apple order ids: ten upper-case letters or digits, the same for the same transaction, rarely shared")
    func orderIDs() {
        let ids = (0..<10_000).map { AppleOrderID.derive(transactionID: "10000000" + String($0)) }
        #expect(ids.allSatisfy { $0.utf8.count == 10 && AppleOrderID.isWellFormed(Substring($0)) && $0.uppercased() == $0 })
        #expect(Set(ids).count == ids.count)
        #expect(AppleOrderID.derive(transactionID: "1000000000000001") == AppleOrderID.derive(transactionID: "1000000000000001"))
    }

    @Test("the generator's truth: every transaction of every receipt Apple answers with data, once; refunds only when served")
    func generated() throws {
        var receiptTransactions = Set<String>()
        var rejected = Set<String>()
        var refunded: [String: SimRefund] = [:]
        Self.plan().forEach { d in
            for r in d.receipts {
                guard let sim = r.sim else { continue }
                for t in sim.txs {
                    if sim.st == nil || sim.st == 21006 { receiptTransactions.insert(t.tid) } else { rejected.insert(t.tid) }
                }
            }
            for r in d.refunds { refunded[r.transactionID] = r.refund }
        }
        var rows: [AppleTruthRow] = []
        Self.plan().forEach { rows += AppleTruthWriter.rows($0, refundsServed: true) }
        #expect(Set(rows.map(\.transactionID)) == receiptTransactions && rows.count == receiptTransactions.count)
        #expect(rejected.isDisjoint(with: rows.map(\.transactionID)))
        #expect(rows.contains { $0.environment == .sandbox } && rows.contains { $0.bundleID == Catalog.otherBundle })
        #expect(rows.contains { $0.productType == .autoRenewable && $0.webOrderLineItemID != nil && $0.expiresDateMs != nil })
        #expect(rows.allSatisfy { $0.customer.hasPrefix("U") && $0.refund == refunded[$0.transactionID] })
        #expect(rows.contains { $0.refund != nil })
        var unserved: [AppleTruthRow] = []
        Self.plan().forEach { unserved += AppleTruthWriter.rows($0, refundsServed: false) }
        #expect(unserved.allSatisfy { $0.refund == nil } && unserved.count == rows.count)

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("truth-\(UUID().uuidString).tsv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let written = try AppleTruthWriter.write(plan: Self.plan(), refundsServed: true, to: path)
        let loaded = try AppleTruth.load(path: path)
        #expect(written == rows.count && loaded.rows == rows)
    }
}
