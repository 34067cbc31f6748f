@testable import AppStoreSimulator
import Foundation
import Postgres
import Testing

/// Many apps: the night sweeps every app of IAP_BUNDLE_IDS, each with its own token, positions
/// and budgets; a 401 is believed only when a fresh token a second later gets one too, and then
/// stops that app alone; every app refused is exit 78.
@Suite("Several apps, one night", .serialized, .enabled(if: Harness.hasDatabase))
struct ManyAppsNightTests {
    typealias Apps = ManyAppsTests.Apps

    static func night(_ w: Apps, _ label: String) throws -> (result: ProcessResult, day: URL) {
        let out = w.dir.appendingPathComponent("out-\(label)")
        let result = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress"],
                                 environment: w.env)
        return (result, out.appendingPathComponent("2026-11-21"))
    }

    static func summary(_ day: URL) throws -> [String: Any] {
        let text = try String(contentsOf: day.appendingPathComponent("summary.json"), encoding: .utf8)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// The simulator's call log: endpoint and outcome per Server API request.
    static func calls(_ sim: SimulatorProcess) -> [(endpoint: String, outcome: String)] {
        let text = (try? String(contentsOf: sim.callLog, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return f.count >= 5 ? (f[2], f[3]) : nil
        }
    }

    @Test("three apps: every app's notification and transaction histories swept, counted per app, reports equal the truth")
    func everyAppSwept() throws {
        let w = try ManyAppsTests.apps("many_apps_night")
        defer { w.stop() }
        let (night, day) = try Self.night(w, "first")
        #expect(night.status == 0, "\(night.stderr)")
        NightTests.expectReportsMatchTruth(day, expected: w.dir)
        let doc = try Self.summary(day)
        let apps = try #require(doc["apps"] as? [String: [String: Any]], "summary.json has no apps")
        let truth = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        for app in ManyAppsTests.apps {
            let figures = try #require(apps[app], "no figures for \(app)")
            let requests = figures["requests"] as? [String: Int] ?? [:]
            // Eight sweeps per app (four types, two environments), each asked with the app's own token.
            #expect((requests["notification_history"] ?? 0) >= 8, "\(app): \(requests)")
            #expect(figures["refused"] as? Bool == false)
            #expect(night.stderr.contains("  app \(app)"), "no line for \(app) in\n\(night.stderr)")
            if truth.contains(where: { $0.bundleID == app && $0.refund != nil && $0.environment == .production }) {
                #expect((figures["notifications"] as? Int ?? 0) > 0, "\(app)'s refunds were not swept")
            }
        }
        #expect(apps.values.contains { ($0["requests"] as? [String: Int])?["transaction_history"] ?? 0 > 0 },
                "no customer's history asked in any app")
        // Per app the findings add up to the total.
        let counts = doc["counts"] as? [String: Int] ?? [:]
        for file in ["compensate", "clawback", "duplicate_grants", "refunds"] {
            let perApp = apps.values.map { ($0["counts"] as? [String: Int])?[file] ?? 0 }.reduce(0, +)
            #expect(perApp == counts[file], "\(file): \(perApp) per app, \(counts[file] ?? -1) in all")
        }
        #expect(try w.t.int("SELECT count(DISTINCT bundle_id) FROM recon.notification_sweeps") == 3)
        // The page has a row per app, in IAP_BUNDLE_IDS's order.
        let page = try String(contentsOf: day.appendingPathComponent("summary.html"), encoding: .utf8)
        let rows = ManyAppsTests.apps.map { page.range(of: "data-app=\"\($0)\"")?.lowerBound }
        #expect(page.contains("data-section=\"apps\"") && rows.allSatisfy { $0 != nil }, "no row per app on the page")
        #expect(rows.compactMap { $0 } == rows.compactMap { $0 }.sorted())
        // A second night asks every app from its own position: the same reports.
        let (again, dayAgain) = try Self.night(w, "again")
        #expect(again.status == 0, "\(again.stderr)")
        NightTests.expectReportsMatchTruth(dayAgain, expected: w.dir)
    }

    @Test("a stray 401 is asked again with a fresh token a second later; the night goes on and matches the truth")
    func strayUnauthorized() throws {
        let w = try ManyAppsTests.apps("many_apps_stray", simArguments: ["--stray-401", "3"])
        defer { w.stop() }
        let (night, day) = try Self.night(w, "stray")
        #expect(night.status == 0, "\(night.stderr)")
        #expect(Self.calls(w.sim).contains { $0.outcome.hasPrefix("401") }, "the stray 401 never came")
        NightTests.expectReportsMatchTruth(day, expected: w.dir)
        let doc = try Self.summary(day)
        #expect((doc["skipped_checks"] as? [String] ?? []).isEmpty, "\(doc["skipped_checks"] ?? "")")
    }

    @Test("one app's refused key stops only that app's sweeps: named in skipped_checks, a warning, the metric")
    func oneAppRefused() throws {
        let refused = ManyAppsTests.apps[1]
        let w = try ManyAppsTests.apps("many_apps_refused", simArguments: ["--refuse-app", refused])
        defer { w.stop() }
        let metrics = w.dir.appendingPathComponent("metrics.prom")
        let out = w.dir.appendingPathComponent("out-refused")
        let night = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress",
                                                  "--metrics-file", metrics.path], environment: w.env)
        #expect(night.status == 0, "\(night.stderr)")
        #expect(night.stderr.contains("refused the key of \(refused)"), "\(night.stderr)")
        let doc = try Self.summary(out.appendingPathComponent("2026-11-21"))
        #expect((doc["skipped_checks"] as? [String] ?? []).contains { $0.hasPrefix("app_sweeps \(refused) ") })
        let apps = try #require(doc["apps"] as? [String: [String: Any]])
        #expect(apps[refused]?["refused"] as? Bool == true)
        // The refusal was confirmed once, with a fresh token, then nothing more went to that app.
        let sentToRefused = (apps[refused]?["requests"] as? [String: Int] ?? [:]).values.reduce(0, +)
        #expect(sentToRefused >= 2 && sentToRefused <= 2 * 16 + 2, "\(sentToRefused) requests to the refused app")
        for app in ManyAppsTests.apps where app != refused {
            #expect(apps[app]?["refused"] as? Bool == false)
            #expect(((apps[app]?["requests"] as? [String: Int])?["notification_history"] ?? 0) >= 8, "\(app) was not swept")
        }
        // Its positions did not move: the next night sweeps it from where it stood.
        #expect(try w.t.int("SELECT count(*) FROM recon.notification_sweeps WHERE bundle_id = \(refused)") == 0)
        #expect(try w.t.int("SELECT count(*) FROM recon.notification_sweeps WHERE bundle_id <> \(refused)") == 16)
        let prom = try String(contentsOf: metrics, encoding: .utf8)
        #expect(prom.contains("iap_reconcile_app_key_refused{app=\"\(refused)\"} 1"), "\(prom)")
        #expect(prom.contains("iap_reconcile_app_key_refused{app=\"\(ManyAppsTests.apps[0])\"} 0"))
        // No receipt or signed transaction was blamed for the refusal.
        #expect(try w.t.int("SELECT count(*) FROM recon.verify_attempts WHERE problem LIKE '%401%'") == 0)
    }

    @Test("IAP_APP_KEYS: an app with a key of its own is asked with tokens signed by it; bad items are exit 78 naming them")
    func appWithItsOwnKey() throws {
        let own = ManyAppsTests.apps[2]
        let dir = try Harness.scratchDirectory("many-apps-own-key")
        let key = dir.appendingPathComponent("race.p8")
        #expect(try runTool("iap-sim", ["keygen", "--out", key.path], environment: ProcessInfo.processInfo.environment).status == 0)
        let w = try ManyAppsTests.apps("many_apps_own_key",
                                       simArguments: ["--api-key-for", "\(own)=\(key.path)", "--api-key-id-for", "\(own)=RACEKEY001"])
        defer { w.stop() }
        // Without its own key the app's tokens are refused: that app alone is skipped.
        let (without, dayWithout) = try Self.night(w, "without")
        #expect(without.status == 0, "\(without.stderr)")
        #expect(((try Self.summary(dayWithout))["apps"] as? [String: [String: Any]])?[own]?["refused"] as? Bool == true)
        var env = w.env
        env["IAP_APP_KEYS"] = " \(own)=RACEKEY001:\(key.path) "
        let out = w.dir.appendingPathComponent("out-own")
        let night = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress"],
                                environment: env)
        #expect(night.status == 0, "\(night.stderr)")
        let day = out.appendingPathComponent("2026-11-21")
        let apps = try #require(try Self.summary(day)["apps"] as? [String: [String: Any]])
        #expect(apps.values.allSatisfy { $0["refused"] as? Bool == false }, "\(apps)")
        NightTests.expectReportsMatchTruth(day, expected: w.dir)
        // Hostile IAP_APP_KEYS: each is one line, exit 78, naming the item and never a key's content.
        let pem = try String(contentsOf: key, encoding: .utf8)
        for (value, says) in [("\(own)", "is not BUNDLE=KEY_ID:FILE"), ("com.other.app=K:\(key.path)", "not in IAP_BUNDLE_IDS"),
                              ("\(own)=K:\(key.path),\(own)=K:\(key.path)", "twice"), ("\(own)=:\(key.path)", "is not BUNDLE"),
                              ("\(own)=K:/nonexistent/key.p8", "cannot be read"), ("\(own)=K:\(w.truth.path)", "key file of \(own)")] {
            env["IAP_APP_KEYS"] = value
            let bad = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress"],
                                  environment: env)
            #expect(bad.status == 78 && bad.stderr.contains("IAP_APP_KEYS") && bad.stderr.contains(says), "\(value): \(bad.stderr)")
            #expect(!bad.stderr.contains(pem.split(separator: "\n")[1]), "a key's content in the error")
        }
    }

    @Test("every app's key refused: exit 78 with one line naming every app")
    func everyAppRefused() throws {
        let w = try ManyAppsTests.apps("many_apps_all_refused",
                                       simArguments: ManyAppsTests.apps.flatMap { ["--refuse-app", $0] })
        defer { w.stop() }
        let (night, _) = try Self.night(w, "all")
        #expect(night.status == 78, "\(night.stderr)")
        let lines = night.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("for every app") && ManyAppsTests.apps.allSatisfy { lines[0].contains($0) },
                "\(night.stderr)")
        #expect(try w.t.int("SELECT count(*) FROM recon.verify_attempts WHERE problem LIKE '%401%'") == 0)
    }
}
