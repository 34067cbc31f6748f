import Foundation
import Postgres
import Testing

/// Contract §1, "Two stores in one shop": the four relations with the optional `store` column.
/// The generator's App Store shop, with `store = 'app_store'` on every row, and Google Play rows
/// beside it that would each change a list if the App Store's night read them (unpaid orders,
/// tokens that are not receipts, grants of order ids Apple never issued, the same keys and
/// product ids as the App Store's), and rows of no store. The night must publish the generator's
/// truth, name the rows of no store in input_errors.csv, count Play's rows in the tally, and ask
/// Apple nothing about them; read in place or copied through SOURCE_DATABASE_URL.
@Suite("Two stores in one shop: the App Store's night reads the App Store's rows", .serialized, .enabled(if: Harness.hasDatabase))
struct TwoStoreSourcesTests {
    typealias N = NightTests

    /// The rows of no store that `shop` adds, and the input errors of its Play rows and of them.
    static let addedErrors: Set<String> = [
        "iap_products,play.bad,product_type,google_play: product_type subscription is not one of consumable, non_consumable, auto_renewable, non_renewing",
        "iap_products,com.example.game.nostore,store,store App Store is not app_store or google_play",
        "iap_orders,PO-Q,quantity,google_play: quantity 0 is below 1",
        "iap_orders,PO-UNKNOWN,product_id,google_play: unknown product_id nowhere.product",
        "iap_orders,PO-NULL,store,store is null",
        #"iap_receipts,GP-R2,receipt_data,google_play: receipt_data is not a Google Play purchase token (1 to 2,048 letters, digits, ".", "-", "_")"#,
        "iap_receipts,GP-DUP,receipt_id,google_play: duplicate key (2 rows)",
        "iap_grants,PG-BADP,product_id,google_play: product_id play.bad has no valid row in iap_products",
        "iap_grants,PG-IOS,store,store ios is not app_store or google_play",
    ]

    /// Schema `shop`: `public`'s relations with a `store` column, and Play's rows and rows of no
    /// store. Returns the Play rows without a problem per relation.
    static func shop(_ t: TestDatabase) throws -> [String: Int] {
        var sql: SQL = "CREATE SCHEMA shop;"
        for relation in ["iap_products", "iap_orders", "iap_receipts", "iap_grants"] {
            sql += " CREATE TABLE shop.\(ident: relation) AS SELECT *, 'app_store'::varchar(20) AS store FROM public.\(ident: relation);"
        }
        try t.db.execute(sql)
        // Every App Store product id sold on Play too, of another kind (a product id sold in both
        // stores is two products), one of Play's own, one of a kind that is none.
        try t.db.execute("""
            INSERT INTO shop.iap_products (product_id, product_type, bundle_id, store)
            SELECT product_id, CASE WHEN product_type = 'consumable' THEN 'non_consumable' ELSE 'consumable' END, bundle_id, 'google_play'
            FROM (SELECT DISTINCT ON (product_id) * FROM public.iap_products WHERE product_id IS NOT NULL ORDER BY product_id) p;
            INSERT INTO shop.iap_products (product_id, product_type, bundle_id, store)
                VALUES ('play.only.gems', 'consumable', 'com.example.game', 'google_play'),
                       ('play.bad', 'subscription', 'com.example.game', 'google_play'),
                       ('com.example.game.nostore', 'consumable', 'com.example.game', 'App Store');
            """)
        let products = try t.int("SELECT count(DISTINCT product_id) FROM public.iap_products")
        let product = try #require(try t.scalar("SELECT min(product_id) FROM public.iap_products WHERE product_type = 'consumable'"))
        let order = try #require(try t.scalar("SELECT min(order_id) FROM public.iap_orders"))
        let grant = try #require(try t.scalar("SELECT min(grant_id) FROM public.iap_grants"))
        // Paid and never granted (compensations, were they Apple's), one with an App Store order's id.
        try t.db.execute("""
            INSERT INTO shop.iap_orders (order_id, user_id, product_id, quantity, status, transaction_id, created_at, store) VALUES
              (\(literal: .text(order)), 'P000001', \(literal: .text(product)), 1, 'paid', 'GPA.3301-1111-2222-33333', '2026-11-19T10:00:00Z', 'google_play'),
              ('PO-2', 'P000002', 'play.only.gems', 1, 'paid', 'GPA.3301-1111-2222-44444', '2026-11-19T10:00:00Z', 'google_play'),
              ('PO-3', 'P000003', 'play.only.gems', 1, 'created', NULL, '2026-11-20T10:00:00Z', 'google_play'),
              ('PO-4', 'P000004', 'play.only.gems', 2, 'paid', NULL, '2026-11-20T10:00:00Z', 'google_play'),
              ('PO-Q', 'P000004', 'play.only.gems', 0, 'paid', NULL, '2026-11-20T10:00:00Z', 'google_play'),
              ('PO-UNKNOWN', 'P000004', 'nowhere.product', 1, 'paid', NULL, '2026-11-20T10:00:00Z', 'google_play'),
              ('PO-NULL', 'P000005', \(literal: .text(product)), 1, 'paid', 'GPA.3301-1111-2222-55555', '2026-11-19T10:00:00Z', NULL);
            INSERT INTO shop.iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status, store) VALUES
              ('GP-R1', 'P000001', \(literal: .text(order)), 'GPA.3301-1111-2222-33333', 'opaque-token-abc.def_ghi', '2026-11-19T10:01:00Z', NULL, 'google_play'),
              ('GP-R2', 'P000002', 'PO-2', 'GPA.3301-1111-2222-44444', 'aGVsbG8=', '2026-11-19T10:01:00Z', NULL, 'google_play'),
              ('GP-R3', 'P000004', 'PO-4', NULL, 'x.y.z', '2026-11-20T10:01:00Z', NULL, 'google_play'),
              ('GP-DUP', 'P000004', 'PO-4', NULL, 'token-one', '2026-11-20T10:01:00Z', NULL, 'google_play'),
              ('GP-DUP', 'P000004', 'PO-4', NULL, 'token-two', '2026-11-20T10:02:00Z', NULL, 'google_play');
            INSERT INTO shop.iap_grants (grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at, revoked_at, store) VALUES
              (\(literal: .text(grant)), 'P000006', 'PO-6', 'play.only.gems', 'GPA.3301-1111-2222-66666', NULL, 1, '2026-11-19T11:00:00Z', NULL, 'google_play'),
              ('PG-2', 'P000006', 'PO-6', 'play.only.gems', 'GPA.3301-1111-2222-66666', NULL, 1, '2026-11-19T11:00:00Z', NULL, 'google_play'),
              ('PG-3', 'P000007', 'PO-7', \(literal: .text(product)), 'opaque-token-without-order-id', NULL, 1, '2026-11-19T11:00:00Z', NULL, 'google_play'),
              ('PG-BADP', 'P000007', 'PO-7', 'play.bad', 'GPA.3301-1111-2222-77777', NULL, 1, '2026-11-19T11:00:00Z', NULL, 'google_play'),
              ('PG-IOS', 'P000008', 'PO-8', \(literal: .text(product)), '1000000000999999', NULL, 1, '2026-11-19T11:00:00Z', NULL, 'ios');
            """)
        return ["iap_products": products + 1, "iap_orders": 4, "iap_receipts": 3, "iap_grants": 3]
    }

    static func lines(_ url: URL) throws -> [String] {
        try csvRecords(url).map { $0.joined(separator: ",") }
    }

    @Test("read in place and through SOURCE_DATABASE_URL: the generator's lists, Play's rows counted and never sent to Apple, no store an input error")
    func appStoreRowsOnly() throws {
        let w = try N.world("two_stores", users: 300)
        defer { w.stop() }
        let play = try Self.shop(w.t)
        let clean = play.values.reduce(0, +)
        func night(_ schema: String, env: [String: String]? = nil) throws -> URL {
            let r = try w.run(["--source-schema", "shop", "--job-schema", schema], environment: env)
            #expect(r.status == 0, "\(schema): \(r.stderr)")
            if schema == "recon_in_place" {
                #expect(r.stderr.contains("\(clean) source rows name google_play"), "\(r.stderr)")
            }
            return w.out.appendingPathComponent("2026-11-21")
        }
        for (label, env) in [("recon_in_place", w.env), ("recon_copied", w.env.merging(["SOURCE_DATABASE_URL": "dbname=\(w.t.name)"]) { $1 })] {
            let day = try night(label, env: env)
            for file in N.findingFiles where file != "input_errors.csv" {
                let got = N.read(day.appendingPathComponent(file)), want = N.read(w.expected.appendingPathComponent(file))
                #expect(got == want, "\(label): \(file) differs from the generator's truth\n\(N.diff(got, want))")
            }
            // input_errors.csv: the generator's, and Play's and no store's, by name.
            let errors = try Self.lines(day.appendingPathComponent("input_errors.csv"))
            let truth = try Self.lines(w.expected.appendingPathComponent("input_errors.csv"))
            #expect(Set(errors).subtracting(truth) == Self.addedErrors, "\(label): \(Set(errors).subtracting(truth).symmetricDifference(Self.addedErrors))")
            #expect(Set(truth).isSubset(of: errors), "\(label)")
            // The tally: every row of each relation, Play's in a bucket of its own.
            let tally = try RightToTheRowTests.tally(day.appendingPathComponent("summary.json"))
            for (relation, play) in play {
                let buckets = try #require(tally[relation])
                let rows = try w.t.int("SELECT count(*) FROM shop.\(ident: relation)")
                #expect(buckets["rows"] == rows, "\(label) \(relation): \(buckets)")
                #expect(buckets.filter { $0.key != "rows" }.values.reduce(0, +) == rows, "\(label) \(relation): \(buckets)")
                #expect(buckets["google_play"] == play, "\(label) \(relation): \(buckets)")
            }
            let summary = N.read(day.appendingPathComponent("summary.json"))
            #expect(summary.contains("google_play (\(clean) source rows name google_play"), "\(label): \(summary)")
        }
        // Apple was asked about none of Play's receipts, nor the job's state holds them.
        #expect(!w.sim.calls().contains { $0.rid.hasPrefix("GP-") })
        for schema in ["recon_in_place", "recon_copied"] {
            #expect(try w.t.int("SELECT count(*) FROM \(ident: schema).receipt_state WHERE receipt_id LIKE 'GP-%'") == 0)
        }
        // The views are kept while the columns are: a second night makes none again.
        let made = try w.t.scalar("SELECT string_agg(c.oid::text, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'recon_in_place_app_store'")
        #expect(made != nil)
        _ = try night("recon_in_place")
        #expect(try w.t.scalar("SELECT string_agg(c.oid::text, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'recon_in_place_app_store'") == made)
        // A column added to the sources: the views are made again and see it.
        try w.t.db.execute("ALTER TABLE shop.iap_products ADD COLUMN shelf text")
        _ = try night("recon_in_place")
        #expect(try w.t.int("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'recon_in_place_app_store' AND table_name = 'iap_products' AND column_name = 'shelf'") == 1)
        // The copy, twice: its tables are made again each night, and the views over them too.
        _ = try night("recon_copied", env: w.env.merging(["SOURCE_DATABASE_URL": "dbname=\(w.t.name)"]) { $1 })

        // check and lookup read the App Store's rows as the night does.
        let check = try runTool("iap-reconcile", ["check", "--source-schema", "shop", "--job-schema", "recon_in_place", "--as-of", N.asOf], environment: w.env)
        #expect(!check.stderr.contains("google_play") && check.status != 64 && check.status != 70 && check.status != 78, "\(check.status) \(check.stderr)")
        let compensation = try #require(try csvRecords(w.expected.appendingPathComponent("compensate.csv")).dropFirst().first)
        let header = try #require(try csvRecords(w.expected.appendingPathComponent("compensate.csv")).first)
        let transaction = try #require(header.firstIndex(of: "transaction_id"))
        let asked = ["lookup", "--transaction", compensation[transaction], "--job-schema", "recon_in_place", "--as-of", N.asOf]
        let here = try runTool("iap-reconcile", asked + ["--source-schema", "shop"], environment: w.env)
        let plain = try runTool("iap-reconcile", asked + ["--source-schema", "public"], environment: w.env)
        #expect(here.status == 0 && here.stdout == plain.stdout, "\(here.stderr)\n\(here.stdout)\n---\n\(plain.stdout)")
        let viaStandby = try runTool("iap-reconcile", asked + ["--source-schema", "shop"],
                                     environment: w.env.merging(["SOURCE_DATABASE_URL": "dbname=\(w.t.name)"]) { $1 })
        #expect(viaStandby.status == 78 && viaStandby.stderr.contains("--source-schema recon_in_place_source"), "\(viaStandby.stderr)")
    }

    @Test("a store column of another type is exit 65 naming it; a schema of the views' name that is not the job's is exit 78")
    func hostileShapes() throws {
        let w = try N.world("two_stores_hostile", users: 60)
        defer { w.stop() }
        try w.t.sourceViews("v", ["iap_orders": "SELECT *, 1 AS store FROM public.iap_orders"])
        let typed = try w.run(["--source-schema", "v"])
        #expect(typed.status == 65 && typed.stderr.contains("v.iap_orders.store is integer, expected text"), "\(typed.stderr)")
        try w.t.db.execute("""
            DROP VIEW v.iap_orders; CREATE VIEW v.iap_orders AS SELECT *, 'app_store'::text AS store FROM public.iap_orders;
            CREATE SCHEMA recon_app_store;
            """)
        let taken = try w.run(["--source-schema", "v"])
        #expect(taken.status == 78 && taken.stderr.contains("recon_app_store that is not the job's"), "\(taken.stderr)")
        try w.t.db.execute("DROP SCHEMA recon_app_store")
        let fine = try w.run(["--source-schema", "v"])
        #expect(fine.status == 0, "\(fine.stderr)")
        // Nothing named google_play: no skipped check, and the tally's Play bucket is there, empty.
        let day = w.out.appendingPathComponent("2026-11-21")
        #expect(!N.read(day.appendingPathComponent("summary.json")).contains("google_play ("))
        #expect(try RightToTheRowTests.tally(day.appendingPathComponent("summary.json"))["iap_orders"]?["google_play"] == 0)
        #expect(try RightToTheRowTests.tally(day.appendingPathComponent("summary.json"))["iap_grants"]?["google_play"] == nil)
    }
}
