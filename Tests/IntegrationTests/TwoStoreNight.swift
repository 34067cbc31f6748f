import Foundation
import PlaySimulator
@testable import SimulatorData
import Testing

/// The generator's shop selling on both stores (`iap-sim seed --play-users 60`) and a simulator
/// serving both: Apple's scenarios beside every Google Play family, Google's truth in a file
/// (purchases, orders' money, voided records, Pub/Sub notifications), and the night's environment
/// pointing at both. Shared by the tests that run that night and compare it with the generator's
/// truth (`TwoStoreGeneratorTests`), with `lookup` (`LookupAgreesTests`) and with the core's rules
/// over facts gathered apart (`RuleBookTests`).
struct TwoStoreNight {
    typealias N = NightTests

    static let package = "com.example.game"
    static let subscription = "projects/iap-tests/subscriptions/iap-reconcile"

    let t: TestDatabase
    let sim: SimulatorProcess
    /// `--as-of` of the seed and the night: just before now (`asOfNow`).
    let asOf: String
    /// The generator's expected reports, and the truth file the simulator serves Play from.
    let expected: URL, truth: URL
    /// The seed's census line of Google Play (`google play: … families: …`).
    let census: String
    let world: N.World
    var env: [String: String] { world.env }
    /// The night's folder of reports.
    var day: URL { world.out.appendingPathComponent(String(asOf.prefix(10))) }

    /// Ten minutes ago, to the second: Google lists voided purchases and Pub/Sub delivers messages by
    /// the real clock, so a Play seed's --as-of lies just before now (`iap-sim seed --help`).
    static func asOfNow() -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 600).rounded(.down)))
    }

    /// Seeds the shop (150 App Store users, 60 Play players) and starts the simulator; the night is
    /// not run yet (`run`).
    static func seed(_ label: String) throws -> TwoStoreNight {
        let asOf = asOfNow()
        let t = try TestDatabase(label)
        do {
            let dir = try Harness.scratchDirectory(label)
            let expected = dir.appendingPathComponent("expected"), out = dir.appendingPathComponent("reports")
            let truth = dir.appendingPathComponent("play-truth.tsv"), key = dir.appendingPathComponent("play-key.json")
            let refunds = dir.appendingPathComponent("refund-list.csv"), pki = dir.appendingPathComponent("pki")
            try Data(PlayKeyFile.json(key: PlayHarness.jobKey, keyID: "k1")).write(to: key)
            let seeded = try runTool(
                "iap-sim",
                [
                    "seed", "--users", "150", "--seed", "42", "--as-of", asOf, "--bundle", N.bundle, "--refunds",
                    refunds.path,
                    "--expected", expected.path, "--pki", pki.path, "--play-users", "60", "--play-package", package,
                    "--play-truth", truth.path,
                ], environment: t.environment())
            try #require(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
            let census = try #require(seeded.stderr.components(separatedBy: "\n").first { $0.contains("google play:") })
            let sim = try SimulatorProcess([
                "--refunds", refunds.path, "--play-service-account", key.path, "--play-truth", truth.path,
                "--play-subscription", subscription,
            ])
            let base = "http://127.0.0.1:\(sim.port)"
            let env = t.environment(
                sim.urls.merging([
                    "IAP_BUNDLE_IDS": N.bundle, "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
                    "PLAY_SERVICE_ACCOUNT_FILE": key.path, "PLAY_PACKAGE_NAMES": package, "PLAY_API_URL": base,
                    "PLAY_TOKEN_URL": base + "/token", "PLAY_PUBSUB_URL": base,
                    "PLAY_PUBSUB_SUBSCRIPTION": subscription,
                ]) { $1 })
            return TwoStoreNight(
                t: t, sim: sim, asOf: asOf, expected: expected, truth: truth, census: census,
                world: N.World(t: t, sim: sim, expected: expected, out: out, env: env))
        } catch {
            t.drop()
            throw error
        }
    }

    /// Seeds the shop, checks that every Play family is played, and runs the night once (exit 0
    /// required); with when it ran, Unix ms by the real clock (what the job stores of its own
    /// clock lies within).
    static func ranOnce(_ label: String) throws -> (night: TwoStoreNight, ran: ClosedRange<Int64>) {
        let night = try seed(label)
        do {
            #expect(night.missingFamilies.isEmpty, "\(night.missingFamilies) missing: \(night.census)")
            let started = Int64(Date().timeIntervalSince1970 * 1000)
            let r = try night.run()
            let ended = Int64(Date().timeIntervalSince1970 * 1000)
            try #require(r.status == 0, "\(r.stderr)")
            return (night, started...ended)
        } catch {
            night.stop()
            throw error
        }
    }

    /// The Play families of the rule book the census does not name: every one must be played, so
    /// that what is checked over the night covers each.
    var missingFamilies: [String] {
        PlayFamily.allCases.map(\.rawValue).filter { !census.contains(" " + $0 + "=") }
    }

    /// The night at `asOf`.
    func run() throws -> ProcessResult { try world.run(asOf: asOf) }

    /// A report of the night: its Google Play rows, keyed by column name.
    func playRows(_ file: String) -> [[String: String]] {
        LookupAgreesTests.report(day, file).filter { $0["store"] == "google_play" }
    }

    func stop() { world.stop() }
}
