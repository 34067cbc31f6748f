import AppStore
import AppStoreSimulator
import Foundation
import Postgres
import Testing

/// "Right to the row": an App Store that answers only garbage (HTTP 200, bodies Apple never sends)
/// gets nothing believed — no valid verdict, no compensation, no clawback, every receipt it was
/// asked about left unresolved with the parser's problem — and a healthy App Store afterwards
/// gives exactly the generator's truth.
@Suite("Garbage answers end to end", .serialized, .enabled(if: Harness.hasDatabase))
struct GarbageAnswerTests {
    static let asOf = NightTests.asOf
    static let bundle = NightTests.bundle

    /// The rows of an RFC 4180 file (header included), cells unquoted.
    static func csvRows(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var cell = ""
        var quoted = false
        var chars = Array(text)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { cell.append("\""); chars.removeFirst() } else { quoted = false }
                } else {
                    cell.append(c)
                }
            } else if c == "\"" {
                quoted = true
            } else if c == "," {
                row.append(cell)
                cell = ""
            } else if c == "\r\n" || c == "\n" {
                row.append(cell)
                rows.append(row)
                row = []
                cell = ""
            } else {
                cell.append(c)
            }
        }
        if !cell.isEmpty || !row.isEmpty { row.append(cell); rows.append(row) }
        return rows
    }

    @Test("only garbage: nothing believed, every receipt asked is unresolved; healthy again: the generator's truth")
    func garbageThenHealthy() throws {
        let t = try TestDatabase("garbage")
        defer { t.drop() }
        let expected = try Harness.scratchDirectory("garbage-expected")
        let refunds = expected.appendingPathComponent("refund-list.csv")
        let seeded = try runTool("iap-sim", ["seed", "--users", "600", "--seed", "42", "--as-of", Self.asOf,
                                             "--bundle", Self.bundle, "--refunds", refunds.path,
                                             "--expected", expected.path], environment: t.environment())
        #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        let out = try Harness.scratchDirectory("garbage-reports")
        let day = out.appendingPathComponent("2026-11-21")
        // Unresolved receipts are asked again at once, and so is the refund sweep.
        let arguments = ["run", "--as-of", Self.asOf, "--out", out.path, "--no-progress", "--timeout-ms", "2000",
                         "--retry-base-ms", "20", "--retry-delay-minutes", "0", "--sweep-interval-hours", "0"]

        // The night against an App Store that answers only garbage.
        let garbage = try SimulatorProcess(["--refunds", refunds.path, "--garbage", "--seed", "5"])
        let first = try runTool("iap-reconcile", arguments,
                                environment: t.environment(garbage.urls.merging(["IAP_BUNDLE_IDS": Self.bundle]) { $1 }))
        garbage.stop()
        #expect(first.status == 0, "\(first.stderr)")
        let calls = garbage.calls()
        #expect(calls.count > 100, "too few calls to prove anything: \(calls.count)")
        #expect(calls.allSatisfy { $0.outcome.hasPrefix("garbage:") })
        #expect(Set(calls.map(\.outcome)).count > 40, "the simulator served too few different bodies")

        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE verdict = 'valid'") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE definitive") == 0)
        #expect(try t.int("SELECT count(*) FROM recon.verify_attempts WHERE answer_class <> 'retry'") == 0)
        for file in ["compensate.csv", "clawback.csv"] {
            let rows = Self.csvRows(NightTests.read(day.appendingPathComponent(file)))
            #expect(rows.count == 1, "\(file) has rows after a night of garbage: \(rows.dropFirst().prefix(3))")
        }

        // Every receipt asked about: not believed, its last error one of the parser's problems.
        let problems = Set(HostileAnswers.all.map {
            VerifyReceipt.classify(httpStatus: 200, body: $0.bytes, environment: .production,
                                   allowedBundles: [Self.bundle]).problem ?? "-"
        })
        // What the job asked, by its own receipt ids (a token uploaded twice carries the first
        // upload's id to the simulator, so the call log is not the place to look).
        let sent = Set(try column(t, "SELECT DISTINCT receipt_id FROM recon.verify_attempts"))
        #expect(sent.count >= Set(calls.map(\.rid)).subtracting(["-"]).count)
        let unresolvedRows = Self.csvRows(NightTests.read(day.appendingPathComponent("unresolved.csv")))
        #expect(unresolvedRows.first == ["receipt_id", "user_id", "order_id", "transaction_id", "attempts", "last_status",
                                         "last_error", "last_attempt_at"])
        var unresolved: [String: String] = [:]
        for row in unresolvedRows.dropFirst() where row.count == 8 { unresolved[row[0]] = row[6] }
        // Receipts settled at upload (status 0/21006 with an active grant) are asked only by the
        // refund sweep; they are not unresolved in contract §2's sense, and stay settled.
        let settled = Set(try column(t, """
            SELECT r.receipt_id FROM iap_receipts r
            WHERE coalesce(r.verify_status, -1) IN (0, 21006) AND EXISTS (
                SELECT 1 FROM iap_grants g WHERE g.transaction_id = r.transaction_id AND g.revoked_at IS NULL)
            """))
        let asked = sent.subtracting(settled)
        #expect(asked.count > 50, "too few unresolved receipts were asked: \(asked.count)")
        #expect(!sent.intersection(settled).isEmpty, "the refund sweep was not exercised")
        let missing = asked.subtracting(unresolved.keys)
        #expect(missing.isEmpty, "asked but not in unresolved.csv: \(missing.sorted().prefix(5))")
        #expect(Set(unresolved.keys).isSubset(of: sent), "unresolved receipts never asked: \(Set(unresolved.keys).subtracting(sent).sorted().prefix(5))")
        for rid in asked.sorted() {
            let error = unresolved[rid] ?? ""
            #expect(problems.contains(error), "\(rid): last_error '\(error)' is not a parser problem")
        }
        let lastErrors = try column(t, "SELECT coalesce(last_error, '') FROM recon.receipt_state")
        #expect(lastErrors.count == sent.count)
        for error in Set(lastErrors) {
            #expect(problems.contains(error), "receipt_state.last_error '\(error)' is not a parser problem")
        }

        // The same night against a healthy App Store: exactly the generator's truth.
        let healthy = try SimulatorProcess(["--refunds", refunds.path])
        defer { healthy.stop() }
        let second = try runTool("iap-reconcile", arguments,
                                 environment: t.environment(healthy.urls.merging(["IAP_BUNDLE_IDS": Self.bundle]) { $1 }))
        #expect(second.status == 0, "\(second.stderr)")
        #expect(healthy.calls().count >= asked.count)
        NightTests.expectReportsMatchTruth(day, expected: expected)
        #expect(try t.int("SELECT count(*) FROM recon.receipt_state WHERE verdict = 'valid'") > 0)
    }
}
