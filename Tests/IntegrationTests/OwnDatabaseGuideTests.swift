import Foundation
import Postgres
import Testing

/// docs/own-database.md, as a studio follows it: each of its three shapes is built in a cluster
/// of its own (so the guide's roles and `DATABASE game` run as written), filled from a generated
/// night, mapped with the guide's SQL blocks exactly as the page shows them, checked and run.
/// The night over the guide's views must equal the night over the same facts in the contract's
/// own shape (the generator's tables, changed only where the shape keeps less); a mistake in
/// each shape must be caught by `check` and hold the night.
@Suite("docs/own-database.md: the guide's SQL as written, on three studio shapes", .serialized,
       .enabled(if: Harness.hasDatabase && ScratchCluster.available, "needs the test Postgres and PostgreSQL's server programs"))
struct OwnDatabaseGuideTests {
    typealias N = NightTests
    static let guide = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/own-database.md")

    /// The guide's SQL blocks with the shapes each belongs to (`<!-- test: a b -->` above the fence).
    static func blocks() throws -> [(shapes: Set<String>, sql: String)] {
        let text = try String(contentsOf: guide, encoding: .utf8)
        var result: [(Set<String>, String)] = []
        let lines = text.components(separatedBy: "\n")
        var i = 0
        while i < lines.count {
            if lines[i].trimmingCharacters(in: .whitespaces) == "```sql" {
                let tag = i > 0 ? lines[i - 1].trimmingCharacters(in: .whitespaces) : ""
                var body: [String] = []
                i += 1
                while i < lines.count, lines[i].trimmingCharacters(in: .whitespaces) != "```" { body.append(lines[i]); i += 1 }
                let shapes: Set<String> = tag.hasPrefix("<!-- test:") && tag.hasSuffix("-->")
                    ? Set(tag.dropFirst("<!-- test:".count).dropLast(3).split(separator: " ").map(String.init)) : []
                result.append((shapes, body.joined(separator: "\n")))
            }
            i += 1
        }
        return result
    }

    /// The guide's SQL for one shape, in page order.
    static func sql(_ shape: String) throws -> [String] { try blocks().filter { $0.shapes.contains(shape) }.map(\.sql) }

    /// A generated night in database `game` of a cluster of its own, and the simulator.
    final class Shop {
        let cluster: ScratchCluster
        let sim: SimulatorProcess
        let expected: URL
        let out: URL
        /// The environment of a run as postgres on `game`: the simulator, the test PKI.
        let env: [String: String]

        init(_ label: String) throws {
            cluster = try ScratchCluster.primary()
            do {
                try cluster.execute("postgres", "CREATE DATABASE game")
                expected = try Harness.scratchDirectory("\(label)-expected")
                let refunds = expected.appendingPathComponent("refund-list.csv")
                let pki = expected.appendingPathComponent("pki")
                let seeded = try runTool("iap-sim", ["seed", "--users", "600", "--seed", "42", "--as-of", N.asOf,
                                                     "--bundle", N.bundle, "--refunds", refunds.path, "--expected", expected.path,
                                                     "--pki", pki.path], environment: cluster.environment("game"))
                #expect(seeded.status == 0, "iap-sim seed: \(seeded.stderr)")
                sim = try SimulatorProcess(["--refunds", refunds.path])
                out = try Harness.scratchDirectory("\(label)-reports")
                env = cluster.environment("game").merging(sim.urls.merging([
                    "IAP_BUNDLE_IDS": N.bundle, "IAP_ROOT_CERTIFICATES": pki.appendingPathComponent("root.pem").path,
                ]) { $1 }) { $1 }
            } catch {
                cluster.stop()
                throw error
            }
        }

        func execute(_ sql: String) throws {
            let db = try cluster.connect("game")
            defer { db.close() }
            try db.execute(SQL(unsafeSQL: sql))
        }

        /// The guide's SQL as a studio runs it: psql, one statement at a time, stopping at the first error.
        func psql(_ sql: String) throws {
            let file = expected.appendingPathComponent("block-\(UUID().uuidString).sql")
            try sql.write(to: file, atomically: true, encoding: .utf8)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: (ScratchCluster.bindir ?? "") + "/psql")
            p.arguments = ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", file.path]
            p.environment = cluster.environment("game")
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            if p.terminationStatus != 0 {
                throw GuideError(message: "psql on a block of docs/own-database.md: \(message)\n\(sql.prefix(300))")
            }
        }

        func scalar(_ sql: String) throws -> String? {
            let db = try cluster.connect("game")
            defer { db.close() }
            let r = try db.query(SQL(unsafeSQL: sql))
            return r.rowCount > 0 ? r.value(0, 0) : nil
        }

        /// `iap-reconcile ARGS` with the common options of a night's run.
        func tool(_ arguments: [String], _ env: [String: String]? = nil) throws -> ProcessResult {
            try runTool("iap-reconcile", arguments, environment: env ?? self.env)
        }

        func night(_ asOf: String, _ extra: [String] = [], out: URL? = nil, env: [String: String]? = nil) throws -> ProcessResult {
            try tool(["run", "--as-of", asOf, "--out", (out ?? self.out).path, "--no-progress", "--timeout-ms", "2000",
                      "--retry-base-ms", "20"] + extra, env)
        }

        func check(_ asOf: String, _ extra: [String] = [], env: [String: String]? = nil) throws -> ProcessResult {
            try tool(["check", "--as-of", asOf, "--source-schema", "iap"] + extra, env)
        }

        /// The night over `facts` (the contract's shape, the shape's facts), in a job schema of its own.
        func expectedNight() throws -> URL {
            let folder = try Harness.scratchDirectory("facts-reports")
            let r = try night(N.asOf, ["--source-schema", "facts", "--job-schema", "recon_facts"], out: folder)
            #expect(r.status == 0, "the night over the facts: \(r.stderr)")
            return folder.appendingPathComponent("2026-11-21")
        }

        func stop() {
            sim.stop()
            cluster.stop()
        }
    }

    struct GuideError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Every finding file of `got` equals `want`'s, and the comparison is not empty.
    static func expectSameReports(_ got: URL, _ want: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for file in N.findingFiles {
            let g = N.read(got.appendingPathComponent(file)), w = N.read(want.appendingPathComponent(file))
            #expect(g == w, "\(file): the night over the guide's views differs from the night over the same facts\n\(N.diff(g, w))",
                    sourceLocation: sourceLocation)
        }
        let compensate = try csvRecords(want.appendingPathComponent("compensate.csv")).count - 1
        let clawback = try csvRecords(want.appendingPathComponent("clawback.csv")).count - 1
        #expect(compensate > 20 && clawback > 20, "a comparison of near-empty reports proves little: \(compensate), \(clawback)",
                sourceLocation: sourceLocation)
    }

    /// A view changed as the guide says to change one: CREATE OR REPLACE, which keeps its grants.
    static func replacing(_ view: String) -> String {
        view.replacingOccurrences(of: "CREATE VIEW", with: "CREATE OR REPLACE VIEW")
    }

    static func failedChecks(_ r: ProcessResult) -> [String] {
        r.stdout.split(separator: "\n").filter { $0.hasPrefix("FAILED ") }.map { String($0.dropFirst(7).prefix { $0 != ":" }) }
    }

    /// The products, as every shape keeps them.
    static let loadProducts = "INSERT INTO game.products SELECT product_id, product_type, bundle_id, price, currency FROM public.iap_products;"
    /// The facts in the contract's shape, to be changed where a shape keeps less.
    static let copyFacts = """
        CREATE SCHEMA facts;
        CREATE TABLE facts.iap_products AS SELECT * FROM public.iap_products;
        CREATE TABLE facts.iap_orders AS SELECT * FROM public.iap_orders;
        CREATE TABLE facts.iap_receipts AS SELECT * FROM public.iap_receipts;
        CREATE TABLE facts.iap_grants AS SELECT * FROM public.iap_grants;
        """

    @Test("every SQL block of the guide is run by a shape, and the shapes' views are the ones the page shows")
    func everyBlockIsTested() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 9, "\(blocks.count) blocks")
        for (n, b) in blocks.enumerated() {
            #expect(!b.shapes.isEmpty && b.shapes.isSubset(of: ["a", "b", "c"]),
                    "SQL block \(n + 1) of docs/own-database.md has no `<!-- test: ... -->` line naming its shapes:\n\(b.sql.prefix(200))")
        }
        for shape in ["a", "b", "c"] {
            let all = try Self.sql(shape).joined(separator: "\n")
            for relation in ["iap_products", "iap_orders", "iap_receipts", "iap_grants"] {
                #expect(all.contains("CREATE VIEW iap.\(relation)"), "shape \(shape) does not map \(relation)")
            }
        }
    }

    @Test("shape A (no Apple ids on orders and receipts), one database, the job's own role: check 0, a held first night released equals the facts' night; a grants view without transaction_id is caught by check and held")
    func shapeA() throws {
        let shop = try Shop("guide_a")
        defer { shop.stop() }
        for sql in try Self.sql("a") { try shop.psql(sql) }
        try shop.execute(Self.loadProducts + """
            INSERT INTO game.orders SELECT order_id, user_id, product_id, quantity,
                CASE status WHEN 'created' THEN 0 WHEN 'paid' THEN 1 WHEN 'delivered' THEN 2 WHEN 'failed' THEN 3
                            WHEN 'cancelled' THEN 4 END, created_at AT TIME ZONE 'UTC' FROM public.iap_orders;
            INSERT INTO game.receipt_uploads SELECT receipt_id, user_id, order_id, receipt_data, submitted_at, verify_status
                FROM public.iap_receipts;
            INSERT INTO game.deliveries SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
                quantity, granted_at, revoked_at FROM public.iap_grants;
            """ + Self.copyFacts + """
            UPDATE facts.iap_orders SET transaction_id = NULL;
            UPDATE facts.iap_receipts SET transaction_id = NULL;
            """)
        #expect(try shop.scalar("SELECT count(*) FROM public.iap_orders WHERE status NOT IN ('created', 'paid', 'delivered', 'failed', 'cancelled')") == "0")
        let want = try shop.expectedNight()

        // As the job's role of the guide: it reads the views only.
        var role = shop.env
        role["PGUSER"] = "iap_reconcile"
        let check = try shop.check(N.asOf, env: role)
        #expect(check.status == 0, "check: \(check.stdout)\n\(check.stderr)")
        #expect(check.stdout.contains("OK: every expectation holds"), "\(check.stdout)")
        // The guide's first night: held, looked at, released.
        let first = try shop.night(N.asOf, ["--source-schema", "iap", "--first-night=hold"], env: role)
        #expect(first.status == 65, "the guide's first night was not held: \(first.stderr)")
        #expect(FileManager.default.fileExists(atPath: shop.out.appendingPathComponent("held/2026-11-21/compensate.csv").path))
        let released = try shop.tool(["release", "2026-11-21", "--note", "first night checked", "--out", shop.out.path], role)
        #expect(released.status == 0, "\(released.stderr)")
        try Self.expectSameReports(shop.out.appendingPathComponent("2026-11-21"), want)
        #expect(try shop.scalar("SELECT count(*) FROM game.receipt_uploads") == shop.scalar("SELECT count(*) FROM public.iap_receipts"))

        // The mistake: the grants view left Apple's transaction id out.
        let views = try Self.sql("a").joined(separator: "\n\n")
        let grantsView = try #require(views.range(of: "CREATE VIEW iap.iap_grants").map { String(views[$0.lowerBound...]) })
            .components(separatedBy: "\n\n").first ?? ""
        let mistaken = grantsView.replacingOccurrences(of: "apple_transaction_id::text           AS transaction_id",
                                                       with: "NULL::text                           AS transaction_id")
        #expect(mistaken != grantsView, "the guide's grants view changed: the mistake no longer applies")
        try shop.psql(Self.replacing(mistaken))
        let caught = try shop.check(N.nextNight, ["--by", "product_id"], env: role)
        #expect(caught.status == 65, "check: \(caught.stdout)\n\(caught.stderr)")
        #expect(Self.failedChecks(caught).contains("grants_without_transaction_id"), "\(caught.stdout)")
        let findings = try shop.scalar("SELECT count(*) || ' ' || max(last_seen) FROM recon.findings")
        let held = try shop.night(N.nextNight, ["--source-schema", "iap"], env: role)
        #expect(held.status == 65, "\(held.stderr)")
        #expect(FileManager.default.fileExists(atPath: shop.out.appendingPathComponent("held/2026-11-22/summary.html").path))
        #expect(!FileManager.default.fileExists(atPath: shop.out.appendingPathComponent("2026-11-22").path))
        #expect(try HeldNightTests.heldChecks(shop.out.appendingPathComponent("held/2026-11-22")).contains("input_errors iap_grants"))
        #expect(try shop.scalar("SELECT count(*) || ' ' || max(last_seen) FROM recon.findings") == findings,
                "a held night moved the findings history")
    }

    @Test("shape B (receipts keyed by our order id): check 0 and the facts' night; receipt ids numbered with row_number() are caught by check and hold the night once old uploads are purged")
    func shapeB() throws {
        let shop = try Shop("guide_b")
        defer { shop.stop() }
        for sql in try Self.sql("b") { try shop.psql(sql) }
        // The shape keeps one upload per order and instant, with the order's owner as uploader.
        try shop.execute(Self.loadProducts + """
            INSERT INTO game.orders SELECT order_id, user_id, product_id, quantity, status, transaction_id, created_at
                FROM public.iap_orders;
            CREATE TABLE kept AS SELECT * FROM public.iap_receipts r WHERE order_id IS NOT NULL AND submitted_at IS NOT NULL
                AND (SELECT count(*) FROM public.iap_receipts d WHERE d.order_id = r.order_id AND d.submitted_at = r.submitted_at) = 1;
            INSERT INTO game.order_receipts SELECT order_id, receipt_data, transaction_id, verify_status, submitted_at FROM kept;
            INSERT INTO game.grants SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
                quantity, granted_at, revoked_at FROM public.iap_grants;
            """ + Self.copyFacts + """
            DELETE FROM facts.iap_receipts;
            INSERT INTO facts.iap_receipts
                SELECT k.order_id || '/' || (extract(epoch FROM k.submitted_at) * 1000000)::bigint,
                       (SELECT o.user_id FROM public.iap_orders o WHERE o.order_id = k.order_id),
                       k.order_id, k.transaction_id, k.receipt_data, k.submitted_at, k.verify_status
                FROM kept k;
            DROP TABLE kept;
            """)
        #expect(try Int(shop.scalar("SELECT count(*) FROM game.order_receipts") ?? "") ?? 0 > 800)
        let want = try shop.expectedNight()
        let check = try shop.check(N.asOf)
        #expect(check.status == 0, "check: \(check.stdout)\n\(check.stderr)")
        let night = try shop.night(N.asOf, ["--source-schema", "iap"])
        #expect(night.status == 0, "\(night.stderr)")
        try Self.expectSameReports(shop.out.appendingPathComponent("2026-11-21"), want)

        // The mistake: uploads numbered. A night on it is not yet wrong to see...
        let views = try Self.sql("b").joined(separator: "\n\n")
        let receiptsView = try #require(views.range(of: "CREATE VIEW iap.iap_receipts").map { String(views[$0.lowerBound...]) })
            .components(separatedBy: "\n\n").first ?? ""
        let mistaken = receiptsView.replacingOccurrences(
            of: "r.order_no || '/' || (extract(epoch FROM r.created) * 1000000)::bigint AS receipt_id",
            with: "row_number() OVER (ORDER BY r.created, r.order_no)::text AS receipt_id")
        #expect(mistaken != receiptsView, "the guide's receipts view changed: the mistake no longer applies")
        try shop.psql(Self.replacing(mistaken))
        let numbered = try shop.night(N.nextNight, ["--source-schema", "iap"])
        #expect(numbered.status == 0, "\(numbered.stderr)")
        // ...until a cleanup deletes the oldest uploads and every number moves.
        try shop.execute("DELETE FROM game.order_receipts WHERE created IN (SELECT created FROM game.order_receipts ORDER BY created LIMIT 5)")
        let caught = try shop.check(HeldNightTests.third)
        #expect(caught.status == 65, "check: \(caught.stdout)\n\(caught.stderr)")
        #expect(Self.failedChecks(caught).contains("keys_changed"), "\(caught.stdout)")
        #expect(caught.stdout.contains("iap_receipts"), "\(caught.stdout)")
        let held = try shop.night(HeldNightTests.third, ["--source-schema", "iap"])
        #expect(held.status == 65, "\(held.stderr)")
        #expect(try HeldNightTests.heldChecks(shop.out.appendingPathComponent("held/2026-11-23")).contains("keys_changed iap_receipts"))
    }

    @Test("shape C (grants from the purchase handler, a GM console and mail), read from another database as the guide's roles: check 0 and the facts' night; GM grants without the order's transaction id are caught by --by tool and hold the night; release publishes it")
    func shapeC() throws {
        let shop = try Shop("guide_c")
        defer { shop.stop() }
        for sql in try Self.sql("c") { try shop.psql(sql) }
        // A fifth of the grants that name an order are the GM console's (half with Apple's id
        // typed in), a tenth the mail system's.
        try shop.execute(Self.loadProducts + """
            INSERT INTO game.orders SELECT order_id, user_id, product_id, quantity, status, transaction_id, created_at
                FROM public.iap_orders;
            INSERT INTO game.receipts SELECT receipt_id, user_id, order_id, transaction_id, receipt_data, verify_status, submitted_at
                FROM public.iap_receipts;
            CREATE TABLE tools AS SELECT g.*, CASE WHEN g.order_id IS NULL THEN 'pay'
                                                    WHEN abs(hashtext(g.grant_id)) % 10 < 2 THEN 'gm'
                                                    WHEN abs(hashtext(g.grant_id)) % 10 = 2 THEN 'mail' ELSE 'pay' END AS tool
                FROM public.iap_grants g;
            INSERT INTO game.purchase_grants SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
                quantity, granted_at, revoked_at FROM tools WHERE tool = 'pay';
            INSERT INTO game.gm_grants SELECT grant_id, user_id, order_id, product_id,
                CASE WHEN abs(hashtext(grant_id || '/gm')) % 2 = 0 THEN transaction_id END, quantity, granted_at, revoked_at
                FROM tools WHERE tool = 'gm';
            INSERT INTO game.mail_grants SELECT grant_id, user_id, order_id, product_id, quantity, granted_at, revoked_at
                FROM tools WHERE tool = 'mail';
            """ + Self.copyFacts + """
            DELETE FROM facts.iap_grants;
            INSERT INTO facts.iap_grants SELECT (CASE tool WHEN 'pay' THEN 'pay-' WHEN 'gm' THEN 'gm-' ELSE 'mail-' END) || grant_id,
                user_id, order_id, product_id, transaction_id, CASE WHEN tool = 'pay' THEN original_transaction_id END,
                quantity, granted_at, revoked_at FROM tools;
            """)
        // The guide's loader relies on what the generator makes: a grant that names an order has the order's transaction id.
        #expect(try shop.scalar("""
            SELECT count(*) FROM tools t WHERE tool <> 'pay' AND NOT EXISTS (
                SELECT 1 FROM public.iap_orders o WHERE o.order_id = t.order_id AND o.transaction_id = t.transaction_id)
            """) == "0")
        let gmWithout = Int(try shop.scalar("SELECT count(*) FROM game.gm_grants WHERE apple_txn IS NULL") ?? "") ?? 0
        let grants = Int(try shop.scalar("SELECT count(*) FROM public.iap_grants") ?? "") ?? 1
        #expect(gmWithout * 100 > 6 * grants, "too few GM grants without Apple's id to hold a night: \(gmWithout) of \(grants)")
        try shop.execute("DROP TABLE tools")
        let want = try shop.expectedNight()

        // The guide's roles for a primary and a hot standby: the job's state in iap_jobs, the
        // views read as iap_reader (a standby replays the same roles; this reads the primary).
        var split = shop.env
        split["PGUSER"] = "iap_reconcile"
        split["PGDATABASE"] = "iap_jobs"
        split["SOURCE_DATABASE_URL"] = shop.cluster.conninfo("game", user: "iap_reader")
        let check = try shop.check(N.asOf, ["--by", "tool"], env: split)
        #expect(check.status == 0, "check: \(check.stdout)\n\(check.stderr)")
        let night = try shop.night(N.asOf, ["--source-schema", "iap"], env: split)
        #expect(night.status == 0, "\(night.stderr)")
        try Self.expectSameReports(shop.out.appendingPathComponent("2026-11-21"), want)

        // The mistake: GM grants taken as the console wrote them, without the order's id.
        let views = try Self.sql("c").joined(separator: "\n\n")
        let grantsView = try #require(views.range(of: "CREATE VIEW iap.iap_grants").map { String(views[$0.lowerBound...]) })
            .components(separatedBy: "\n\n").first ?? ""
        let mistaken = grantsView.replacingOccurrences(of: "coalesce(g.apple_txn, o.apple_txn)::text", with: "g.apple_txn::text")
        #expect(mistaken != grantsView, "the guide's grants view changed: the mistake no longer applies")
        try shop.psql(Self.replacing(mistaken))
        let caught = try shop.check(N.nextNight, ["--by", "tool"], env: split)
        #expect(caught.status == 65, "check: \(caught.stdout)\n\(caught.stderr)")
        #expect(Self.failedChecks(caught).contains("grants_without_transaction_id"), "\(caught.stdout)")
        #expect(caught.stdout.contains("by tool: gm \(gmWithout)"), "check does not say which tool: \(caught.stdout)")
        let held = try shop.night(N.nextNight, ["--source-schema", "iap"], env: split)
        #expect(held.status == 65, "\(held.stderr)")
        let folder = shop.out.appendingPathComponent("held/2026-11-22")
        #expect(try HeldNightTests.heldChecks(folder).contains("input_errors iap_grants"))
        let released = try shop.tool(["release", "2026-11-22", "--note", "GM view fixed tomorrow", "--out", shop.out.path], split)
        #expect(released.status == 0, "\(released.stderr)")
        #expect(FileManager.default.fileExists(atPath: shop.out.appendingPathComponent("2026-11-22/compensate.csv").path))
    }
}
