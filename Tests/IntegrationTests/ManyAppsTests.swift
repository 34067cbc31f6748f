@testable import AppStoreSimulator
import Foundation
import Testing

/// Issue 37 ("Many apps"), what is built so far: the simulator serves several apps, each
/// answering only its own purchases to a token whose `bid` names it, and `lookup` asks each app
/// of IAP_BUNDLE_IDS in turn.
@Suite("Several apps", .serialized, .enabled(if: Harness.hasDatabase))
struct ManyAppsTests {
    static let apps = ["com.example.game", "com.example.puzzle", "com.example.race"]

    @Test("lookup finds an order and a transaction of the second and third apps (Apple answers per app)")
    func lookupEveryApp() throws {
        let t = try TestDatabase("many_apps")
        defer { t.drop() }
        let dir = try Harness.scratchDirectory("many-apps")
        let key = dir.appendingPathComponent("key.p8"), pki = dir.appendingPathComponent("pki")
        let truth = dir.appendingPathComponent("apple-truth.tsv"), refunds = dir.appendingPathComponent("refund-list.csv")
        #expect(try runTool("iap-sim", ["keygen", "--out", key.path], environment: t.environment()).status == 0)
        let seeded = try runTool("iap-sim", ["seed", "--users", "150", "--seed", "7", "--as-of", NightTests.asOf,
                                             "--refunds", refunds.path, "--expected", dir.path, "--pki", pki.path,
                                             "--apple-truth", truth.path] + Self.apps.flatMap { ["--bundle", $0] },
                                 environment: t.environment())
        #expect(seeded.status == 0, "\(seeded.stderr)")
        let sim = try SimulatorProcess(["--refunds", refunds.path, "--apple-truth", truth.path, "--pki", pki.path,
                                        "--api-key", key.path, "--api-key-id", ServerAPINightTests.keyID,
                                        "--api-issuer", ServerAPINightTests.issuer] + Self.apps.flatMap { ["--api-bundle", $0] })
        defer { sim.stop() }
        let env = t.environment(sim.urls.merging([
            "IAP_BUNDLE_IDS": Self.apps.joined(separator: ","), "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
            "IAP_ISSUER_ID": ServerAPINightTests.issuer, "IAP_KEY_ID": ServerAPINightTests.keyID, "IAP_PRIVATE_KEY_FILE": key.path,
            "IAP_API_URL_PRODUCTION": "http://127.0.0.1:\(sim.port)/production",
            "IAP_API_URL_SANDBOX": "http://127.0.0.1:\(sim.port)/sandbox",
        ]) { $1 })
        #expect(try runTool("iap-reconcile", ["migrate"], environment: env).status == 0)
        let rows = try AppleTruthFile.parse(String(contentsOf: truth, encoding: .utf8))
        for app in Self.apps.dropFirst() {
            let row = try #require(rows.first { $0.bundleID == app && $0.environment == .production && $0.refund == nil },
                                   "the seed made no purchase in \(app)")
            let byOrder = try runTool("iap-reconcile", ["lookup", row.orderID, "--json", "--as-of", NightTests.asOf], environment: env)
            #expect(byOrder.status == 0, "\(byOrder.stderr)")
            let doc = try JSONSerialization.jsonObject(with: Data(byOrder.stdout.utf8)) as? [String: Any]
            let items = doc?["transactions"] as? [[String: Any]] ?? []
            #expect(doc?["apple"] as? String == "found" && items.contains { $0["transaction_id"] as? String == row.transactionID },
                    "\(app) order \(row.orderID): \(byOrder.stdout)")
            let byTransaction = try runTool("iap-reconcile", ["lookup", "--transaction", row.transactionID, "--json",
                                                              "--as-of", NightTests.asOf], environment: env)
            #expect(byTransaction.status == 0 && byTransaction.stdout.contains("\"found\""), "\(app): \(byTransaction.stdout)")
        }
    }
}
