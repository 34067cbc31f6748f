@testable import AppStoreSimulator
import Foundation
import Testing

/// Many apps: the simulator serves several apps, each
/// answering only its own purchases to a token whose `bid` names it, and `lookup` asks each app
/// of IAP_BUNDLE_IDS in turn.
@Suite("Several apps", .serialized, .enabled(if: Harness.hasDatabase))
struct ManyAppsTests {
    static let apps = ["com.example.game", "com.example.puzzle", "com.example.race"]

    struct Apps {
        let t: TestDatabase
        let sim: SimulatorProcess
        let dir: URL
        let truth: URL
        let env: [String: String]
        func stop() { sim.stop(); t.drop() }
    }

    /// Three apps seeded, served by one simulator with one key, IAP_BUNDLE_IDS naming all three.
    static func apps(_ label: String, simArguments: [String] = []) throws -> Apps {
        let t = try TestDatabase(label)
        let dir = try Harness.scratchDirectory(label)
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
                                        "--api-issuer", ServerAPINightTests.issuer] + Self.apps.flatMap { ["--api-bundle", $0] }
                                       + simArguments)
        let env = t.environment(sim.urls.merging([
            "IAP_BUNDLE_IDS": Self.apps.joined(separator: ","), "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
            "IAP_ISSUER_ID": ServerAPINightTests.issuer, "IAP_KEY_ID": ServerAPINightTests.keyID, "IAP_PRIVATE_KEY_FILE": key.path,
            "IAP_API_URL_PRODUCTION": "http://127.0.0.1:\(sim.port)/production",
            "IAP_API_URL_SANDBOX": "http://127.0.0.1:\(sim.port)/sandbox",
        ]) { $1 })
        return Apps(t: t, sim: sim, dir: dir, truth: truth, env: env)
    }

    @Test("lookup finds an order and a transaction of the second and third apps (Apple answers per app)")
    func lookupEveryApp() throws {
        let w = try Self.apps("many_apps_lookup")
        defer { w.stop() }
        let env = w.env
        #expect(try runTool("iap-reconcile", ["migrate"], environment: env).status == 0)
        let rows = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
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

    @Test("respond reads every app's refund requests and answers each with its app's token")
    func respondEveryApp() throws {
        let log = try Harness.scratchDirectory("many-apps-log").appendingPathComponent("consumption.jsonl")
        let w = try Self.apps("many_apps_respond", simArguments: ["--consumption-log", log.path])
        defer { w.stop() }
        let night = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", w.dir.appendingPathComponent("out").path,
                                                  "--no-progress"], environment: w.env)
        #expect(night.status == 0, "\(night.stderr)")
        let rows = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        let requested = rows.filter { $0.consumptionRequest != nil }
        for app in Self.apps { #expect(requested.contains { $0.bundleID == app }, "no request in \(app)") }
        let r = try runTool("iap-reconcile", ["respond", "--now", NightTests.asOf, "--send", "--json", "--no-progress"], environment: w.env)
        #expect(r.status == 0, "\(r.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(doc?["found"] as? Int == requested.count, "found \(doc?["found"] ?? "nil") of \(requested.count)")
        // Answers of every app reached the simulator, each accepted under its own app (another app's token gets 404).
        let sent = Set(RespondTests.consumptionLog(log).compactMap { $0["transactionId"] as? String })
        let decidedSent = ((doc?["decided"] as? [[String: Any]]) ?? []).filter { $0["state"] as? String == "sent" }
        #expect(decidedSent.count == sent.count && !sent.isEmpty)
        for app in Self.apps {
            #expect(requested.contains { $0.bundleID == app && sent.contains($0.transactionID) }, "no answer reached \(app)")
        }
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state = 'rejected'") == 0)
        #expect(try w.t.int("SELECT count(DISTINCT source) FROM recon.respond_positions WHERE source LIKE 'notification_history%'") == 3)
    }
}
