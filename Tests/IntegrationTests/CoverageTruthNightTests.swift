import Foundation
import Testing

/// `make demo` writes coverage.csv equal to the generator's truth: a night
/// with the Server API and the ASC_* variables against the simulator's sales reports
/// (`iap-sim serve --connect-key`) writes coverage.csv byte for byte as `iap-sim seed --expected`
/// wrote it. The two sides are derived apart: the night from Apple's reports and what it stored,
/// the generator from its scenarios (Sources/SimulatorData/SalesCoverage.swift).
@Suite("Sales report coverage: the night's file equals the generator's truth", .serialized, .enabled(if: Harness.hasDatabase))
struct CoverageTruthNightTests {
    static let file = "coverage.csv"
    static let vendor = "85012345"

    /// A seeded world whose simulator also serves the sales reports, and the night's ASC_* variables.
    /// `zone`: `--sales-report-timezone` of the seed, the simulator and the night (nil: the default).
    static func world(_ label: String, zone: String? = nil) throws -> (ServerAPINightTests.World, [String]) {
        let issuer = "69a6de70-03db-47e3-e053-5b8c7c11a4d1", keyID = "TEAMKEY123"
        let dir = try Harness.scratchDirectory("\(label)-team")
        let team = dir.appendingPathComponent("team.p8")
        let made = try runTool("iap-sim", ["keygen", "--out", team.path], environment: ProcessInfo.processInfo.environment)
        #expect(made.status == 0, "iap-sim keygen: \(made.stderr)")
        let zoneArguments = zone.map { ["--sales-report-timezone", $0] } ?? []
        var w = try ServerAPINightTests.world(label, share: "0.25",
                                              simArguments: ["--connect-key", team.path, "--connect-key-id", keyID,
                                                             "--connect-issuer", issuer, "--connect-vendor", Self.vendor]
                                                  + zoneArguments,
                                              seedArguments: zoneArguments + ["--expect-proceeds"])
        w.env.merge(["ASC_ISSUER_ID": issuer, "ASC_KEY_ID": keyID, "ASC_PRIVATE_KEY_FILE": team.path,
                     "ASC_VENDOR_NUMBER": Self.vendor, "ASC_API_URL": "http://127.0.0.1:\(w.sim.port)"]) { $1 }
        return (w, zoneArguments)
    }

    @Test("a night with the sales reports: coverage.csv equals the expected file, with shortfalls, unknown countries and refunds in it; a rerun writes it again")
    func coverageMatchesTheGenerator() throws {
        let (w, _) = try Self.world("coverage_truth")
        defer { w.stop() }
        let day = w.out.appendingPathComponent("2026-11-21")
        let want = NightTests.read(w.expected.appendingPathComponent(Self.file))
        for night in 1...2 {
            let r = try w.night()
            #expect(r.status == 0, "night \(night): \(r.stderr)")
            let got = NightTests.read(day.appendingPathComponent(Self.file))
            #expect(got == want, "night \(night): \(Self.file) differs from the generator's truth\n\(NightTests.diff(got, want))")
        }
        // The sales reports change no other report but for Apple's proceeds, which the generator
        // derives from its truth too (ExpectedProceeds.swift).
        NightTests.expectReportsMatchTruth(day, expected: w.expected)
        // Filled in each file, and empty in some rows (transactions verifyReceipt alone showed).
        var empty = 0
        for file in ["compensate.csv", "clawback.csv", "refunds.csv"] {
            let rows = LookupAgreesTests.report(day, file)
            #expect(rows.contains { !($0["proceeds"] ?? "").isEmpty }, "\(file): no proceeds")
            empty += rows.filter { ($0["proceeds"] ?? "").isEmpty }.count
        }
        #expect(empty > 0)

        // Every kind of difference is there, so the comparison means something: purchases only
        // verifyReceipt showed (unknown country), shortfalls (the purchases the shop never saw),
        // and refunds in Apple's figures.
        let rows = LookupAgreesTests.report(day, Self.file)
        #expect(rows.contains { $0["country"] == "unknown" && $0["job_units_sold"] != "0" }, "\(rows.prefix(5))")
        #expect(rows.contains { $0["country"] != "unknown" && Int($0["apple_units_sold"] ?? "") ?? 0 > Int($0["job_units_sold"] ?? "") ?? 0 },
                "\(rows.prefix(5))")
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let coverage = try #require(summary["coverage"] as? [String: Any])
        #expect((coverage["apple_units_refunded"] as? Int ?? 0) > 0 && (coverage["days_held"] as? Int ?? 0) > 10, "\(coverage)")
        #expect((coverage["job_units_sold"] as? Int ?? 0) < (coverage["apple_units_sold"] as? Int ?? 0), "\(coverage)")
    }

    @Test("refunds Apple grants after respond's answers (consumption outcomes) are in Apple's report of their day: a later night finds no refund the report lacks")
    func outcomeRefundsInTheReport() throws {
        let (w, _) = try Self.world("coverage_outcomes")
        defer { w.stop() }
        #expect(try w.night().status == 0)
        let respond = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress"])
        #expect(respond.status == 0, "\(respond.stderr)")
        // A day later: the outcomes of the requests answered are listed (12 to 18 hours after
        // each request), the refunds among them stored from their REFUND notifications.
        let later = "2026-11-22T03:00:00Z"
        let r = try w.run(["run", "--as-of", later, "--out", w.out.path, "--no-progress", "--timeout-ms", "3000",
                           "--retry-base-ms", "20"])
        #expect(r.status == 0, "\(r.stderr)")
        let refunded = try w.t.int("""
            SELECT count(*) FROM recon.notifications WHERE notification_type = 'REFUND'
              AND signed_date_ms >= 1795230000000 AND signed_date_ms < 1795316400000
            """)
        #expect(refunded > 0, "no refund from a consumption outcome to show")
        let rows = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-22"), Self.file)
        let missing = rows.filter { (Int($0["job_units_refunded"] ?? "") ?? 0) > (Int($0["apple_units_refunded"] ?? "") ?? 0) }
        #expect(missing.isEmpty, "refunds the job knows and Apple's report lacks: \(missing)")
    }

    @Test("--sales-report-timezone UTC for the seed, the simulator and the night: the days move, the files still agree")
    func anotherZone() throws {
        let (w, zone) = try Self.world("coverage_utc", zone: "UTC")
        defer { w.stop() }
        let r = try w.night(zone)
        #expect(r.status == 0, "\(r.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        let got = NightTests.read(day.appendingPathComponent(Self.file))
        let want = NightTests.read(w.expected.appendingPathComponent(Self.file))
        #expect(got == want, "\(Self.file) differs from the generator's truth\n\(NightTests.diff(got, want))")
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let coverage = try #require(summary["coverage"] as? [String: Any])
        #expect(coverage["time_zone"] as? String == "UTC" && coverage["to"] as? String == "2026-11-20", "\(coverage)")
    }

    @Test("three apps (IAP_BUNDLE_IDS, the simulator serving each): one vendor's reports of every app, coverage.csv equals the expected file")
    func threeApps() throws {
        let issuer = "69a6de70-03db-47e3-e053-5b8c7c11a4d1", keyID = "TEAMKEY123"
        let dir = try Harness.scratchDirectory("coverage-apps-team")
        let team = dir.appendingPathComponent("team.p8")
        #expect(try runTool("iap-sim", ["keygen", "--out", team.path], environment: ProcessInfo.processInfo.environment).status == 0)
        let w = try ManyAppsTests.apps("coverage_apps", simArguments: ["--connect-key", team.path, "--connect-key-id", keyID,
                                                                      "--connect-issuer", issuer, "--connect-vendor", Self.vendor])
        defer { w.stop() }
        let env = w.env.merging(["ASC_ISSUER_ID": issuer, "ASC_KEY_ID": keyID, "ASC_PRIVATE_KEY_FILE": team.path,
                                 "ASC_VENDOR_NUMBER": Self.vendor, "ASC_API_URL": "http://127.0.0.1:\(w.sim.port)"]) { $1 }
        let out = w.dir.appendingPathComponent("out")
        let r = try runTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", out.path, "--no-progress"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let day = out.appendingPathComponent("2026-11-21")
        let got = NightTests.read(day.appendingPathComponent(Self.file))
        let want = NightTests.read(w.dir.appendingPathComponent(Self.file))
        #expect(got == want, "\(Self.file) differs from the generator's truth\n\(NightTests.diff(got, want))")
        // Products of more than one app differ somewhere, so every app's reports were read.
        let apps = Set(LookupAgreesTests.report(day, Self.file).compactMap { row in
            ManyAppsTests.apps.first { (row["product_id"] ?? "").hasPrefix($0 + ".") } })
        #expect(apps.count > 1, "\(apps)")
    }
}
