import Foundation
import Testing

/// The generator's shop selling on both stores (`iap-sim seed --play-users`): every Google Play
/// family of the rule book beside the App Store's scenarios, in the same four relations with a
/// `store` column, and Google's truth served by the simulator (token endpoint, purchases, orders,
/// voided purchases, Pub/Sub). The night, with Play's variables pointing at the simulator, must
/// write every report, acknowledge.csv included, exactly as the generator expects it, and again
/// when it runs a second time at the same --as-of. (`LookupAgreesTests` asks `lookup` about the
/// same night's Play rows.)
@Suite("Two stores from the generator: every report is the generator's truth", .serialized, .enabled(if: Harness.hasDatabase))
struct TwoStoreGeneratorTests {
    typealias N = NightTests

    /// The files compared: the findings, Play's acknowledge.csv, and the two whose rows need the
    /// Server API and the sales reports (headers only here, with `store`).
    static let files = N.findingFiles + ["acknowledge.csv", "consumption_requests.csv", "coverage.csv"]

    /// A report's rows of one store (the `store` cell ends each line).
    static func rows(_ text: String, store: String) -> Int {
        text.components(separatedBy: "\r\n").dropFirst().filter { $0.hasSuffix("," + store) }.count
    }

    @Test("every report, acknowledge.csv included, equals the generator's expected file, on the first night and its rerun")
    func everyReportIsTheTruth() throws {
        let night = try TwoStoreNight.seed("two_store_generator")
        defer { night.stop() }
        // Every family of Play's rules is played.
        #expect(night.missingFamilies.isEmpty, "\(night.missingFamilies) missing: \(night.census)")

        // What the generator expects holds rows of both stores in every list Play adds to.
        for file in ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "input_errors.csv"] {
            let text = N.read(night.expected.appendingPathComponent(file))
            #expect(Self.rows(text, store: "app_store") > 0 && Self.rows(text, store: "google_play") > 0, "\(file)")
        }
        #expect(Self.rows(N.read(night.expected.appendingPathComponent("acknowledge.csv")), store: "google_play") >= 4)

        for run in ["first night", "rerun"] {
            let r = try night.run()
            #expect(r.status == 0, "\(run): \(r.stderr)")
            for file in Self.files {
                let got = N.read(night.day.appendingPathComponent(file))
                let want = N.read(night.expected.appendingPathComponent(file))
                #expect(got == want, "\(run): \(file) differs from the generator's truth\n\(N.diff(got, want))")
            }
        }
    }
}
