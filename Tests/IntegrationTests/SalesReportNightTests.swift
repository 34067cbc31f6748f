// Apple's sales reports end to end: the built job downloads Apple's daily Summary Sales Report over real
// HTTP into the real Postgres. The simulator's /v1/salesReports is built in parallel (another
// branch), so App Store Connect is played here by a loopback HTTP server serving fixed gzip files
// (LoopbackHTTPServer); the rest of the night (verifyReceipt) is the simulator's.

import AppStore
import AppStoreSimulator
import Foundation
import Postgres
import Testing
import TransportCore

@testable import NightLearn
@testable import StoreIO

@Suite("Apple's sales reports in the night", .serialized, .enabled(if: Harness.hasDatabase))
struct SalesReportNightTests {
    typealias N = NightTests
    typealias R = SalesReportGzipTests
    static let vendor = "85012345"
    /// 2026-11-20 19:00 PST: the window's days of `--window-days 5` are 11-15 … 11-19; the 404 rule
    /// keeps 11-17 (ended 67 h before) and not 11-18 (43 h).
    static let asOf = N.asOf

    /// What the loopback App Store Connect answers, changeable between nights.
    final class Apple: @unchecked Sendable {
        let lock = NSLock()
        var files: [String: [UInt8]] = [:]
        /// Days answered 429 once (then their file).
        var rateLimitedOnce: Set<String> = []
        /// Days answered 503 once (then their file).
        var unavailableOnce: Set<String> = []
        /// The version served; another one gets Apple's 400 naming it.
        var version = "1_1"
        /// Every request answered with this status (401, 403) when set.
        var refuseWith: Int?
        /// Each answer waits this long first (a run to kill in the middle).
        var delayMs = 0

        func answer(_ r: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Response {
            let delay = lock.withLock { delayMs }
            if delay > 0 { usleep(UInt32(delay) * 1000) }
            return lock.withLock {
                let limit = [("X-Rate-Limit", "user-hour-lim:3500;user-hour-rem:3400;")]
                func error(_ status: Int, _ code: String, _ detail: String) -> LoopbackHTTPServer.Response {
                    .init(status: status, headers: limit + [("Content-Type", "application/json")],
                          body: Array(#"{"errors":[{"id":"x","status":"\#(status)","code":"\#(code)","title":"t","detail":"\#(detail)"}]}"#.utf8))
                }
                if let status = refuseWith { return error(status, status == 401 ? "NOT_AUTHORIZED" : "FORBIDDEN_ERROR", "refused") }
                let q = r.query
                guard r.path == "/v1/salesReports", q["filter[frequency]"] == "DAILY", q["filter[reportType]"] == "SALES",
                      q["filter[reportSubType]"] == "SUMMARY", q["filter[vendorNumber]"] == SalesReportNightTests.vendor,
                      let day = q["filter[reportDate]"] else {
                    return error(400, "PARAMETER_ERROR.INVALID", "bad filters")
                }
                guard q["filter[version]"] == version else {
                    return error(400, "PARAMETER_ERROR.INVALID",
                                 "The version parameter you have specified is invalid. The latest version for this report is \(version).")
                }
                if rateLimitedOnce.remove(day) != nil {
                    let until = Int64(Date().timeIntervalSince1970 * 1000) + 300
                    var e = error(429, "RATE_LIMIT_EXCEEDED", "slow down")
                    e.headers.append(("Retry-After", String(until)))
                    return e
                }
                if unavailableOnce.remove(day) != nil {
                    return .init(status: 503, headers: limit, body: Array("<html>Service Unavailable</html>".utf8))
                }
                guard let file = files[day] else { return error(404, "NOT_FOUND", "There were no sales for the date specified.") }
                return .init(status: 200, headers: limit + [("Content-Type", "application/a-gzip")], body: file)
            }
        }
    }

    struct World {
        var night: N.World
        let apple: Apple
        let server: LoopbackHTTPServer
        var env: [String: String]
        var products: [String]

        func run(_ extra: [String] = [], environment: [String: String]? = nil) throws -> ProcessResult {
            try night.run((extra.contains("--window-days") ? [] : ["--window-days", "5"]) + extra, environment: environment ?? env)
        }

        func summary() throws -> [String: Any] {
            let url = night.out.appendingPathComponent("2026-11-21/summary.json")
            return try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
        }

        func sales() throws -> [String: Any] { try summary()["sales_reports"] as? [String: Any] ?? [:] }

        func stop() {
            server.stop()
            night.stop()
        }
    }

    static func world(_ label: String) throws -> World {
        let night = try N.world(label, users: 60)
        let apple = Apple()
        let server = try LoopbackHTTPServer { apple.answer($0) }
        let key = night.expected.appendingPathComponent("team.p8")
        try APICredentials.newPrivateKeyPEM().write(to: key, atomically: true, encoding: .utf8)
        let r = try night.t.db.query("SELECT DISTINCT product_id FROM public.iap_products ORDER BY 1")
        let products = (0..<r.rowCount).compactMap { r.value($0, 0) }
        var env = night.env
        env["ASC_ISSUER_ID"] = "69a6de70-03db-47e3-e053-5b8c7c11a4d1"
        env["ASC_KEY_ID"] = "TEAMKEY123"
        env["ASC_PRIVATE_KEY_FILE"] = key.path
        env["ASC_VENDOR_NUMBER"] = vendor
        env["ASC_API_URL"] = server.url
        return World(night: night, apple: apple, server: server, env: env, products: products)
    }

    /// The days' files: 11-15 in order A (two products of ours, a restore, the app's own row, a
    /// SKU of no product of ours, a subscription type), 11-16 in order B (a refund, a CMB credit);
    /// 11-17 and 11-18 without sales (404); 11-19 a truncated download.
    static func files(_ products: [String]) -> [String: [UInt8]] {
        typealias T = SalesFixtures
        let (p0, p1) = (products[0], products[1])
        let a = T.file(T.orderA, [
            T.row(sku: p0, type: "IA1", units: "3", proceeds: "0.70", begin: "11/15/2026", end: "11/15/2026"),
            T.row(sku: p1, type: "IAY", units: "1", proceeds: "105", begin: "11/15/2026", end: "11/15/2026",
                  customerCurrency: "JPY", country: "JP", proceedsCurrency: "JPY", price: "150"),
            T.row(sku: p0, type: "IA3", units: "1", proceeds: "0", begin: "11/15/2026", end: "11/15/2026", price: "0"),
            T.row(sku: "game", type: "1F", units: "4", proceeds: "0", begin: "11/15/2026", end: "11/15/2026", price: "0"),
            T.row(sku: "com.other.app.coins", type: "IA1", units: "2", begin: "11/15/2026", end: "11/15/2026"),
        ])
        let b = T.file(T.orderB, [
            T.row(sku: p0, type: "IA1", units: "-1", proceeds: "0.70", begin: "11/16/2026", end: "11/16/2026", price: "-0.99"),
            T.row(sku: p0, type: "IA1", units: "-1", proceeds: "0.70", begin: "11/16/2026", end: "11/16/2026",
                  country: "DE", price: "-0.99", cmb: "CMB"),
        ], newline: "\r\n")
        let whole = Gzip.compress(T.file(T.orderA, [T.row(sku: p0, begin: "11/19/2026", end: "11/19/2026")]))
        return ["2026-11-15": Gzip.compress(a), "2026-11-16": Gzip.compress(b), "2026-11-19": Array(whole.prefix(whole.count - 9))]
    }

    static func asked(_ server: LoopbackHTTPServer) -> [String] {
        server.requests.compactMap { $0.query["filter[reportDate]"] }
    }

    @Test("days downloaded and kept: both orders, only our in-app rows, 404 rules, a truncated file an error, version fallback, 429 and 503 retried; a rerun asks only what is not held")
    func downloadAndKeep() throws {
        let w = try Self.world("sales_keep")
        defer { w.stop() }
        w.apple.files = Self.files(w.products)
        w.apple.rateLimitedOnce = ["2026-11-16"]
        w.apple.unavailableOnce = ["2026-11-15"]
        let metrics = w.night.out.appendingPathComponent("metrics.prom")
        let r = try w.run(["--metrics-file", metrics.path])
        #expect(r.status == 0, "\(r.stderr)")
        let prom = N.read(metrics)
        for line in ["iap_reconcile_sales_report_days{outcome=\"held\"} 2", "iap_reconcile_sales_report_days{outcome=\"error\"} 1",
                     "iap_reconcile_sales_report_skipped 0"] {
            #expect(prom.contains(line), "\(line) in \(prom)")
        }
        let s = try w.sales()
        #expect(s["held"] as? [String] == ["2026-11-15", "2026-11-16"])
        #expect(s["empty"] as? [String] == ["2026-11-17"])
        #expect(s["not_yet_published"] as? [String] == ["2026-11-18"])
        let errors = s["errors"] as? [[String: String]] ?? []
        #expect(errors.count == 1 && errors.first?["date"] == "2026-11-19" && errors.first?["reason"]?.contains("truncated") == true,
                "\(errors)")
        #expect(s["version"] as? String == "1_1" && s["asked"] as? Int == 5 && s["held_before"] as? Int == 0)
        #expect(s["rows_kept"] as? Int == 5 && (s["rate_limited"] as? Int ?? 0) >= 1 && (s["retried"] as? Int ?? 0) >= 2, "\(s)")
        #expect((s["window"] as? [String: String]) == ["from": "2026-11-15", "to": "2026-11-19", "time_zone": "America/Los_Angeles"])
        #expect(r.stderr.contains("a sales report day was not believed") && r.stderr.contains("2026-11-19"), "\(r.stderr)")
        #expect(!r.stderr.contains("BEGIN PRIVATE KEY"))
        // Every request: the team key's token (no bid), asking for gzip.
        for request in w.server.requests {
            #expect(request.headers["accept"] == "application/a-gzip")
            let token = request.headers["authorization"]?.dropFirst("Bearer ".count).split(separator: ".") ?? []
            let claims = token.count == 3 ? String(decoding: R.base64URL(String(token[1])), as: UTF8.self) : ""
            #expect(claims.contains(#""aud":"appstoreconnect-v1""#) && claims.contains(#""iss":"69a6de70"#) && !claims.contains("bid"),
                    "\(claims)")
        }

        let db = w.night.t.db
        #expect(try db.query("""
            SELECT to_char(report_date, 'MM-DD') || ' ' || state || ' ' || version || ' ' || file_rows || ' ' || kept_rows
            FROM recon.sales_report_days ORDER BY report_date
            """).rows.map { $0[0] ?? "" } == ["11-15 held 1_1 5 3", "11-16 held 1_1 2 2", "11-17 empty 1_1 0 0"])
        let rows = try db.query("""
            SELECT to_char(report_date, 'MM-DD'), line_number, product_id, product_type, restore, country_code, customer_currency,
                   customer_price::text, units::text, developer_proceeds::text, proceeds_currency, coalesce(cmb, '-')
            FROM recon.sales_report_rows ORDER BY report_date, line_number
            """).rows.map { $0.map { $0 ?? "" }.joined(separator: " ") }
        let (p0, p1) = (w.products[0], w.products[1])
        #expect(rows == [
            "11-15 2 \(p0) IA1 f US USD 0.9900 3.00 0.7000 USD -",
            "11-15 3 \(p1) IAY f JP JPY 150.0000 1.00 105.0000 JPY -",
            "11-15 4 \(p0) IA3 t US USD 0.0000 1.00 0.0000 USD -",
            "11-16 2 \(p0) IA1 f US USD -0.9900 -1.00 0.7000 USD -",
            "11-16 3 \(p0) IA1 f DE USD -0.9900 -1.00 0.7000 USD CMB",
        ], "\(rows)")
        #expect(try db.query("SELECT to_char(report_date, 'MM-DD') FROM recon.sales_report_errors").rows.map { $0[0] ?? "" } == ["11-19"])

        // The next run at the same as-of asks only the days not held: 11-18 (still no sales) and 11-19 (good now).
        w.apple.lock.withLock {
            w.apple.files["2026-11-19"] = Gzip.compress(SalesFixtures.file(SalesFixtures.orderA, [
                SalesFixtures.row(sku: p0, begin: "11/19/2026", end: "11/19/2026")]))
        }
        let before = Self.asked(w.server).count
        let again = try w.run()
        #expect(again.status == 0, "\(again.stderr)")
        let second = Array(Self.asked(w.server).dropFirst(before))
        #expect(Set(second) == ["2026-11-18", "2026-11-19"], "\(second)")
        let s2 = try w.sales()
        #expect(s2["held_before"] as? Int == 3 && s2["asked"] as? Int == 2 && s2["held"] as? [String] == ["2026-11-19"])
        #expect(s2["not_yet_published"] as? [String] == ["2026-11-18"] && (s2["errors"] as? [Any])?.isEmpty == true)
    }

    @Test("against the simulator's own App Store Connect (iap-sim serve --connect-key): a month held, version 1_3 learned, no day asked twice")
    func againstTheSimulator() throws {
        let dir = try Harness.scratchDirectory("sales_sim")
        let key = dir.appendingPathComponent("team.p8"), truth = dir.appendingPathComponent("apple-truth.tsv")
        try APICredentials.newPrivateKeyPEM().write(to: key, atomically: true, encoding: .utf8)
        let asc = ["ASC_ISSUER_ID": "69a6de70-03db-47e3-e053-5b8c7c11a4d1", "ASC_KEY_ID": "TEAMKEY123",
                   "ASC_PRIVATE_KEY_FILE": key.path, "ASC_VENDOR_NUMBER": Self.vendor]
        let night = try N.world("sales_sim", users: 200, seedArguments: ["--apple-truth", truth.path],
                                simArguments: ["--apple-truth", truth.path, "--api-key", key.path, "--api-key-id", "IAPKEY",
                                               "--api-issuer", asc["ASC_ISSUER_ID"]!, "--api-bundle", N.bundle,
                                               "--pki", dir.appendingPathComponent("pki").path, "--connect-key", key.path, "--connect-key-id", asc["ASC_KEY_ID"]!,
                                               "--connect-issuer", asc["ASC_ISSUER_ID"]!, "--connect-vendor", Self.vendor,
                                               "--sales-report-version", "1_3"])
        defer { night.stop() }
        var env = night.env.merging(asc) { $1 }
        env["ASC_API_URL"] = "http://127.0.0.1:\(night.sim.port)"
        let r = try night.run(["--window-days", "30"], environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        let url = night.out.appendingPathComponent("2026-11-21/summary.json")
        let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
        let s = summary["sales_reports"] as? [String: Any] ?? [:]
        #expect(s["asked"] as? Int == 30 && s["version"] as? String == "1_3" && (s["skipped"] == nil || s["skipped"] is NSNull), "\(s)")
        #expect((s["errors"] as? [Any])?.isEmpty == true, "\(s)")
        let held = s["held"] as? [String] ?? [], empty = s["empty"] as? [String] ?? [], later = s["not_yet_published"] as? [String] ?? []
        #expect(held.count + empty.count + later.count == 30 && held.count > 10, "\(s)")
        // Both column orders were read (odd and even days of the month).
        #expect(Set(held.map { Int($0.suffix(2))! % 2 }) == [0, 1], "\(held)")
        let t = night.t
        #expect(try t.int("SELECT count(*) FROM recon.sales_report_rows") > 0)
        #expect(try t.int("""
            SELECT count(*) FROM recon.sales_report_rows r WHERE NOT EXISTS (SELECT 1 FROM public.iap_products p WHERE p.product_id = r.product_id)
            """) == 0)
        // The report's sales of our products are the production purchases of the truth (the sum of their units).
        #expect(try t.int("SELECT sum(units) FILTER (WHERE units > 0 AND NOT restore)::int FROM recon.sales_report_rows") > 0)
        let again = try night.run(["--window-days", "30"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        let s2 = (try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])?["sales_reports"] as? [String: Any] ?? [:]
        #expect(s2["asked"] as? Int == later.count && s2["held_before"] as? Int == held.count + empty.count, "\(s2)")
        // The second night starts with the version learned: no refused request for it.
        #expect(s2["version"] as? String == "1_3" && s2["requests"] as? Int == s2["asked"] as? Int, "\(s2)")
    }

    @Test("a 401 (confirmed with a fresh token) or a 403: the sales reports skipped for the night, the exit code and every other report unchanged")
    func refused() throws {
        let w = try Self.world("sales_refused")
        defer { w.stop() }
        // The night without the team key, for comparison.
        var plain = w.env
        for name in JobSettings.ascVariables + ["ASC_API_URL"] { plain.removeValue(forKey: name) }
        let baseline = try w.run(environment: plain)
        #expect(baseline.status == 0, "\(baseline.stderr)")
        let day = w.night.out.appendingPathComponent("2026-11-21")
        let reports = ["compensate.csv", "clawback.csv", "refunds.csv", "unresolved.csv"].map { N.read(day.appendingPathComponent($0)) }
        let baseSkipped = try w.summary()["skipped_checks"] as? [String] ?? []

        for status in [401, 403] {
            w.apple.lock.withLock { w.apple.refuseWith = status }
            let before = w.server.requests.count
            let r = try w.run()
            #expect(r.status == baseline.status, "\(status): \(r.stderr)")
            #expect(["compensate.csv", "clawback.csv", "refunds.csv", "unresolved.csv"].map { N.read(day.appendingPathComponent($0)) }
                == reports, "\(status)")
            let summary = try w.summary()
            let skipped = summary["skipped_checks"] as? [String] ?? []
            #expect(skipped.count == baseSkipped.count + 1 && skipped.last?.hasPrefix("sales_reports (") == true
                    && skipped.last?.contains("HTTP \(status)") == true, "\(skipped)")
            let warnings = r.stderr.split(separator: "\n").filter { $0.contains("sales reports were not downloaded") }
            #expect(warnings.count == 1 && warnings[0].contains("ASC_ISSUER_ID") && warnings[0].contains("ASC_VENDOR_NUMBER"),
                    "\(r.stderr)")
            let s = summary["sales_reports"] as? [String: Any] ?? [:]
            #expect((s["not_asked"] as? [String])?.count == 5 && (s["held"] as? [String])?.isEmpty == true, "\(s)")
            // 401: the first wave (two days in flight), then again a second later with a fresh token;
            // 403: the first wave only. Nothing more: the other days are not asked.
            let sent = Array(w.server.requests.dropFirst(before))
            #expect(status == 401 ? (2...4).contains(sent.count) : (1...2).contains(sent.count), "\(status): \(sent.count)")
            if status == 401 {
                #expect(Set(sent.map { $0.headers["authorization"] ?? "" }).count == 2, "a fresh token for the second try")
            }
        }
        #expect(try w.night.t.int("SELECT count(*) FROM recon.sales_report_days") == 0)

        // App Store Connect not answering at all: the step ends, the night does not (no exit 75).
        var gone = w.env
        gone["ASC_API_URL"] = "http://127.0.0.1:9"
        let r = try w.run(environment: gone)
        #expect(r.status == baseline.status, "\(r.stderr)")
        #expect(["compensate.csv", "clawback.csv", "refunds.csv", "unresolved.csv"].map { N.read(day.appendingPathComponent($0)) }
            == reports)
        let skipped = try w.summary()["skipped_checks"] as? [String] ?? []
        #expect(skipped.last?.hasPrefix("sales_reports (") == true && skipped.last?.contains("unreachable") == true, "\(skipped)")
    }

    @Test("a run killed in the middle of the step keeps the days it stored; the next run asks none of them again")
    func killedMidStep() throws {
        let w = try Self.world("sales_killed")
        defer { w.stop() }
        let window = (10...19).map { "2026-11-\($0)" }
        w.apple.lock.withLock {
            for day in window {
                let us = day.split(separator: "-").map(String.init)
                w.apple.files[day] = Gzip.compress(SalesFixtures.file(SalesFixtures.orderA, [
                    SalesFixtures.row(sku: w.products[0], begin: "\(us[1])/\(us[2])/\(us[0])", end: "\(us[1])/\(us[2])/\(us[0])")]))
            }
            w.apple.delayMs = 400
        }
        let tool = try startTool("iap-reconcile", ["run", "--as-of", N.asOf, "--out", w.night.out.path, "--no-progress",
                                                   "--window-days", "10", "--timeout-ms", "5000"], environment: w.env)
        let deadline = Date().addingTimeInterval(120)
        var held = 0
        while Date() < deadline {
            held = (try? w.night.t.int("SELECT count(*) FROM recon.sales_report_days")) ?? 0
            if held >= 3 || !tool.process.isRunning { break }
            usleep(20_000)
        }
        tool.kill9()
        let stored = try w.night.t.db.query("SELECT to_char(report_date, 'YYYY-MM-DD') FROM recon.sales_report_days ORDER BY 1")
            .rows.map { $0[0] ?? "" }
        #expect(stored.count >= 3 && stored.count < 10, "killed too late: \(stored)")
        w.apple.lock.withLock { w.apple.delayMs = 0 }
        let before = w.server.requests.count
        let r = try w.run(["--window-days", "10"])
        #expect(r.status == 0, "\(r.stderr)")
        let asked = Set(w.server.requests.dropFirst(before).compactMap { $0.query["filter[reportDate]"] })
        #expect(asked.isDisjoint(with: stored), "asked again: \(asked.intersection(stored))")
        #expect(asked.union(stored) == Set(window))
        #expect(try w.night.t.int("SELECT count(*) FROM recon.sales_report_days WHERE state = 'held'") == 10)
        #expect(try w.night.t.int("SELECT count(*) FROM recon.sales_report_rows") == 10)
    }

    @Test("settings: some ASC_* but not all is exit 78 naming the missing ones; an unknown --sales-report-timezone is a usage error")
    func settings() throws {
        let t = try TestDatabase("sales_settings")
        defer { t.drop() }
        let out = try Harness.scratchDirectory("sales_settings")
        let env = t.environment(["ASC_ISSUER_ID": "i", "ASC_PRIVATE_KEY_FILE": "/nonexistent.p8"])
        let r = try runTool("iap-reconcile", ["run", "--no-progress", "--out", out.path], environment: env)
        let lines = r.stderr.split(separator: "\n")
        #expect(r.status == 78 && lines.count == 1, "\(r.stderr)")
        #expect(lines.first?.contains("missing: ASC_KEY_ID, ASC_VENDOR_NUMBER") == true, "\(r.stderr)")
        let zone = try runTool("iap-reconcile", ["run", "--no-progress", "--out", out.path, "--sales-report-timezone", "Mars/Olympus"],
                               environment: t.environment())
        #expect(zone.status == 64 && zone.stderr.contains("--sales-report-timezone"), "\(zone.stderr)")
        // The team key without the In-App Purchase key: a key file that is not one is 78 naming ASC_PRIVATE_KEY_FILE.
        let bad = out.appendingPathComponent("bad.p8")
        try "not a key".write(to: bad, atomically: true, encoding: .utf8)
        let key = try runTool("iap-reconcile", ["run", "--no-progress", "--out", out.path], environment: t.environment([
            "ASC_ISSUER_ID": "i", "ASC_KEY_ID": "k", "ASC_PRIVATE_KEY_FILE": bad.path, "ASC_VENDOR_NUMBER": "85012345"]))
        #expect(key.status == 78 && key.stderr.contains("ASC_PRIVATE_KEY_FILE") && !key.stderr.contains("not a key"), "\(key.stderr)")
    }
}

/// The gzip reader and the team key settings, without a database.
@Suite("Sales report files: gzip")
struct SalesReportGzipTests {
    static func base64URL(_ s: String) -> [UInt8] {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Array(Data(base64Encoded: t) ?? Data())
    }

    @Test("a gzip file read whole; truncated, trailing bytes, not gzip, too large: errors")
    func gzip() throws {
        let text = Array(String(repeating: "SKU\tUnits\n", count: 1000).utf8)
        let zipped = Gzip.compress(text)
        #expect(try Gzip.decompress(zipped) == text)
        for cut in [1, 8, zipped.count / 2] {
            #expect(throws: GzipError.self) { try Gzip.decompress(Array(zipped.dropLast(cut))) }
        }
        #expect((try? Gzip.decompress(Array(zipped.dropLast(4)))) == nil)
        #expect(throws: GzipError(reason: "bytes follow the end of the gzip stream")) { try Gzip.decompress(zipped + [0x41]) }
        #expect(throws: GzipError.self) { try Gzip.decompress(text) }
        #expect(throws: GzipError.self) { try Gzip.decompress([]) }
        #expect(throws: GzipError(reason: "the file is larger than 0 MB once decompressed")) {
            try Gzip.decompress(zipped, largest: 1000)
        }
        // A bomb: 64 MB of zeros is refused at 1 MB without reading it to its end.
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 64 << 20))
        #expect(throws: GzipError.self) { try Gzip.decompress(bomb, largest: 1 << 20) }
    }
}

/// App Store Connect's `X-Rate-Limit` through the one transport, over real HTTP: an answer saying
/// a tenth or less of the key's hour is left holds the next sales report request back.
@Suite("Sales reports: X-Rate-Limit", .serialized)
struct SalesReportRateLimitTests {
    static func gaps(remaining: Int) throws -> [Double] {
        let arrivals = Arrivals()
        let server = try LoopbackHTTPServer { _ in
            arrivals.note()
            return .init(status: 404, headers: [("X-Rate-Limit", "user-hour-lim:100;user-hour-rem:\(remaining);")],
                  body: Array(#"{"errors":[{"status":"404","detail":"There were no sales for the date specified."}]}"#.utf8))
        }
        defer { server.stop() }
        var transport = try Self.connectTransport(server.url)
        transport.hourlyPauseNs = 1_500_000_000
        let asks = (10...12).map {
            AppStoreTransportTests.Ask(SalesReportRequest.request(vendorNumber: "85012345", day: ReportDay("2026-11-\($0)")!,
                                                                  version: "1_0"))
        }
        var feed = ListFeed(asks)
        var breaker = OutageBreaker(wave: 1)
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        #expect(counts.requests == ["sales_reports": 3] && server.requests.count == 3)
        let times = arrivals.times
        return zip(times.dropFirst(), times).map { $0 - $1 }
    }

    /// One request at a time to App Store Connect at `url`, with a fresh team key.
    static func connectTransport(_ url: String) throws -> AppStoreTransport {
        var connect = AppStoreConnectSettings(
            teamKey: try AppStoreJWT.teamKey(privateKeyPEM: APICredentials.newPrivateKeyPEM(), keyID: "TEAMKEY1", issuerID: "i"),
            vendorNumber: "85012345")
        connect.baseURL = url
        var transport = AppStoreTransport(policy: RetryPolicy(maxAttempts: 2, retryBaseMs: 5, retryDelayMinutes: 10),
                                          concurrency: 1, timeoutMs: 5000, service: "App Store Connect")
        transport.connect = connect
        return transport
    }

    final class Arrivals: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Double] = []
        func note() { lock.withLock { list.append(Date().timeIntervalSince1970) } }
        var times: [Double] { lock.withLock { list } }
    }

    @Test("past the step's end nothing more is sent: the days left are dropped unasked")
    func stopSending() throws {
        let server = try LoopbackHTTPServer { _ in
            usleep(300_000)
            return .init(status: 404, body: Array(#"{"errors":[{"status":"404","detail":"no sales"}]}"#.utf8))
        }
        defer { server.stop() }
        var transport = try Self.connectTransport(server.url)
        transport.stopSendingAtNs = AppStoreTransport.monotonicNanos() + 700_000_000
        let asks = (10...19).map {
            AppStoreTransportTests.Ask(SalesReportRequest.request(vendorNumber: "85012345", day: ReportDay("2026-11-\($0)")!,
                                                                  version: "1_0"))
        }
        var feed = ListFeed(asks)
        var breaker = OutageBreaker(wave: 1)
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        #expect((2...4).contains(server.requests.count), "\(server.requests.count)")
        #expect(asks.filter { $0.answer != nil }.count == server.requests.count)
    }

    @Test("a tenth of the hour left: a pause before the next request; plenty left: none")
    func hourlyAllowance() throws {
        let low = try Self.gaps(remaining: 5)
        #expect(low.count == 2 && low.allSatisfy { $0 >= 1.3 }, "\(low)")
        let plenty = try Self.gaps(remaining: 90)
        #expect(plenty.count == 2 && plenty.allSatisfy { $0 < 1.0 }, "\(plenty)")
    }
}
