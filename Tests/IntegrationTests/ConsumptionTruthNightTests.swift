import Foundation
import Testing

/// consumption_requests.csv equals the generator's truth: the sequence
/// `make demo` runs (a night at as-of, `respond --now <as-of> --send` with the default options,
/// the night again), and the second night's consumption_requests.csv equals the file
/// `iap-sim seed --expected` wrote, byte for byte.
@Suite("Refund requests: the night's file equals the generator's truth", .serialized, .enabled(if: Harness.hasDatabase))
struct ConsumptionTruthNightTests {
    static let file = "consumption_requests.csv"

    @Test("night, respond --now --send, night: consumption_requests.csv equals the expected file; the funnel counts it")
    func nightRespondNight() throws {
        let w = try ServerAPINightTests.world("consumption_truth", share: "0.25")
        defer { w.stop() }
        let first = try w.night()
        #expect(first.status == 0, "\(first.stderr)")
        let respond = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress"])
        #expect(respond.status == 0, "\(respond.stderr)")
        let second = try w.night()
        #expect(second.status == 0, "\(second.stderr)")

        let day = w.out.appendingPathComponent("2026-11-21")
        let got = NightTests.read(day.appendingPathComponent(Self.file))
        let want = NightTests.read(w.expected.appendingPathComponent(Self.file))
        #expect(got == want, "\(Self.file) differs from the generator's truth\n\(NightTests.diff(got, want))")
        // The requests change no other report.
        NightTests.expectReportsMatchTruth(day, expected: w.expected)

        // Every kind of row the generator predicts is there, so the comparison means something.
        let rows = LookupAgreesTests.report(day, Self.file)
        var answers: [String: Int] = [:], outcomes: [String: Int] = [:]
        for row in rows {
            answers[row["answer"] ?? "", default: 0] += 1
            outcomes[row["outcome"] ?? "", default: 0] += 1
        }
        #expect((answers["sent"] ?? 0) > 0 && (answers["no_consent"] ?? 0) > 0 && (answers["expired"] ?? 0) > 0, "\(answers)")
        #expect((outcomes["declined"] ?? 0) > 0 && (outcomes["pending"] ?? 0) > 0, "\(outcomes)")
        #expect(rows.contains { $0["delivery_status"] == "DELIVERED" } && rows.contains { $0["delivery_status"] == "UNDELIVERED_OTHER" },
                "\(rows.map { $0["delivery_status"] ?? "" })")

        // The funnel in summary.json counts the file.
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let funnel = try #require(summary["refund_requests"] as? [String: Any])
        #expect(funnel["requests"] as? Int == rows.count && funnel["answered_in_time"] as? Int == answers["sent"]
                && funnel["declined"] as? Int == outcomes["declined"] && funnel["pending"] as? Int == outcomes["pending"]
                && (funnel["refunded"] as? Int ?? 0) == (outcomes["refunded"] ?? 0), "\(funnel)")
    }
}
