// Writes the scenarios into PostgreSQL (COPY FROM STDIN, streaming: one pass over the users per
// relation, each pass on its own connection and thread) and the expected report files.

import Foundation
import Synchronization
import Postgres
import Reconciliation

/// `iap-sim seed` options.
public struct SeedOptions: Sendable {
    public var users: Int = 1000
    public var seed: UInt64 = 1
    /// The job's `--as-of`; every date is relative to it.
    public var asOf: Int64
    /// The apps (`--bundle`, repeatable), the first one first: with several, every user slot
    /// plays in one of them (`GeneratorSettings.app(ofSlot:)`), and the expected files assume the
    /// job sweeps every app.
    public var bundles: [String] = ["com.example.game"]
    /// The first app.
    public var bundle: String {
        get { bundles[0] }
        set { bundles = [newValue] + bundles.dropFirst().filter { $0 != newValue } }
    }
    public var schema: String = "public"
    /// Where to write the refund list the simulator serves (`iap-sim serve --refunds`).
    public var refundsPath: String?
    /// Where to write what Apple knows (`AppleTruthFile`) for `iap-sim serve --apple-truth`.
    public var appleTruthPath: String?
    /// Where to write the expected report files of the job's first run.
    public var expectedDir: String?
    /// Also write `<schema>.sim_truth`.
    public var truthTable: Bool = false
    public var badRows: Bool = true
    /// The test PKI's folder (`TestPKI.loadOrCreate`): with it, a share of users upload StoreKit 2
    /// signed transactions and the signed scenarios play. The job needs its root.pem in
    /// `IAP_ROOT_CERTIFICATES`.
    public var pkiDirectory: String?
    /// The share of users whose uploads are signed transactions (with `pkiDirectory`).
    public var storeKit2Share = 0.25
    /// More users after the others, each with a refund only the notification history shows and
    /// an open order (so the night asks their transaction history): the Server API benchmark.
    public var apiBench = 0
    /// Every `clean_consumable` user makes this many more purchases, alternating a missed order and
    /// a duplicated grant (the findings benchmark: `make bench` with BENCH_EXTRA_FINDINGS).
    public var extraFindings = 0
    /// A user's transaction ids are `u × 20 + k` (`IDs.transaction`) and a clean consumable user
    /// already uses up to three: 17 more keep every id unique.
    public static let extraFindingsRange = 0...17
    /// libpq conninfo; nil = $DATABASE_URL, else the libpq environment.
    public var conninfo: String?

    public init(asOf: Int64) { self.asOf = asOf }
}

/// What a seed run made.
public struct SeedSummary: Sendable {
    public var users: Int = 0
    public var scenarios: [String: Int] = [:]
    public var rows: [String: Int] = [:]
    public var expected: [String: Int] = [:]
    public var refunds: Int = 0
    /// Refunds and purchases only the Server API shows (in the Apple truth).
    public var apiOnlyRefunds: Int = 0
    public var apiOnlyPurchases: Int = 0
    /// CONSUMPTION_REQUESTs in the Apple truth (ConsumptionRequests.swift): all, those older than
    /// 12 hours at as-of, those of granted purchases; `iap_consents` and `iap_consumption` rows.
    public var consumptionRequests = 0
    public var consumptionExpired = 0
    public var consumptionDelivered = 0
    public var consents = 0
    public var consumptionRows = 0
    /// Per app (by bundle id; the bad-row block counts in the first app): what it got.
    public var apps: [String: AppCounts] = [:]
}

/// One app's share of a seed (`SeedSummary.apps`).
public struct AppCounts: Sendable, Equatable {
    public var users = 0
    public var orders = 0
    public var receipts = 0
    public var grants = 0
    /// Refunds of the refund list and refunds only the Server API shows.
    public var refunds = 0
    public var apiOnlyPurchases = 0
    public var consumptionRequests = 0
    /// Expected report rows, by file name (compensate.csv…).
    public var expected: [String: Int] = [:]

    public init() {}
}

public enum Seeder {
    static let relations = ["iap_products", "iap_orders", "iap_receipts", "iap_grants"]

    /// Checks an identifier for use in SQL text (schema names cannot travel as parameters), and
    /// quotes it.
    static func ident(_ name: String) throws -> SQL {
        let ok = !name.isEmpty && name.utf8.count <= 63 && name.utf8.enumerated().allSatisfy { i, c in
            (c >= 97 && c <= 122) || c == 95 || (i > 0 && c >= 48 && c <= 57)
        }
        guard ok else { throw SimulatorError(message: "--schema must be a lower-case SQL identifier, got '\(name)'") }
        return "\(ident: name)"
    }

    public static func run(_ options: SeedOptions, progress: @escaping @Sendable (String) -> Void = { _ in }) throws
        -> SeedSummary
    {
        let bundles = options.bundles
        guard !bundles.isEmpty, Set(bundles).count == bundles.count else {
            throw SimulatorError(message: "--bundle: give each app once, at least one")
        }
        for b in bundles where b.isEmpty || b == Catalog.otherBundle || b.contains(where: { $0 == "," || $0.isWhitespace }) {
            throw SimulatorError(message: "--bundle: '\(b)' cannot be an app of the shop (\(Catalog.otherBundle) is the other app of the wrong_bundle scenarios)")
        }
        var settings = GeneratorSettings(users: options.users, seed: options.seed, asOf: options.asOf,
                                         catalog: Catalog(bundle: bundles[0]),
                                         refundsServed: options.refundsPath != nil, badRows: options.badRows)
        settings.otherApps = bundles.dropFirst().map { Catalog(bundle: $0) }
        let signer = try options.pkiDirectory.map { try UploadSigner(pki: TestPKI.loadOrCreate(directory: $0)) }
        settings.signing = signer != nil
        settings.storeKit2Share = options.storeKit2Share
        settings.apiSweeps = options.appleTruthPath != nil
        settings.apiBench = options.apiBench
        guard SeedOptions.extraFindingsRange.contains(options.extraFindings) else {
            throw SimulatorError(message: "--extra-findings must be between \(SeedOptions.extraFindingsRange.lowerBound) "
                + "and \(SeedOptions.extraFindingsRange.upperBound), got \(options.extraFindings)")
        }
        settings.extraFindings = options.extraFindings
        let plan = ScenarioPlan(settings: settings)
        let s = try ident(options.schema)
        // The expected files include refunds.csv (the report) since issue 11: a refund list of that
        // name in the same folder would be overwritten, and the simulator would then read the report
        // as its refund list. Refuse before writing anything.
        if let list = options.refundsPath, let dir = options.expectedDir,
           URL(fileURLWithPath: list).standardizedFileURL.path
            == URL(fileURLWithPath: dir).appendingPathComponent(ExpectedReport.refunds.rawValue).standardizedFileURL.path {
            throw SimulatorError(message: "--refunds \(list) is where --expected writes the expected refunds.csv report; "
                + "give the refund list another name (e.g. refund-list.csv)")
        }

        // 1. Expected files, refund list and the scenario census (in memory: findings only).
        var summary = SeedSummary()
        var expected: [ExpectedReport: [[String]]] = [:]
        var refundLines = ""
        var consumptionRows: [ConsumptionRequests.ExpectedRow] = []
        plan.forEach { d in
            if let sc = d.scenario {
                summary.scenarios[sc.rawValue, default: 0] += 1
                summary.users += sc.userSlots
            }
            var app = summary.apps[d.bundle] ?? AppCounts()
            app.users += d.scenario?.userSlots ?? 0
            app.orders += d.orders.count
            app.receipts += d.receipts.count
            app.grants += d.grants.count
            app.refunds += d.refunds.count + d.appleRefunds.count
            app.apiOnlyPurchases += d.appleOnly.count
            for (file, rows) in [(ExpectedReport.compensate, d.compensate), (.duplicateGrants, d.duplicates),
                                 (.clawback, d.clawback), (.inputErrors, d.inputErrors), (.refunds, d.refundRows),
                                 (.unattributed, d.unattributed)] {
                app.expected[file.rawValue, default: 0] += rows.count
            }
            expected[.compensate, default: []] += d.compensate
            expected[.duplicateGrants, default: []] += d.duplicates
            expected[.clawback, default: []] += d.clawback
            expected[.inputErrors, default: []] += d.inputErrors
            expected[.refunds, default: []] += d.refundRows
            expected[.unattributed, default: []] += d.unattributed
            for r in d.refunds { refundLines += RefundList.line(transactionID: r.transactionID, r.refund) }
            summary.refunds += d.refunds.count
            summary.apiOnlyRefunds += d.appleRefunds.count
            summary.apiOnlyPurchases += d.appleOnly.count
            if settings.apiSweeps {
                let facts = ConsumptionRequests.facts(d, settings: settings)
                summary.consumptionRequests += facts.count
                summary.consumptionExpired += facts.filter(\.expired).count
                summary.consumptionDelivered += facts.filter(\.delivered).count
                consumptionRows += ConsumptionRequests.expectedRows(facts, settings: settings)
                app.consumptionRequests += facts.count
                app.expected[ReportFile.consumptionRequests.rawValue, default: 0] += facts.count
            }
            summary.apps[d.bundle] = app
        }
        for file in ExpectedReport.allCases { summary.expected[file.rawValue] = expected[file]?.count ?? 0 }
        if let path = options.refundsPath {
            try write(refundLines, to: path)
        }
        if let path = options.appleTruthPath {
            let n = try AppleTruthWriter.write(plan: plan, refundsServed: options.refundsPath != nil, to: path)
            progress("apple truth: \(n) transactions in \(path)")
        }
        if let dir = options.expectedDir {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            // Every file, with its header even when no row is expected.
            for file in ExpectedReport.allCases { try writeReport(file, expected[file] ?? [], dir: dir) }
            // The night after `respond --now <as-of> --send` lists the requests (no truth: none).
            try writeConsumptionRequests(consumptionRows, dir: dir)
        }
        summary.expected[ReportFile.consumptionRequests.rawValue] = consumptionRows.count

        // 2. Tables.
        let setup = try PGConnection(conninfo: options.conninfo)
        defer { setup.close() }
        try setup.execute("CREATE SCHEMA IF NOT EXISTS \(s)")
        for rel in relations + ["iap_consents", "iap_consumption", "sim_truth"] {
            let kind = try setup.query("""
                SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = \(options.schema) AND c.relname = \(rel)
                """)
            guard kind.rowCount > 0, let k = kind.value(0, 0) else { continue }
            switch k {
            case "v": try setup.execute("DROP VIEW \(s).\(ident: rel) CASCADE")
            case "m": try setup.execute("DROP MATERIALIZED VIEW \(s).\(ident: rel) CASCADE")
            default: try setup.execute("DROP TABLE \(s).\(ident: rel) CASCADE")
            }
        }
        try setup.execute("""
            CREATE TABLE \(s).iap_products (product_id text, product_type text, bundle_id text, price numeric,
                currency text, sample_content_provided boolean);
            CREATE TABLE \(s).iap_consents (user_id text, consented_at timestamptz);
            CREATE TABLE \(s).iap_consumption (transaction_id text, consumption_percentage integer, delivery_status text);
            CREATE TABLE \(s).iap_orders (order_id text, user_id text, product_id text, quantity int, status text,
                transaction_id text, created_at timestamptz);
            CREATE TABLE \(s).iap_receipts (receipt_id text, user_id text, order_id text, transaction_id text,
                receipt_data text, submitted_at timestamptz, verify_status int);
            CREATE TABLE \(s).iap_grants (grant_id text, user_id text, order_id text, product_id text,
                transaction_id text, original_transaction_id text, quantity int, granted_at timestamptz,
                revoked_at timestamptz)
            """)
        if options.truthTable {
            try setup.execute("""
                CREATE TABLE \(s).sim_truth (receipt_id text, transaction_id text, original_transaction_id text,
                    product_id text, quantity int, purchase_date timestamptz, original_purchase_date timestamptz,
                    expires_date timestamptz, cancellation_date timestamptz, cancellation_reason text,
                    is_trial_period boolean, web_order_line_item_id text, environment text, bundle_id text,
                    forced_status int, style text, late boolean)
                """)
        }

        // 3. COPY, one pass per relation, each on its own connection.
        let refunds = RefundList.parse(refundLines)
        let servedRefunds = options.refundsPath != nil ? refunds : [:]
        var passes: [(String, @Sendable (PGCopyWriter, UserData) throws -> Int)] = [
            ("iap_orders", { w, d in
                for o in d.orders {
                    try w.row([o.orderID, o.userID, o.productID, String(o.quantity), o.status, o.transactionID,
                               UTC.sqlTimestamp(o.createdAt)])
                }
                return d.orders.count
            }),
            ("iap_receipts", { w, d in
                for r in d.receipts {
                    try w.row([r.receiptID, r.userID, r.orderID, r.transactionID, r.receiptData(signer, storefront: d.storefront(of:)),
                               UTC.sqlTimestamp(r.submittedAt), r.verifyStatus.map { String($0) }])
                }
                return d.receipts.count
            }),
            ("iap_grants", { w, d in
                for g in d.grants {
                    try w.row([g.grantID, g.userID, g.orderID, g.productID, g.transactionID, g.originalTransactionID,
                               String(g.quantity), UTC.sqlTimestamp(g.grantedAt), g.revokedAt.map(UTC.sqlTimestamp)])
                }
                return d.grants.count
            }),
        ]
        if settings.apiSweeps {
            // The shop's data for answering Apple's consumption requests (only with a truth: without
            // one no request exists). The settings are captured as a value: each pass recomputes.
            let requestSettings = settings
            passes.append(("iap_consents", { w, d in
                let rows = ConsumptionRequests.consents(ConsumptionRequests.facts(d, settings: requestSettings),
                                                        settings: requestSettings)
                for r in rows { try w.row([r.user, UTC.sqlTimestamp(r.at)]) }
                return rows.count
            }))
            passes.append(("iap_consumption", { w, d in
                let rows = ConsumptionRequests.consumption(ConsumptionRequests.facts(d, settings: requestSettings),
                                                           settings: requestSettings)
                for r in rows { try w.row([r.tid, r.percentage.map { String($0) }, r.status]) }
                return rows.count
            }))
        }
        if options.truthTable {
            passes.append(("sim_truth", { w, d in
                var n = 0
                for r in d.receipts {
                    guard let sim = r.sim else { continue }
                    for t in sim.txs {
                        let refund = servedRefunds[t.tid]
                        try w.row([sim.rid, t.tid, t.otid, t.pid, String(t.qty), UTC.sqlTimestamp(t.pd),
                                   UTC.sqlTimestamp(t.opd), t.exp.map(UTC.sqlTimestamp),
                                   refund.map { UTC.sqlTimestamp($0.cancellationDateMs) }, refund?.reason,
                                   t.trial ? "t" : "f", t.wol, sim.env, sim.bundle, sim.st.map { String($0) },
                                   sim.style.rawValue, (t.late ?? false) ? "t" : "f"])
                        n += 1
                    }
                }
                return n
            }))
        }
        let columns: [String: SQL] = [
            "iap_orders": "order_id, user_id, product_id, quantity, status, transaction_id, created_at",
            "iap_receipts": "receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status",
            "iap_grants": "grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at, revoked_at",
            "iap_consents": "user_id, consented_at",
            "iap_consumption": "transaction_id, consumption_percentage, delivery_status",
            "sim_truth": "receipt_id, transaction_id, original_transaction_id, product_id, quantity, purchase_date, original_purchase_date, expires_date, cancellation_date, cancellation_reason, is_trial_period, web_order_line_item_id, environment, bundle_id, forced_status, style, late",
        ]

        // Products first (tiny).
        let productRows = settings.productRows + plan.badRowData().products
        try setup.copyIn("""
            COPY \(s).iap_products (product_id, product_type, bundle_id, price, currency, sample_content_provided) FROM STDIN
            """) { w in
            for p in productRows {
                let sample = ConsumptionRequests.sampleContentProvided(p.productID, apps: settings.apps)
                try w.row([p.productID, p.productType, p.bundleID, p.listPrice.map(MoneyText.sqlNumeric), p.currency,
                           sample.map { $0 ? "t" : "f" }])
            }
        }
        summary.rows["iap_products"] = productRows.count

        let errors = Mutex<[Error]>([])
        let counts = Mutex<[String: Int]>([:])
        let conninfo = options.conninfo
        let allPasses = passes
        DispatchQueue.concurrentPerform(iterations: allPasses.count) { i in
            let (rel, emit) = allPasses[i]
            do {
                let db = try PGConnection(conninfo: conninfo)
                defer { db.close() }
                var n = 0
                var users = 0
                try db.copyIn("COPY \(s).\(ident: rel) (\(columns[rel]!)) FROM STDIN") { w in
                    try plan.forEach { d in
                        n += try emit(w, d)
                        users += 1
                        if users % 200_000 == 0 { progress("\(rel): \(users) users, \(n) rows") }
                    }
                }
                counts.withLock { $0[rel] = n }
            } catch {
                errors.withLock { $0.append(error) }
            }
        }
        if let first = errors.withLock({ $0.first }) { throw first }
        for (k, v) in counts.withLock({ $0 }) { summary.rows[k] = v }
        summary.consents = summary.rows["iap_consents"] ?? 0
        summary.consumptionRows = summary.rows["iap_consumption"] ?? 0

        // 4. Indexes (after the load: faster) and statistics.
        progress("indexes")
        try setup.execute("""
            CREATE INDEX ON \(s).iap_products (product_id);
            CREATE INDEX ON \(s).iap_orders (order_id);
            CREATE INDEX ON \(s).iap_orders (user_id, product_id, created_at);
            CREATE INDEX ON \(s).iap_orders (transaction_id);
            CREATE INDEX ON \(s).iap_receipts (receipt_id);
            CREATE INDEX ON \(s).iap_receipts (transaction_id);
            CREATE INDEX ON \(s).iap_receipts (order_id);
            CREATE INDEX ON \(s).iap_receipts (user_id, submitted_at);
            CREATE INDEX ON \(s).iap_receipts (submitted_at);
            CREATE INDEX ON \(s).iap_grants (grant_id);
            CREATE INDEX ON \(s).iap_grants (transaction_id);
            CREATE INDEX ON \(s).iap_grants (original_transaction_id);
            CREATE INDEX ON \(s).iap_grants (order_id);
            CREATE INDEX ON \(s).iap_grants (user_id)
            """)
        if options.truthTable {
            try setup.execute("CREATE INDEX ON \(s).sim_truth (receipt_id); CREATE INDEX ON \(s).sim_truth (transaction_id)")
        }
        try setup.execute("ANALYZE \(s).iap_products; ANALYZE \(s).iap_orders; ANALYZE \(s).iap_receipts; ANALYZE \(s).iap_grants")
        return summary
    }

    /// Rows sorted by comparing cells as UTF-8 byte arrays, first column first.
    static func sortedRows(_ rows: [[String]]) -> [[String]] {
        rows.sorted { a, b in
            for (x, y) in zip(a, b) where x != y {
                return Array(x.utf8).lexicographicallyPrecedes(Array(y.utf8))
            }
            return a.count < b.count
        }
    }

    static func writeReport(_ file: ExpectedReport, _ rows: [[String]], dir: String) throws {
        var text = CSV.record(file.columns)
        for row in sortedRows(rows) { text += CSV.record(row) }
        try write(text, to: (dir as NSString).appendingPathComponent(file.rawValue))
    }

    /// consumption_requests.csv: the night's columns, sorted as the night sorts them (by the
    /// request's time, then its notification UUID), not by the first cell.
    static func writeConsumptionRequests(_ rows: [ConsumptionRequests.ExpectedRow], dir: String) throws {
        var text = CSV.record(ReportFile.consumptionRequests.columns)
        for row in ConsumptionRequests.sorted(rows) { text += CSV.record(row.cells) }
        try write(text, to: (dir as NSString).appendingPathComponent(ReportFile.consumptionRequests.rawValue))
    }

    static func write(_ text: String, to path: String) throws {
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw SimulatorError(message: "cannot write \(path): \(error.localizedDescription)")
        }
    }
}
