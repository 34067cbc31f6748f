// The source relations of a seed in PostgreSQL: made afresh (a view or table of the same name
// dropped first), filled by COPY FROM STDIN, streaming (one pass over the users per relation,
// each pass on its own connection and thread), then indexed and analysed.

import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Synchronization

enum SeedTables {
    /// The four source relations of the contract.
    static let relations = ["iap_products", "iap_orders", "iap_receipts", "iap_grants"]

    /// Makes and fills the relations of `plan` in `schema` (checked and quoted: `Seeder.ident`);
    /// returns the rows written per relation.
    static func load(
        _ plan: ScenarioPlan, settings: GeneratorSettings, options: SeedOptions, play: PlayWorld? = nil, schema s: SQL,
        signer: UploadSigner?, refundLines: String,
        progress: @escaping @Sendable (String) -> Void
    ) throws -> [String: Int] {
        // Tables.
        let setup = try PGConnection(conninfo: options.conninfo)
        defer { setup.close() }
        try setup.execute("CREATE SCHEMA IF NOT EXISTS \(s)")
        for rel in relations + ["iap_consents", "iap_consumption", "sim_truth"] {
            let kind = try setup.query(
                """
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
        try setup.execute(
            """
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
        if play != nil {
            // A shop selling on both stores: every row names its store (contract, "Two stores in
            // one shop"); the App Store's rows, loaded as always, take the default.
            for rel in relations {
                try setup.execute("ALTER TABLE \(s).\(ident: rel) ADD COLUMN store text DEFAULT 'app_store'")
            }
        }
        if options.truthTable {
            try setup.execute(
                """
                CREATE TABLE \(s).sim_truth (receipt_id text, transaction_id text, original_transaction_id text,
                    product_id text, quantity int, purchase_date timestamptz, original_purchase_date timestamptz,
                    expires_date timestamptz, cancellation_date timestamptz, cancellation_reason text,
                    is_trial_period boolean, web_order_line_item_id text, environment text, bundle_id text,
                    forced_status int, style text, late boolean)
                """)
        }

        // COPY, one pass per relation, each on its own connection.
        let refunds = RefundList.parse(refundLines)
        let servedRefunds = options.refundsPath != nil ? refunds : [:]
        var passes: [(String, @Sendable (PGCopyWriter, UserData) throws -> Int)] = [
            (
                "iap_orders",
                { w, d in
                    for o in d.orders {
                        try w.row([
                            o.orderID, o.userID, o.productID, String(o.quantity), o.status, o.transactionID,
                            UTC.sqlTimestamp(o.createdAt),
                        ])
                    }
                    return d.orders.count
                }
            ),
            (
                "iap_receipts",
                { w, d in
                    for r in d.receipts {
                        try w.row([
                            r.receiptID, r.userID, r.orderID, r.transactionID, r.receiptData(signer, storefront: d.storefront(of:)),
                            UTC.sqlTimestamp(r.submittedAt), r.verifyStatus.map { String($0) },
                        ])
                    }
                    return d.receipts.count
                }
            ),
            (
                "iap_grants",
                { w, d in
                    for g in d.grants {
                        try w.row([
                            g.grantID, g.userID, g.orderID, g.productID, g.transactionID, g.originalTransactionID,
                            String(g.quantity), UTC.sqlTimestamp(g.grantedAt), g.revokedAt.map(UTC.sqlTimestamp),
                        ])
                    }
                    return d.grants.count
                }
            ),
        ]
        if settings.apiSweeps {
            // The shop's data for answering Apple's consumption requests (only with a truth: without
            // one no request exists). The settings are captured as a value: each pass recomputes.
            let requestSettings = settings
            passes.append(
                (
                    "iap_consents",
                    { w, d in
                        let rows = ConsumptionRequests.consents(
                            ConsumptionRequests.facts(d, settings: requestSettings),
                            settings: requestSettings)
                        for r in rows { try w.row([r.user, UTC.sqlTimestamp(r.at)]) }
                        return rows.count
                    }
                ))
            passes.append(
                (
                    "iap_consumption",
                    { w, d in
                        let rows = ConsumptionRequests.consumption(
                            ConsumptionRequests.facts(d, settings: requestSettings),
                            settings: requestSettings)
                        for r in rows { try w.row([r.tid, r.percentage.map { String($0) }, r.status]) }
                        return rows.count
                    }
                ))
        }
        if options.truthTable {
            passes.append(
                (
                    "sim_truth",
                    { w, d in
                        var n = 0
                        for r in d.receipts {
                            guard let sim = r.sim else { continue }
                            for t in sim.txs {
                                let refund = servedRefunds[t.tid]
                                try w.row([
                                    sim.rid, t.tid, t.otid, t.pid, String(t.qty), UTC.sqlTimestamp(t.pd),
                                    UTC.sqlTimestamp(t.opd), t.exp.map(UTC.sqlTimestamp),
                                    refund.map { UTC.sqlTimestamp($0.cancellationDateMs) }, refund?.reason,
                                    t.trial ? "t" : "f", t.wol, sim.env, sim.bundle, sim.st.map { String($0) },
                                    sim.style.rawValue, (t.late ?? false) ? "t" : "f",
                                ])
                                n += 1
                            }
                        }
                        return n
                    }
                ))
        }
        let columns: [String: SQL] = [
            "iap_orders": "order_id, user_id, product_id, quantity, status, transaction_id, created_at",
            "iap_receipts": "receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status",
            "iap_grants":
                "grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at, revoked_at",
            "iap_consents": "user_id, consented_at",
            "iap_consumption": "transaction_id, consumption_percentage, delivery_status",
            "sim_truth":
                "receipt_id, transaction_id, original_transaction_id, product_id, quantity, purchase_date, original_purchase_date, expires_date, cancellation_date, cancellation_reason, is_trial_period, web_order_line_item_id, environment, bundle_id, forced_status, style, late",
        ]

        // Products first (tiny).
        let productRows = settings.productRows + plan.badRowData().products
        try setup.copyIn(
            """
            COPY \(s).iap_products (product_id, product_type, bundle_id, price, currency, sample_content_provided) FROM STDIN
            """
        ) { w in
            for p in productRows {
                let sample = ConsumptionRequests.sampleContentProvided(p.productID, apps: settings.apps)
                try w.row([
                    p.productID, p.productType, p.bundleID, p.listPrice.map(MoneyText.sqlNumeric), p.currency,
                    sample.map { $0 ? "t" : "f" },
                ])
            }
        }
        var rows = ["iap_products": productRows.count]

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
        for (k, v) in counts.withLock({ $0 }) { rows[k] = v }
        if let play { try loadPlay(play, setup, schema: s, rows: &rows) }

        // Indexes (after the load: faster) and statistics.
        progress("indexes")
        try setup.execute(
            """
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
        return rows
    }

    /// Google Play's rows, after the App Store's, each with `store = 'google_play'`.
    static func loadPlay(_ play: PlayWorld, _ db: PGConnection, schema s: SQL, rows: inout [String: Int]) throws {
        let tables: [(String, SQL, [PlayRow])] = [
            ("iap_products", "product_id, product_type, bundle_id, price, currency, sample_content_provided", play.products),
            ("iap_orders", "order_id, user_id, product_id, quantity, status, transaction_id, created_at", play.orders),
            ("iap_receipts", "receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status", play.receipts),
            (
                "iap_grants",
                "grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at, revoked_at",
                play.grants
            ),
        ]
        for (rel, columns, cells) in tables {
            try db.copyIn("COPY \(s).\(ident: rel) (\(columns), store) FROM STDIN") { w in
                for row in cells { try w.row(row + ["google_play"]) }
            }
            rows[rel, default: 0] += cells.count
        }
    }
}
