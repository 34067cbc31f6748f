// The generator's Server API side: the scenarios only the Server API shows expect rows exactly when
// the job sweeps it (`--apple-truth`), amounts come out in the currency the job can know, and
// `--api-bench` adds what the Server API benchmark sweeps.

@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

@Suite("generator: Server API scenarios, money, api bench")
struct GeneratorAPIScenarioTests {
    static let asOf: Int64 = 1_795_000_000_000

    static func settings(users: Int = 200, sweeps: Bool, signing: Bool = false, bench: Int = 0) -> GeneratorSettings {
        var s = GeneratorSettings(users: users, seed: 11, asOf: asOf, catalog: Catalog(bundle: "com.example.game"),
                                  refundsServed: true, badRows: true)
        s.apiSweeps = sweeps
        s.signing = signing
        s.storeKit2Share = signing ? 1 : 0
        s.apiBench = bench
        return s
    }

    static func collect(_ settings: GeneratorSettings) -> [Scenario: [UserData]] {
        var out: [Scenario: [UserData]] = [:]
        ScenarioPlan(settings: settings).forEach { d in
            if let s = d.scenario { out[s, default: []].append(d) }
        }
        return out
    }

    static let apiOnly: [Scenario] = [.notificationRefund, .notificationRefundProrated, .refundReversed, .historyOnlyPurchase,
                                      .notificationPurchaseToken, .notificationPurchaseUnattributed]

    @Test("each Server API scenario is in a small database; its rows are expected only when the job sweeps the API")
    func onlyWithSweeps() throws {
        let with = Self.collect(Self.settings(sweeps: true)), without = Self.collect(Self.settings(sweeps: false))
        for s in Self.apiOnly {
            let a = try #require(with[s]?.first, "no \(s.rawValue) user"), b = try #require(without[s]?.first)
            // The same data either way: only the expectations differ.
            #expect(a.orders.map(\.orderID) == b.orders.map(\.orderID) && a.appleOnly == b.appleOnly && a.appleRefunds == b.appleRefunds)
            #expect(b.compensate.isEmpty && b.clawback.isEmpty && b.refundRows.isEmpty && b.unattributed.isEmpty, "\(s)")
            #expect(!(a.compensate + a.clawback + a.refundRows + a.unattributed).isEmpty, "\(s) expects nothing")
            #expect(a.refunds.isEmpty, "\(s): verifyReceipt's refund list must not show it")
        }
        let prorated = try #require(with[.notificationRefundProrated]?.first?.refundRows.first)
        #expect(prorated[7] == "REFUND_PRORATED" && ["50000", "25000", "33333"].contains(prorated[8]) && prorated[12] == "still_granted")
        let reversed = try #require(with[.refundReversed]?.first)
        #expect(reversed.clawback.isEmpty && reversed.refundRows.first?[12] == "reversed")
        let history = try #require(with[.historyOnlyPurchase]?.first?.compensate.first)
        #expect(history[9] == "inferred" && history[11].isEmpty && history[15] == "transaction_history")
        let token = try #require(with[.notificationPurchaseToken]?.first)
        #expect(token.compensate.first?[9] == "exact" && token.compensate.first?[15] == "notification")
        #expect(token.appleOnly.first?.appAccountToken == token.orders.first?.orderID)
        #expect(token.orders.first.map { AppleTruthWriter.isUUID($0.orderID) && $0.orderID == $0.orderID.lowercased() } == true)
        let lone = try #require(with[.notificationPurchaseUnattributed]?.first)
        #expect(lone.compensate.isEmpty && lone.unattributed.count == 1 && lone.appleOnly.first?.appAccountToken == nil)
        // The older refund scenarios: refunds.csv rows too, typed only when the REFUND notification is swept.
        for s in [Scenario.refunded, .refundedDuplicate] {
            #expect(with[s]?.first?.refundRows.first?[7] == "REFUND_FULL")
            #expect(without[s]?.first?.refundRows.first?[7] == "")
        }
    }

    @Test("amounts: the USA price is the list price; a currency other than USD only where the job reads Apple's price")
    func money() throws {
        #expect(MoneyText.text(4_990, currency: "USD") == "4.99" && MoneyText.text(160_000, currency: "JPY") == "160")
        #expect(MoneyText.text(0, currency: "EUR") == "0.00" && MoneyText.text(4_995, currency: "USD") == "5.00")
        #expect(MoneyText.prorated(160_000, 33_333, 100_000, currency: "JPY") == 53_000)
        #expect(MoneyText.prorated(1_090, 33_333, 100_000, currency: "EUR") == 360, "0.36333 → 0.36")
        #expect(MoneyText.scaled(990, 50_000, 100_000) == 495 && MoneyText.scaled(990, 33_333, 100_000) == 330)
        #expect(MoneyText.scaled(5, 50_000, 100_000) == 3, "half away from zero")
        let cat = Catalog(bundle: "com.example.game")
        for p in cat.products {
            #expect(p.listPrice != nil && p.listPrice == PriceList.unit(p.productID, at: .usa) && p.currency == "USD")
        }
        var currencies = Set<String>()
        try ScenarioPlan(settings: Self.settings(users: 600, sweeps: true, signing: true)).forEach { d in
            let signed = Set(d.receipts.filter { $0.signed == .genuine }.flatMap { $0.sim?.txs.map(\.tid) ?? [] })
            let only = Set(d.appleOnly.map(\.transactionID))
            let apple = only.union(d.appleRefunds.keys)
            for row in d.compensate {
                currencies.insert(row[14])
                if row[14] != "USD" { #expect(signed.contains(row[5]) || apple.contains(row[5]), "\(row)") }
                if only.contains(row[5]) {
                    #expect(row[11].isEmpty && ["transaction_history", "notification"].contains(row[15]), "\(row)")
                } else {
                    #expect(row[15] == (signed.contains(row[5]) ? "signed_transaction" : "receipt"), "\(row)")
                }
            }
            for row in d.clawback {
                if row[14] != "USD" { #expect(signed.contains(row[6]) || apple.contains(row[6]), "\(row)") }
                if ["invalid_receipt", "wrong_bundle", "transaction_not_found"].contains(row[9]) {
                    #expect(row[14] == "USD" && row[13] == PriceList.list(row[3]).map { MoneyText.text($0, currency: "USD") }, "\(row)")
                }
            }
            for row in d.refundRows {
                let amount = try #require(Decimals.milliunits(row[9])), refunded = try #require(Decimals.milliunits(row[10]))
                #expect(refunded <= amount && (row[8].isEmpty ? refunded == amount : true))
            }
        }
        #expect(currencies.isSuperset(of: ["USD", "JPY", "EUR"]), "\(currencies)")
    }

    @Test("--api-bench N: N more users after the bad rows, each a REFUND-only refund and an open order")
    func apiBench() throws {
        let plain = Self.collect(Self.settings(sweeps: true))
        let bench = Self.collect(Self.settings(sweeps: true, bench: 25))
        let users = try #require(bench[.apiBench])
        #expect(users.count == 25 && plain[.apiBench] == nil)
        // The other users are untouched.
        #expect(plain.keys.allSatisfy { bench[$0]?.count == plain[$0]?.count })
        let ids = Set(users.flatMap { $0.orders.compactMap(\.userID) })
        #expect(ids.count == 25 && ids.allSatisfy { $0 > IDs.user(201) })
        for d in users {
            #expect(d.appleRefunds.count == 1 && d.refunds.isEmpty)
            let open = d.orders.filter { $0.transactionID == nil && $0.status != "delivered" }
            #expect(open.count == 1 && open[0].createdAt > Self.asOf - 30 * Span.day && open[0].createdAt < Self.asOf)
            #expect(d.receipts.count == 1 && d.receipts[0].verifyStatus == nil, "verified by the job: a known transaction")
            #expect(d.clawback.count == 1 && d.refundRows.count == 1 && d.refundRows[0][12] == "still_granted")
        }
    }
}

/// Reads the reports' decimals back to milliunits, for comparisons.
private enum Decimals {
    static func milliunits(_ text: String) -> Int64? {
        let parts = text.split(separator: ".")
        if parts.count == 1, let whole = Int64(parts[0]) { return whole * 1000 }
        guard parts.count == 2, let whole = Int64(parts[0]), let f = Int64(parts[1]) else { return nil }
        return whole * 1000 + f * (parts[1].count == 2 ? 10 : 1)
    }
}
