import Foundation
import PlaySimulator
import Testing

/// The generator's shop selling on both stores (`iap-sim seed --play-users`): every Google Play
/// family of the rule book beside the App Store's scenarios, in the same four relations with a
/// `store` column, and Google's truth served by the simulator (token endpoint, purchases, orders,
/// voided purchases, Pub/Sub). The night, with Play's variables pointing at the simulator, must
/// write every report, acknowledge.csv included, exactly as the generator expects it, and again
/// when it runs a second time at the same --as-of.
@Suite("Two stores from the generator: every report is the generator's truth", .serialized, .enabled(if: Harness.hasDatabase))
struct TwoStoreGeneratorTests {
    typealias N = NightTests

    static let package = "com.example.game"
    static let subscription = "projects/iap-tests/subscriptions/iap-reconcile"
    /// The files compared: the findings, Play's acknowledge.csv, and the two whose rows need the
    /// Server API and the sales reports (headers only here, with `store`).
    static let files = N.findingFiles + ["acknowledge.csv", "consumption_requests.csv", "coverage.csv"]

    /// Ten minutes ago, to the second: Google lists voided purchases and Pub/Sub delivers messages by
    /// the real clock, so a Play seed's --as-of lies just before now (`iap-sim seed --help`).
    static func asOfNow() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down)))
    }

    /// A report's rows of one store (the `store` cell ends each line).
    static func rows(_ text: String, store: String) -> Int {
        text.components(separatedBy: "\r\n").dropFirst().filter { $0.hasSuffix("," + store) }.count
    }

    @Test("every report, acknowledge.csv included, equals the generator's expected file, on the first night and its rerun")
    func everyReportIsTheTruth() throws {
        let asOf = Self.asOfNow()
        let t = try TestDatabase("two_store_generator")
        defer { t.drop() }
        let dir = try Harness.scratchDirectory("two_store_generator")
        let expected = dir.appendingPathComponent("expected"), out = dir.appendingPathComponent("reports")
        let truth = dir.appendingPathComponent("play-truth.tsv"), key = dir.appendingPathComponent("play-key.json")
        let refunds = dir.appendingPathComponent("refund-list.csv"), pki = dir.appendingPathComponent("pki")
        try Data(PlayKeyFile.json(key: PlayHarness.jobKey, keyID: "k1")).write(to: key)
        let seeded = try runTool(
            "iap-sim",
            [
                "seed", "--users", "150", "--seed", "42", "--as-of", asOf, "--bundle", N.bundle, "--refunds", refunds.path,
                "--expected", expected.path, "--pki", pki.path, "--play-users", "60", "--play-package", Self.package,
                "--play-truth", truth.path,
            ], environment: t.environment())
        try #require(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        // Every family of Play's rules is played, but the one the night cannot list yet.
        let census = try #require(seeded.stderr.components(separatedBy: "\n").first { $0.contains("google play:") })
        for family in [
            "play_missed_order", "play_overdue", "play_cross_account", "play_unacknowledged_refund", "play_partial_then_rest",
            "play_contradicted", "play_test_purchase", "play_no_order_id", "play_forged_token", "play_two_store_player",
            "play_upload_never_came", "play_bad_rows",
        ] {
            #expect(census.contains(family + "="), "\(census)")
        }

        let sim = try SimulatorProcess([
            "--refunds", refunds.path, "--play-service-account", key.path, "--play-truth", truth.path,
            "--play-subscription", Self.subscription,
        ])
        defer { sim.stop() }
        let base = "http://127.0.0.1:\(sim.port)"
        let env = t.environment(
            sim.urls.merging([
                "IAP_BUNDLE_IDS": N.bundle, "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
                "PLAY_SERVICE_ACCOUNT_FILE": key.path, "PLAY_PACKAGE_NAMES": Self.package, "PLAY_API_URL": base,
                "PLAY_TOKEN_URL": base + "/token", "PLAY_PUBSUB_URL": base, "PLAY_PUBSUB_SUBSCRIPTION": Self.subscription,
            ]) { $1 })
        let w = N.World(t: t, sim: sim, expected: expected, out: out, env: env)
        let day = out.appendingPathComponent(String(asOf.prefix(10)))

        // What the generator expects holds rows of both stores in every list Play adds to.
        for file in ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "input_errors.csv"] {
            let text = N.read(expected.appendingPathComponent(file))
            #expect(Self.rows(text, store: "app_store") > 0 && Self.rows(text, store: "google_play") > 0, "\(file)")
        }
        #expect(Self.rows(N.read(expected.appendingPathComponent("acknowledge.csv")), store: "google_play") >= 4)

        for night in ["first night", "rerun"] {
            let r = try w.run(asOf: asOf)
            #expect(r.status == 0, "\(night): \(r.stderr)")
            for file in Self.files {
                let got = N.read(day.appendingPathComponent(file)), want = N.read(expected.appendingPathComponent(file))
                #expect(got == want, "\(night): \(file) differs from the generator's truth\n\(N.diff(got, want))")
            }
        }

        // lookup agrees with the night on every Play row customer service acts on: asked by Google's
        // order id (or the token of a purchase without one), the same verdict, user, order and grant.
        func lookup(_ id: String) throws -> [String: Any] {
            let r = try runTool(
                "iap-reconcile", ["lookup"] + (id.hasPrefix("GPA.") ? [id] : ["--token", id]) + ["--json", "--as-of", asOf],
                environment: env)
            #expect(r.status == 0, "lookup \(id): \(r.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
            let items = json?["transactions"] as? [[String: Any]] ?? []
            #expect(items.count == 1, "lookup \(id): \(r.stdout)")
            return items.first ?? [:]
        }
        func play(_ file: String) -> [[String: String]] { LookupAgreesTests.report(day, file).filter { $0["store"] == "google_play" } }
        var asked = 0
        for row in play("compensate.csv") {
            let item = try lookup(row["transaction_id"] ?? "")
            #expect(item["verdict"] as? String == "compensate" && item["user_id"] as? String == row["user_id"], "\(row) \(item)")
            if let order = row["order_id"], !order.isEmpty { #expect(item["order_id"] as? String == order, "\(row) \(item)") }
            asked += 1
        }
        for row in play("clawback.csv") {
            let item = try lookup(row["transaction_id"] ?? "")
            #expect(item["verdict"] as? String == "claw_back", "\(row) \(item)")
            #expect((item["grant_ids"] as? [String] ?? []).contains(row["grant_id"] ?? "-"), "\(row) \(item)")
            asked += 1
        }
        for row in play("unattributed.csv") {
            let item = try lookup(row["transaction_id"] ?? "")
            #expect(item["verdict"] as? String == "unknown_to_us", "\(row) \(item)")
            asked += 1
        }
        #expect(asked >= 10, "\(asked) Play rows asked")
    }
}
