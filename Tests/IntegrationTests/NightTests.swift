import Foundation
import Reconciliation
import Testing

/// The whole night, end to end, with the built executables.
@Suite("The night end to end", .serialized, .enabled(if: Harness.hasDatabase))
struct NightTests {
    static let asOf = "2026-11-21T03:00:00Z"
    static let nextNight = "2026-11-22T03:00:00Z"
    static let bundle = "com.example.game"
    static let findingFiles = ["compensate.csv", "duplicate_grants.csv", "clawback.csv", "input_errors.csv", "refunds.csv",
                               "unattributed.csv"]

    struct World {
        let t: TestDatabase
        let sim: SimulatorProcess
        let expected: URL
        let out: URL
        var env: [String: String]

        func run(_ extra: [String] = [], asOf: String = NightTests.asOf, environment: [String: String]? = nil) throws -> ProcessResult {
            try runTool("iap-reconcile", ["run", "--as-of", asOf, "--out", out.path, "--no-progress",
                                          "--timeout-ms", "2000", "--retry-base-ms", "20"] + extra,
                        environment: environment ?? env)
        }

        func stop() {
            sim.stop()
            t.drop()
        }
    }

    /// `prepare`: what the database holds before the source data is loaded (an older job schema).
    static func world(_ label: String, users: Int = 600, seedArguments: [String] = [], simArguments: [String] = [],
                      prepare: (TestDatabase) throws -> Void = { _ in }) throws -> World {
        let t = try TestDatabase(label)
        do { try prepare(t) } catch { t.drop(); throw error }
        let expected = try Harness.scratchDirectory("\(label)-expected")
        let refunds = expected.appendingPathComponent("refund-list.csv")
        // A quarter of the users upload StoreKit 2 signed transactions, signed by this test PKI.
        let pki = expected.appendingPathComponent("pki")
        let seeded = try runTool("iap-sim", ["seed", "--users", String(users), "--seed", "42", "--as-of", asOf,
                                             "--bundle", bundle, "--refunds", refunds.path, "--expected", expected.path,
                                             "--pki", pki.path] + seedArguments,
                                 environment: t.environment())
        #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
        let sim = try SimulatorProcess(["--refunds", refunds.path] + simArguments)
        let out = try Harness.scratchDirectory("\(label)-reports")
        return World(t: t, sim: sim, expected: expected, out: out,
                     env: t.environment(sim.urls.merging([
                         "IAP_BUNDLE_IDS": bundle,
                         "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
                     ]) { $1 }))
    }

    /// Each finding file of `day` equals the generator's expected file, with the differing lines on failure.
    static func expectReportsMatchTruth(_ day: URL, expected: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        for file in findingFiles {
            let got = read(day.appendingPathComponent(file))
            let want = read(expected.appendingPathComponent(file))
            #expect(got == want, "\(file) differs from the generator's truth\n\(diff(got, want))", sourceLocation: sourceLocation)
        }
    }

    /// summary.json's `verification` counts.
    static func verification(_ summary: String) throws -> [String: Int] {
        let json = try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any]
        // Its numbers (`receipts_offline` is an object of its own).
        return (json?["verification"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
    }

    static func read(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "<missing>" }

    /// Lines that differ, for a readable failure.
    static func diff(_ a: String, _ b: String) -> String {
        let x = Set(a.components(separatedBy: "\r\n")), y = Set(b.components(separatedBy: "\r\n"))
        let missing = y.subtracting(x).sorted().prefix(5), extra = x.subtracting(y).sorted().prefix(5)
        return "missing: \(Array(missing))\nunexpected: \(Array(extra))"
    }

    @Test("every report equals the generator's expected rows; a rerun is identical; the next night keeps first_seen")
    func reportsMatchTheTruth() throws {
        let w = try Self.world("e2e")
        defer { w.stop() }
        let first = try w.run()
        #expect(first.status == 0, "\(first.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        Self.expectReportsMatchTruth(day, expected: w.expected)
        // The decide stage's working tables (NightTables.swift) are gone once the reports are written.
        #expect(try w.t.int("""
            SELECT count(*) FROM pg_tables WHERE schemaname = 'recon'
              AND tablename IN ('o', 'r', 'g', 'p', 'known_products', 'bad_o', 'bad_r', 'bad_g', 'dk_o', 'dk_r', 'dk_g', 'token_orders', 'who')
            """) == 0)
        // Every kind of finding is there (the generator makes each one).
        let compensate = Self.read(day.appendingPathComponent("compensate.csv"))
        for reason in ["paid_not_granted", "partially_granted", "revoked_not_refunded", ",exact,", ",inferred,", ",none,"] {
            #expect(compensate.contains(reason), "no \(reason) row in compensate.csv")
        }
        let duplicates = Self.read(day.appendingPathComponent("duplicate_grants.csv"))
        for kind in ["same_transaction", "restore_as_purchase", "cross_account"] {
            #expect(duplicates.contains(kind), "no \(kind) row in duplicate_grants.csv")
        }
        let clawback = Self.read(day.appendingPathComponent("clawback.csv"))
        for reason in ["refunded", "invalid_receipt", "wrong_bundle", "transaction_not_found", "sandbox_transaction"] {
            #expect(clawback.contains(reason), "no \(reason) row in clawback.csv")
        }
        let summary = Self.read(day.appendingPathComponent("summary.json"))
        #expect(summary.contains("\"exit_code\":0") && summary.contains("\"compensate\":"))
        // Signed transactions were verified offline, and the hostile ones (tampered, another
        // app's, an unknown root) rejected; none of them is an input error.
        let signed = try Self.verification(summary)
        #expect((signed["signed_ok"] ?? 0) > 20, "signed transactions verified: \(signed)")
        #expect((signed["signed_reject"] ?? 0) >= 3, "signed transactions rejected: \(signed)")
        let receiptDataErrors = Self.read(day.appendingPathComponent("input_errors.csv"))
            .components(separatedBy: "\r\n").filter { $0.hasPrefix("iap_receipts,") && $0.contains(",receipt_data,") }
        #expect(receiptDataErrors.count == 1, "only the generator's one bad receipt_data: \(receiptDataErrors)")
        // The conservation tally: every source row in exactly one bucket.
        let tally = try RightToTheRowTests.tally(day.appendingPathComponent("summary.json"))
        for relation in ["iap_products", "iap_orders", "iap_receipts", "iap_grants"] {
            let buckets = try #require(tally[relation])
            let rows = try w.t.int("SELECT count(*) FROM \(ident: relation)")
            #expect(buckets["rows"] == rows && buckets.filter { $0.key != "rows" }.values.reduce(0, +) == rows,
                    "\(relation): \(buckets)")
        }

        // The same --as-of again, from stored answers: the same files, byte for byte.
        let before = Dictionary(uniqueKeysWithValues: (Self.findingFiles + ["unresolved.csv"]).map {
            ($0, Self.read(day.appendingPathComponent($0)))
        })
        let callsBefore = w.sim.calls().count
        let again = try w.run()
        #expect(again.status == 0, "\(again.stderr)")
        for (file, text) in before {
            #expect(Self.read(day.appendingPathComponent(file)) == text, "\(file) changed on a rerun")
        }
        #expect(w.sim.calls().count == callsBefore, "a rerun asked the App Store again about resolved receipts")

        // The next night: findings still open keep the first night's date.
        let next = try w.run(["--no-verify"], asOf: Self.nextNight)
        #expect(next.status == 0, "\(next.stderr)")
        let nextCompensate = Self.read(w.out.appendingPathComponent("2026-11-22/compensate.csv"))
        let rows = nextCompensate.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
        #expect(!rows.isEmpty)
        let firstSeen = try #require(ReportFile.compensate.firstSeenIndex)
        for row in rows {
            // Generated ids, dates and amounts hold no comma: a plain split finds the column.
            let cells = row.split(separator: ",", omittingEmptySubsequences: false)
            #expect(cells.count == ReportFile.compensate.columns.count && cells[firstSeen] == "2026-11-21",
                    "first_seen moved: \(row)")
        }
    }

    @Test("the findings benchmark's data (--extra-findings 3): the reports equal the generator's truth")
    func extraFindings() throws {
        let w = try Self.world("extra", users: 400, seedArguments: ["--extra-findings", "3"])
        defer { w.stop() }
        // A third of the window's orders to compensate holds the night (docs/contract.md, "Held
        // nights"): its reports go under held/, none to the date folder people open.
        let held = try w.run()
        #expect(held.status == 65, "\(held.stderr)")
        #expect(held.stderr.contains("held") && held.stderr.contains("compensate") && held.stderr.contains("--hold-findings-percent"),
                "\(held.stderr)")
        #expect(FileManager.default.fileExists(atPath: w.out.appendingPathComponent("held/2026-11-21/compensate.csv").path))
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("2026-11-21").path))
        // The same data with the share rule lifted: published, and right to the row.
        let night = try w.run(["--hold-findings-percent", "100"])
        #expect(night.status == 0, "\(night.stderr)")
        #expect(!FileManager.default.fileExists(atPath: w.out.appendingPathComponent("held/2026-11-21").path))
        let day = w.out.appendingPathComponent("2026-11-21")
        Self.expectReportsMatchTruth(day, expected: w.expected)
        // The extras are there: two missed orders and one repeated grant for each of the 223 clean
        // consumable users (516 compensate and 357 duplicate_grants rows; the scenarios alone give 70 and 28).
        func rows(_ file: String) -> Int {
            Self.read(day.appendingPathComponent(file)).components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }.count
        }
        #expect(rows("compensate.csv") > 400 && rows("duplicate_grants.csv") > 200,
                "compensate \(rows("compensate.csv")), duplicate_grants \(rows("duplicate_grants.csv"))")
    }

    @Test("a finding that disappears is closed, and comes back with its old first_seen")
    func findingsHistory() throws {
        let w = try Self.world("history", users: 300)
        defer { w.stop() }
        #expect(try w.run().status == 0)
        let key = try w.t.scalar("SELECT finding_key FROM recon.findings WHERE report = 'clawback.csv' ORDER BY 1 LIMIT 1")
        let grant = try #require(key).split(separator: "|").last.map(String.init)
        // Support revokes the grant: the finding closes the next night.
        try w.t.db.query("UPDATE iap_grants SET revoked_at = now() WHERE grant_id = \(grant)")
        #expect(try w.run(["--no-verify"], asOf: Self.nextNight).status == 0)
        #expect(try w.t.scalar("SELECT closed_on::text FROM recon.findings WHERE finding_key = \(key)") == "2026-11-22")
        // Someone re-grants by mistake: it reopens with its first date.
        try w.t.db.query("UPDATE iap_grants SET revoked_at = NULL WHERE grant_id = \(grant)")
        #expect(try w.run(["--no-verify"], asOf: "2026-11-23T03:00:00Z").status == 0)
        let clawback = Self.read(w.out.appendingPathComponent("2026-11-23/clawback.csv"))
        let row = clawback.components(separatedBy: "\r\n").first { $0.hasPrefix(grant! + ",") }
        let firstSeen = try #require(ReportFile.clawback.firstSeenIndex)
        let cells = row?.split(separator: ",", omittingEmptySubsequences: false) ?? []
        #expect(cells.count > firstSeen && cells[firstSeen] == "2026-11-21", "reopened row: \(row ?? "none")")
    }

    @Test("two runs at once: the second exits 75 with one line")
    func twoRunsAtOnce() throws {
        let w = try Self.world("lock", users: 400, simArguments: ["--latency-ms", "300"])
        defer { w.stop() }
        let first = try startTool("iap-reconcile", ["run", "--as-of", Self.asOf, "--out", w.out.path, "--concurrency", "2"],
                                  environment: w.env)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, w.sim.calls().isEmpty { usleep(20_000) }
        #expect(!w.sim.calls().isEmpty, "the first run never reached the App Store")
        let second = try w.run()
        #expect(second.status == 75)
        let lines = second.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("another iap-reconcile run holds the lock"), "\(second.stderr)")
        first.kill9()
    }

    @Test("a source relation missing a column: exit 65 naming it")
    func missingColumn() throws {
        let w = try Self.world("schema", users: 50)
        defer { w.stop() }
        try w.t.sourceViews("shop", ["iap_grants": """
            SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity,
                   granted_at FROM public.iap_grants
            """])
        let r = try w.run(["--source-schema", "shop"])
        #expect(r.status == 65)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("shop.iap_grants has no column revoked_at"), "\(r.stderr)")
        #expect(w.sim.calls().isEmpty, "nothing is verified when the sources are wrong")
    }

    @Test("the reports folder cannot be written: exit 73, and the previous reports stay")
    func reportsNotWritable() throws {
        let w = try Self.world("unwritable", users: 50)
        defer { w.stop() }
        let blocker = w.out.appendingPathComponent("not-a-folder")
        _ = FileManager.default.createFile(atPath: blocker.path, contents: Data("x".utf8))
        let r = try runTool("iap-reconcile", ["run", "--as-of", Self.asOf, "--out", blocker.appendingPathComponent("reports").path,
                                              "--no-progress"], environment: w.env)
        #expect(r.status == 73)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("reports cannot be written"), "\(r.stderr)")
        // The operating system's reason and the path it concerns, not a Foundation error code.
        #expect(lines.first?.contains("\(blocker.path): Not a directory") == true, "\(r.stderr)")
    }

    @Test("bad usage: exit 64")
    func badUsage() throws {
        let r = try runTool("iap-reconcile", ["run", "--as-of", "yesterday"], environment: ProcessInfo.processInfo.environment)
        #expect(r.status == 64)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("iap-reconcile: ") && lines[0].contains("--as-of"), "\(r.stderr)")
        let unknown = try runTool("iap-reconcile", ["run", "--no-such-option"], environment: ProcessInfo.processInfo.environment)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.split(separator: "\n").count == 1, "\(unknown.stderr)")
    }
}
