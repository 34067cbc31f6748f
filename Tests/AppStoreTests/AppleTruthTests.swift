// The Apple truth file (`iap-sim seed --apple-truth`, `iap-sim serve --apple-truth`): what the
// generator writes for its scenarios, and that the text reads back to the same rows.

@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

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
            AppleTruthRow(transactionID: "1000000000000004", productID: "p.gems", productType: .consumable, quantity: 2,
                          purchaseDateMs: 1_790_000_000_000, bundleID: "com.example.game", customer: "U3",
                          refund: SimRefund(cancellationDateMs: 1_790_100_000_000, reason: "0", type: "REFUND_PRORATED",
                                            percentage: 33_333),
                          storefront: SimStorefront.named("JPN")!, price: 320_000),
            AppleTruthRow(transactionID: "1000000000000005", productID: "p.coins", productType: .consumable,
                          purchaseDateMs: 1_790_000_000_000, bundleID: "com.example.game", customer: "U4",
                          refund: SimRefund(cancellationDateMs: 1_790_100_000_000, reason: "1",
                                            reversedMs: 1_790_200_000_000),
                          storefront: SimStorefront.named("DEU")!, price: 1_090),
        ]
        let text = AppleTruthFile.header + rows.map(AppleTruthFile.line).joined()
        var back = try AppleTruthFile.parse("# comment\n\n" + text)
        #expect(back.count == 4 && back[0] == rows[0] && back[2] == rows[2] && back[3] == rows[3])
        #expect(back[1].customer == "U 2")
        back[1].customer = "U\t2"
        #expect(back[1] == rows[1])
        #expect(back[2].currency == "JPY" && back[2].refund?.percentage == 33_333 && back[3].refund?.reversedMs == 1_790_200_000_000)
        // A file of an older generator (no storefront, price or revocation columns): USA, no price, full refunds.
        let old = AppleTruthFile.columns.prefix(17).joined(separator: "\t") + "\n"
            + "7\t7\tp\tconsumable\t1\t5\t5\t\t\tproduction\tb\tU\t\t\t9\t1\tR\n"
        let oldRow = try #require(try AppleTruthFile.parse(old).first)
        #expect(oldRow.storefront == .usa && oldRow.price == nil && oldRow.currency == nil)
        #expect(oldRow.refund == SimRefund(cancellationDateMs: 9, reason: "1") && oldRow.refund?.revocationType == "REFUND_FULL")
        let reordered = try AppleTruthFile.parse("bundle_id\tenvironment\tpurchase_date_ms\tproduct_id\ttransaction_id\textra\n"
            + "com.x\tsandbox\t5\tp\t42\tignored\n")
        #expect(reordered.count == 1 && reordered[0].customer == "customer-of-42" && reordered[0].orderID == AppleOrderID.derive(transactionID: "42"))
        for bad in ["transaction_id\tproduct_id\n1\tp\n", AppleTruthFile.header + "1\t1\tp\tconsumable\t1\tsoon\n",
                    AppleTruthFile.header + "1\t1\tp\tgem\t1\t5\t5\t\t\tproduction\tb\tU\n",
                    AppleTruthFile.header + "1\t1\tp\tconsumable\t1\t5\t5\t\t\tmoon\tb\tU\n"] {
            #expect(throws: AppleTruthError.self) { try AppleTruthFile.parse(bad) }
        }
    }

    @Test("hostile storefront, price and refund cells are refused with their line number and the reason")
    func hostileNewColumns() throws {
        let head = "# a comment line\ntransaction_id\tproduct_id\tpurchase_date_ms\tenvironment\tbundle_id\tstorefront\tprice\t"
            + "currency\tcancellation_date_ms\trevocation_type\trevocation_percentage\treversal_date_ms\n"
        let good = "1\tp\t5\tproduction\tb\tUSA\t990\tUSD\t9\tREFUND_PRORATED\t50000\t\n"
        #expect(try AppleTruthFile.parse(head + good).first?.refund?.percentage == 50_000)
        let cases: [(String, String)] = [
            ("1\tp\t5\tproduction\tb\tFRA\t990\tEUR\t\t\t\t\n", "unknown storefront FRA"),
            ("1\tp\t5\tproduction\tb\tusa\t990\tUSD\t\t\t\t\n", "unknown storefront usa"),
            ("1\tp\t5\tproduction\tb\tJPN\t990\tUSD\t\t\t\t\n", "currency USD is not the JPN storefront's JPY"),
            ("1\tp\t5\tproduction\tb\tUSA\t990\t\t\t\t\t\n", "price without currency"),
            ("1\tp\t5\tproduction\tb\tUSA\t\tUSD\t\t\t\t\n", "currency without price"),
            ("1\tp\t5\tproduction\tb\tUSA\t9.90\tUSD\t\t\t\t\n", "price is not an integer"),
            ("1\tp\t5\tproduction\tb\tUSA\t-1\tUSD\t\t\t\t\n", "price -1 is out of range"),
            ("1\tp\t5\tproduction\tb\t\t\t\t\tREFUND_FULL\t\t\n", "need a cancellation_date_ms"),
            ("1\tp\t5\tproduction\tb\t\t\t\t\t\t\t12\n", "need a cancellation_date_ms"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tREFUND_SOME\t\t\n", "unknown revocation_type REFUND_SOME"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tREFUND_PRORATED\t\t\n", "goes with revocation_type REFUND_PRORATED"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tREFUND_FULL\t50000\t\n", "goes with revocation_type REFUND_PRORATED"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tREFUND_PRORATED\t100001\t\n", "revocation_percentage 100001 is out of"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tREFUND_PRORATED\t5e4\t\n", "revocation_percentage is not an integer"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\t\t\t8\n", "reversal_date_ms is before cancellation_date_ms"),
            ("1\tp\t5\tproduction\tb\t\t\t\t9\tFAMILY_REVOKE\t\t10\n", "cannot be reversed"),
        ]
        for (line, problem) in cases {
            // The bad line is the fourth: a comment, the header, a good line, then it.
            do {
                _ = try AppleTruthFile.parse(head + good + line)
                Issue.record("accepted: \(line)")
            } catch let error as AppleTruthError {
                #expect(error.line == 4 && error.problem.contains(problem), "\(error) for \(line)")
            }
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
        var apiOnly = Set<String>(), listed = Set<String>()
        Self.plan().forEach { d in
            listed.formUnion(d.refunds.map(\.transactionID))
            apiOnly.formUnion(d.appleOnly.map(\.transactionID))
            for (t, r) in d.appleRefunds { refunded[t] = r }
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
        #expect(!apiOnly.isEmpty && apiOnly.isDisjoint(with: receiptTransactions))
        let all = receiptTransactions.union(apiOnly)
        #expect(Set(rows.map(\.transactionID)) == all && rows.count == all.count)
        #expect(rejected.isDisjoint(with: rows.map(\.transactionID)))
        #expect(rows.contains { $0.environment == .sandbox } && rows.contains { $0.bundleID == Catalog.otherBundle })
        #expect(rows.contains { $0.productType == .autoRenewable && $0.webOrderLineItemID != nil && $0.expiresDateMs != nil })
        #expect(rows.allSatisfy { $0.customer.hasPrefix("U") && $0.refund == refunded[$0.transactionID] })
        #expect(rows.contains { $0.refund != nil } && rows.contains { $0.refund?.reversedMs != nil })
        #expect(rows.contains { $0.refund?.type == "REFUND_PRORATED" && $0.refund?.percentage != nil })
        // Priced at the storefront; without StoreKit 2 uploads only API-only purchases leave the USA.
        #expect(rows.allSatisfy { $0.price != nil && $0.currency == $0.storefront.currency })
        #expect(rows.filter { $0.storefront != .usa }.allSatisfy { apiOnly.contains($0.transactionID) || refunded[$0.transactionID] != nil })
        var unserved: [AppleTruthRow] = []
        Self.plan().forEach { unserved += AppleTruthWriter.rows($0, refundsServed: false) }
        // Without the refund list only the refunds the Server API alone shows stay.
        #expect(unserved.count == rows.count)
        #expect(unserved.allSatisfy { $0.refund == nil || $0.refund == refunded[$0.transactionID] && !listed.contains($0.transactionID) })

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("truth-\(UUID().uuidString).tsv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let written = try AppleTruthWriter.write(plan: Self.plan(), refundsServed: true, to: path)
        let loaded = try AppleTruth.load(path: path)
        // The file also marks the consumption requests (ConsumptionTruthTests): otherwise the same rows.
        #expect(written.all == rows.count && written.unseen == 0 && loaded.rows.map { var r = $0; r.consumptionRequest = nil; return r } == rows)
        #expect(loaded.rows.contains { $0.consumptionRequest != nil })
    }
}
