// `iap-sim seed --extra-findings N` (the findings benchmark): every clean consumable user makes N
// more purchases, alternately a missed order and a repeated grant, and nothing else changes.

@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

@Suite("generator: extra findings")
struct GeneratorExtraFindingsTests {
    typealias G = GeneratorAPIScenarioTests
    static let catalog = Catalog(bundle: "com.example.game")

    static func users(extra: Int, signing: Bool) -> [UserData] {
        var s = G.settings(users: 300, sweeps: false, signing: signing)
        s.extraFindings = extra
        var out: [UserData] = []
        ScenarioPlan(settings: s).forEach { out.append($0) }
        return out
    }

    /// A row as text, to compare rows that are not Equatable.
    static func text<T>(_ rows: [T]) -> [String] { rows.map { String(describing: $0) } }

    @Test("each clean consumable user adds N purchases, alternately a missed order and a repeated grant; the rest stays",
          arguments: [false, true])
    func addsOnlyTheExtras(signing: Bool) throws {
        let before = Self.users(extra: 0, signing: signing), after = Self.users(extra: 5, signing: signing)
        try #require(before.count == after.count)
        var clean = 0
        for (b, a) in zip(before, after) {
            #expect(a.scenario == b.scenario)
            guard b.scenario == .cleanConsumable else {
                #expect(Self.text(a.orders) == Self.text(b.orders) && Self.text(a.receipts) == Self.text(b.receipts)
                        && Self.text(a.grants) == Self.text(b.grants) && a.compensate == b.compensate
                        && a.duplicates == b.duplicates && a.clawback == b.clawback && a.refundRows == b.refundRows
                        && a.unattributed == b.unattributed && a.inputErrors == b.inputErrors,
                        "\(b.scenario?.rawValue ?? "bad rows") changed")
                continue
            }
            clean += 1
            // The clean purchases first, unchanged (a signed upload's storefront is drawn from its own hash).
            #expect(Array(Self.text(a.orders).prefix(b.orders.count)) == Self.text(b.orders))
            #expect(Array(Self.text(a.receipts).prefix(b.receipts.count)) == Self.text(b.receipts))
            #expect(Array(Self.text(a.grants).prefix(b.grants.count)) == Self.text(b.grants))
            #expect(b.compensate.isEmpty && b.duplicates.isEmpty && a.clawback.isEmpty && a.refundRows.isEmpty)
            // Five more purchases: three missed (exact, their open order named by the receipt), two repeated.
            let extra = a.orders.dropFirst(b.orders.count)
            #expect(extra.count == 5 && a.receipts.count == b.receipts.count + 5)
            #expect(extra.allSatisfy { Self.catalog.type(of: $0.productID) == .consumable })
            #expect(extra.filter { $0.status == "delivered" }.count == 2)
            #expect(a.compensate.count == 3)
            for row in a.compensate {
                let order = try #require(extra.first { $0.orderID == row[0] }, "no open order: \(row)")
                #expect(order.status != "delivered" && order.transactionID == nil && row[3] == "consumable"
                        && row[9] == "exact" && row[10] == "paid_not_granted" && row[4] == String(order.quantity))
                #expect(a.receipts.contains { $0.orderID == order.orderID && $0.receiptID == row[11] })
                #expect(!a.grants.contains { $0.transactionID == row[5] }, "a missed order was granted: \(row)")
            }
            #expect((2...4).contains(a.duplicates.count) && a.duplicates.allSatisfy { $0[7] == "same_transaction" })
            #expect(Set(a.duplicates.map { $0[5] }).count == 2, "two repeated transactions")
        }
        #expect(clean > 100)
    }

    @Test("at the largest N every order, receipt, grant and transaction id still belongs to one user")
    func idsStayUnique() {
        let n = SeedOptions.extraFindingsRange.upperBound
        var seen: [String: Set<String>] = ["order": [], "receipt": [], "grant": [], "transaction": []]
        var total: [String: Int] = [:]
        for d in Self.users(extra: n, signing: false) {
            let ids: [String: Set<String>] = [
                "order": Set(d.orders.map(\.orderID)), "receipt": Set(d.receipts.map(\.receiptID)),
                "grant": Set(d.grants.map(\.grantID)),
                "transaction": Set(d.receipts.flatMap { $0.sim?.txs.map(\.tid) ?? [] } + d.grants.map(\.transactionID)),
            ]
            for (kind, set) in ids {
                seen[kind]!.formUnion(set)
                total[kind, default: 0] += set.count
            }
            if d.scenario == .cleanConsumable { #expect(d.orders.count > n) }
        }
        for (kind, set) in seen { #expect(set.count == total[kind], "\(kind) ids shared between users") }
    }

    @Test("N outside 0…17 is refused before anything is written")
    func outOfRange() {
        var options = SeedOptions(asOf: G.asOf)
        options.extraFindings = SeedOptions.extraFindingsRange.upperBound + 1
        // No database there: a refusal that got as far as connecting would say so instead.
        options.conninfo = "host=/nonexistent-socket-dir dbname=none"
        let error = #expect(throws: SimulatorError.self) { try Seeder.run(options) }
        #expect(error?.message == "--extra-findings must be between 0 and 17, got 18")
    }
}
