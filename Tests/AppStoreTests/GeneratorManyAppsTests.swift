// The generator with several apps (`iap-sim seed --bundle A --bundle B --bundle C`):
// users spread over the apps by the seed, each app with its own products, and the Apple truth
// and the expected reports agreeing on which app every purchase belongs to.

@testable import AppStoreSimulator
import Foundation
import Reconciliation
@testable import SimulatorData
import Testing

@Suite("generator: several apps")
struct GeneratorManyAppsTests {
    static let asOf: Int64 = 1_795_000_000_000
    static let bundles = ["com.example.game", "com.example.puzzle", "com.example.racing"]

    static func settings(users: Int = 900, seed: UInt64 = 7, bundles: [String] = bundles) -> GeneratorSettings {
        var s = GeneratorSettings(users: users, seed: seed, asOf: asOf, catalog: Catalog(bundle: bundles[0]),
                                  refundsServed: true, badRows: true)
        s.otherApps = bundles.dropFirst().map { Catalog(bundle: $0) }
        s.apiSweeps = true
        return s
    }

    /// Every user's data, its truth rows (consumption requests marked) and its requests.
    static func walk(_ settings: GeneratorSettings) -> [(d: UserData, truth: [AppleTruthRow], requests: [ConsumptionRequestFact])] {
        var out: [(UserData, [AppleTruthRow], [ConsumptionRequestFact])] = []
        ScenarioPlan(settings: settings).forEach { d in
            var truth = AppleTruthWriter.rows(d, refundsServed: settings.refundsServed)
            let requests = ConsumptionRequests.mark(&truth, d, settings: settings)
            out.append((d, truth, requests))
        }
        return out
    }

    @Test("three apps: users spread over them, each buying its own app's products, the truth naming the user's app")
    func spread() throws {
        let settings = Self.settings()
        let walked = Self.walk(settings)
        var usersPerApp: [String: Int] = [:]
        for (d, truth, _) in walked {
            let app = try #require(settings.apps.first { $0.bundle == d.bundle }, "user of no app: '\(d.bundle)'")
            usersPerApp[d.bundle, default: 0] += d.scenario?.userSlots ?? 0
            #expect(d.orders.allSatisfy { app.owns($0.productID) }, "\(d.scenario?.rawValue ?? "bad rows"): an order of another app")
            #expect(d.grants.allSatisfy { app.owns($0.productID) }, "\(d.scenario?.rawValue ?? "bad rows"): a grant of another app")
            for r in d.receipts {
                guard let sim = r.sim else { continue }
                #expect(sim.bundle == d.bundle || sim.bundle == Catalog.otherBundle)
                if sim.bundle == d.bundle { #expect(sim.txs.allSatisfy { app.owns($0.pid) }) }
            }
            for row in truth where row.bundleID != Catalog.otherBundle {
                #expect(row.bundleID == d.bundle, "\(row.transactionID) in \(row.bundleID), its user plays in \(d.bundle)")
                #expect(app.owns(row.productID), "\(row.transactionID): \(row.productID) is not \(row.bundleID)'s")
            }
        }
        #expect(Set(usersPerApp.keys) == Set(Self.bundles))
        #expect(usersPerApp.values.allSatisfy { $0 > 200 }, "\(usersPerApp)")
        #expect(usersPerApp.values.reduce(0, +) == settings.users)
        // Each app has its own products, iap_products.bundle_id naming it (the gems pack too).
        let products = settings.productRows
        #expect(products.count == 3 * Catalog(bundle: "x").products.count)
        #expect(products.allSatisfy { p in p.bundleID.map { Catalog(bundle: $0).owns(p.productID) } == true })
        #expect(Set(products.compactMap(\.bundleID)) == Set(Self.bundles))
        // The same seed spreads the users the same way; another seed differently.
        let again = Self.walk(settings).map(\.d.bundle)
        #expect(again == walked.map(\.d.bundle))
        #expect(Self.walk(Self.settings(seed: 8)).map(\.d.bundle) != again)
    }

    @Test("three apps: every expected compensate, refund and clawback row's product belongs to its transaction's app")
    func expectedRowsAgreeWithTheTruth() throws {
        let settings = Self.settings()
        let walked = Self.walk(settings)
        var appOf: [String: String] = [:]  // transaction id → bundle, from the truth
        for (_, truth, _) in walked { for row in truth { appOf[row.transactionID] = row.bundleID } }
        var compensate = 0, refunds = 0, clawbacks = 0
        var perApp: [String: Int] = [:]
        for (d, _, _) in walked {
            for row in d.compensate {
                let (product, tid) = (row[2], row[5])
                let bundle = try #require(appOf[tid], "compensate \(tid): a purchase Apple does not have")
                #expect(Catalog(bundle: bundle).owns(product), "compensate \(tid): \(product) in \(bundle)")
                #expect(bundle == d.bundle)
                compensate += 1
                perApp[bundle, default: 0] += 1
            }
            for row in d.refundRows {
                let (tid, product) = (row[0], row[3])
                let bundle = try #require(appOf[tid], "refund \(tid): a purchase Apple does not have")
                #expect(Catalog(bundle: bundle).owns(product), "refund \(tid): \(product) in \(bundle)")
                refunds += 1
                perApp[bundle, default: 0] += 1
            }
            for row in d.clawback {
                // A clawed-back grant is of the user's app's product (its transaction may be another app's: wrong_bundle).
                #expect(Catalog(bundle: d.bundle).owns(row[3]), "clawback \(row[6]): \(row[3]) for a user of \(d.bundle)")
                clawbacks += 1
            }
            for row in d.unattributed {
                #expect(appOf[row[0]].map { Catalog(bundle: $0).owns(row[1]) } == true, "unattributed \(row[0])")
            }
        }
        #expect(compensate > 50 && refunds > 20 && clawbacks > 20, "\(compensate) \(refunds) \(clawbacks)")
        #expect(Set(perApp.keys) == Set(Self.bundles), "every app has findings: \(perApp)")
    }

    @Test("three apps: consumption requests in every app, each for its own app's transaction and user")
    func consumptionRequestsPerApp() throws {
        let settings = Self.settings(users: 2000)
        var apps = Set<String>()
        var n = 0
        for (d, _, requests) in Self.walk(settings) {
            for f in requests {
                #expect(f.row.bundleID == d.bundle && Catalog(bundle: d.bundle).owns(f.row.productID))
                apps.insert(f.row.bundleID)
                n += 1
            }
        }
        #expect(n > 60 && apps == Set(Self.bundles), "\(n) requests in \(apps)")
    }

    @Test("one app: every user plays in it, and iap_products stays as it always was (the gems pack without a bundle)")
    func oneAppUnchanged() {
        let settings = Self.settings(users: 300, bundles: ["com.example.game"])
        #expect(settings.otherApps.isEmpty)
        #expect((0..<300).allSatisfy { settings.app(ofSlot: $0).bundle == "com.example.game" })
        #expect(settings.productRows.map(\.productID) == settings.catalog.products.map(\.productID))
        #expect(settings.productRows.map(\.bundleID) == settings.catalog.products.map(\.bundleID))
        #expect(settings.productRows.contains { $0.bundleID == nil })
    }
}
