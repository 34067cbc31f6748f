import Foundation
import PlaySimulator
import Postgres
import Testing
import XLSXReading
import _CryptoExtras

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
        try t.db.execute(
            """
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
        try t.db.execute(
            """
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

    @Test(
        "read in place and through SOURCE_DATABASE_URL: the generator's lists, Play's rows counted and never sent to Apple, no store an input error"
    )
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
        for (label, env) in [
            ("recon_in_place", w.env), ("recon_copied", w.env.merging(["SOURCE_DATABASE_URL": "dbname=\(w.t.name)"]) { $1 }),
        ] {
            let day = try night(label, env: env)
            for file in N.findingFiles where file != "input_errors.csv" {
                let got = N.read(day.appendingPathComponent(file)), want = N.read(w.expected.appendingPathComponent(file))
                #expect(got == want, "\(label): \(file) differs from the generator's truth\n\(N.diff(got, want))")
            }
            // input_errors.csv: the generator's, and Play's and no store's, by name.
            let errors = try Self.lines(day.appendingPathComponent("input_errors.csv"))
            let truth = try Self.lines(w.expected.appendingPathComponent("input_errors.csv"))
            #expect(
                Set(errors).subtracting(truth) == Self.addedErrors,
                "\(label): \(Set(errors).subtracting(truth).symmetricDifference(Self.addedErrors))")
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
        let made = try w.t.scalar(
            "SELECT string_agg(c.oid::text, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'recon_in_place_app_store'"
        )
        #expect(made != nil)
        _ = try night("recon_in_place")
        #expect(
            try w.t.scalar(
                "SELECT string_agg(c.oid::text, ',' ORDER BY relname) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE nspname = 'recon_in_place_app_store'"
            ) == made)
        // A column added to the sources: the views are made again and see it.
        try w.t.db.execute("ALTER TABLE shop.iap_products ADD COLUMN shelf text")
        _ = try night("recon_in_place")
        #expect(
            try w.t.int(
                "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'recon_in_place_app_store' AND table_name = 'iap_products' AND column_name = 'shelf'"
            ) == 1)
        // The copy, twice: its tables are made again each night, and the views over them too.
        _ = try night("recon_copied", env: w.env.merging(["SOURCE_DATABASE_URL": "dbname=\(w.t.name)"]) { $1 })

        // check and lookup read the App Store's rows as the night does.
        let check = try runTool(
            "iap-reconcile", ["check", "--source-schema", "shop", "--job-schema", "recon_in_place", "--as-of", N.asOf], environment: w.env)
        #expect(
            !check.stderr.contains("google_play") && check.status != 64 && check.status != 70 && check.status != 78,
            "\(check.status) \(check.stderr)")
        let compensation = try #require(try csvRecords(w.expected.appendingPathComponent("compensate.csv")).dropFirst().first)
        let header = try #require(try csvRecords(w.expected.appendingPathComponent("compensate.csv")).first)
        let transaction = try #require(header.firstIndex(of: "transaction_id"))
        let asked = ["lookup", "--transaction", compensation[transaction], "--job-schema", "recon_in_place", "--as-of", N.asOf]
        let here = try runTool("iap-reconcile", asked + ["--source-schema", "shop"], environment: w.env)
        let plain = try runTool("iap-reconcile", asked + ["--source-schema", "public"], environment: w.env)
        #expect(here.status == 0 && here.stdout == plain.stdout, "\(here.stderr)\n\(here.stdout)\n---\n\(plain.stdout)")
        let viaStandby = try runTool(
            "iap-reconcile", asked + ["--source-schema", "shop"],
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
        try w.t.db.execute(
            """
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

    @Test(
        "a shop selling mostly on Google Play: the hold check counts each relation whole, as the tally does, so the next night is not held for rows it never lost; losing Play's rows holds it"
    )
    func mostlyPlayNotHeld() throws {
        let w = try N.world("two_stores_mostly_play", users: 60)
        defer { w.stop() }
        try w.t.db.execute(
            """
            CREATE SCHEMA shop;
            CREATE VIEW shop.iap_products AS SELECT *, 'app_store'::text AS store FROM public.iap_products
              UNION ALL SELECT 'play.gems', 'consumable', 'com.example.playgame', NULL::numeric, NULL::text, NULL::boolean, 'google_play';
            CREATE TABLE shop.play_orders AS SELECT 'PO-' || i AS order_id, 'P' || (i % 50) AS user_id FROM generate_series(1, 3000) i;
            CREATE VIEW shop.iap_orders AS SELECT *, 'app_store'::text AS store FROM public.iap_orders
              UNION ALL SELECT order_id, user_id, 'play.gems', 1, 'paid', NULL, '2026-11-20T10:00:00Z'::timestamptz, 'google_play'
              FROM shop.play_orders;
            CREATE VIEW shop.iap_receipts AS SELECT * FROM public.iap_receipts;
            CREATE VIEW shop.iap_grants AS SELECT * FROM public.iap_grants;
            """)
        let apple = try w.t.int("SELECT count(*) FROM public.iap_orders")
        #expect(apple * 5 < 3000, "the App Store's orders (\(apple)) must be under a fifth of the relation for this test")
        for night in ["first", "second"] {
            let r = try w.run(["--source-schema", "shop"])
            #expect(r.status == 0, "\(night) night: \(r.stderr)")
        }
        // Play's orders without their user: input errors of Play's rows, held by Play's figures too.
        try w.t.db.execute("UPDATE shop.play_orders SET user_id = NULL")
        let broken = try w.run(["--source-schema", "shop"])
        #expect(
            broken.status == 65 && broken.stderr.contains("google_play iap_orders: 3000 of its 3000 rows are input errors"),
            "\(broken.stderr)")
        // Play's orders gone from the view: the relation lost most of its rows, the night is held.
        try w.t.db.execute("TRUNCATE shop.play_orders")
        let lost = try w.run(["--source-schema", "shop"])
        #expect(lost.status == 65 && lost.stderr.contains("iap_orders"), "\(lost.stderr)")
    }

    /// Play's packages of `playNight`: one where Google knows the tokens, one where it knows none.
    static let playPackage = "com.example.playgame", otherPackage = "com.example.otherplay", noAccess = "com.example.noaccess"

    /// One purchase of `playPackage`'s gems, completed `daysBefore` the night's `--as-of`.
    static func playPurchase(
        _ token: String, _ order: String?, state: PlayTruth.State = .purchased, acknowledged: Bool = true,
        daysBefore: Int64 = 2, account: String = "acct-1"
    ) -> PlayTruth.Purchase {
        let asOf = Int64(ISO8601DateFormatter().date(from: N.asOf)!.timeIntervalSince1970 * 1000)
        let usd = PlayTruth.Money(currency: "USD", units: 0, nanos: 990_000_000)
        return PlayTruth.Purchase(
            packageName: playPackage, purchaseToken: token, orderID: order, productID: "play.only.gems", quantity: 1,
            state: state, acknowledged: acknowledged,
            completionTimeMs: state == .pending ? nil : asOf - daysBefore * 86_400_000, regionCode: "DE",
            obfuscatedAccountID: account, total: usd, tax: usd, developerRevenue: usd)
    }

    /// The simulator's Play truth, its key file, and the job's Play variables for it.
    static func playWorld(_ label: String) throws -> (N.World, [String: String]) {
        let dir = try Harness.scratchDirectory("\(label)-play")
        let keyFile = dir.appendingPathComponent("key.json"), truthFile = dir.appendingPathComponent("truth.tsv")
        try Data(PlayKeyFile.json(key: PlayHarness.jobKey, keyID: "k1")).write(to: keyFile)
        let truth = playTruth()
        try Data(truth.fileText().utf8).write(to: truthFile)
        let w = try N.world(
            label, users: 120,
            simArguments: [
                "--play-service-account", keyFile.path, "--play-truth", truthFile.path,
            ])
        try w.t.db.execute(
            """
            CREATE SCHEMA shop;
            CREATE VIEW shop.iap_products AS SELECT *, 'app_store'::text AS store FROM public.iap_products
              UNION ALL SELECT * FROM (VALUES
                ('play.only.gems', 'consumable', \(literal: .text(playPackage)), NULL::numeric, NULL::text, NULL::boolean, 'google_play'),
                ('other.gems', 'consumable', \(literal: .text(otherPackage)), NULL, NULL, NULL, 'google_play'),
                ('noaccess.gems', 'consumable', \(literal: .text(noAccess)), NULL, NULL, NULL, 'google_play')) v;
            CREATE TABLE shop.play_orders (order_id text, product_id text);
            INSERT INTO shop.play_orders VALUES ('PO-A', 'play.only.gems'), ('PO-P', 'play.only.gems'), ('PO-C', 'play.only.gems'),
              ('PO-U', 'play.only.gems'), ('PO-F', 'play.only.gems'), ('PO-O1', 'other.gems'), ('PO-O2', 'other.gems'), ('PO-X', 'noaccess.gems');
            CREATE VIEW shop.iap_orders AS SELECT *, 'app_store'::text AS store FROM public.iap_orders
              UNION ALL SELECT order_id, 'P1', product_id, 1, 'paid', NULL, '2026-11-20T10:00:00Z'::timestamptz, 'google_play'
              FROM shop.play_orders;
            CREATE TABLE shop.play_receipts (receipt_id text, order_id text, token text);
            INSERT INTO shop.play_receipts VALUES ('GR-A', 'PO-A', 'tok-acknowledged'), ('GR-P', 'PO-P', 'tok-pending'),
              ('GR-C', 'PO-C', 'tok-cancelled'), ('GR-U', 'PO-U', 'tok-unacknowledged'), ('GR-U2', 'PO-U', 'tok-unacknowledged'),
              ('GR-F', 'PO-F', 'tok-forged'), ('GR-O1', 'PO-O1', 'tok-other-1'), ('GR-O2', 'PO-O2', 'tok-other-2'),
              ('GR-N', NULL, 'tok-no-order'), ('GR-X', 'PO-X', 'tok-noaccess');
            CREATE VIEW shop.iap_receipts AS SELECT *, 'app_store'::text AS store FROM public.iap_receipts
              UNION ALL SELECT receipt_id, 'P1', order_id, NULL, token, '2026-11-20T10:01:00Z'::timestamptz, NULL::int, 'google_play'
              FROM shop.play_receipts;
            CREATE TABLE shop.play_grants (grant_id text, order_id text, transaction_id text, revoked_at timestamptz);
            INSERT INTO shop.play_grants VALUES ('PG-A', 'PO-A', 'GPA.3301-0000-0000-00001'),
              ('PG-C', 'PO-C', 'GPA.3301-0000-0000-00003'), ('PG-F', 'PO-F', 'tok-forged'),
              ('PG-T', 'PO-A', 'tok-acknowledged');
            CREATE VIEW shop.iap_grants AS SELECT *, 'app_store'::text AS store FROM public.iap_grants
              UNION ALL SELECT grant_id, 'P1', order_id, 'play.only.gems', transaction_id, NULL, 1,
                               '2026-11-20T10:02:00Z'::timestamptz, revoked_at, 'google_play'
              FROM shop.play_grants;
            """)
        var env = w.env
        env["PLAY_SERVICE_ACCOUNT_FILE"] = keyFile.path
        env["PLAY_PACKAGE_NAMES"] = "\(playPackage),\(otherPackage),\(noAccess)"
        env["PLAY_API_URL"] = "http://127.0.0.1:\(w.sim.port)"
        env["PLAY_TOKEN_URL"] = "http://127.0.0.1:\(w.sim.port)/token"
        return (w, env)
    }

    /// playWorld's Play truth: Google's purchases and voided records by the real clock.
    static func playTruth() -> PlayTruth {
        let realNow = Int64(Date().timeIntervalSince1970 * 1000), day: Int64 = 86_400_000
        return PlayTruth(
            purchases: [
                playPurchase("tok-acknowledged", "GPA.3301-0000-0000-00001"),
                playPurchase("tok-pending", nil, state: .pending, acknowledged: false),
                playPurchase("tok-cancelled", "GPA.3301-0000-0000-00003", state: .cancelled, acknowledged: false),
                playPurchase("tok-unacknowledged", "GPA.3301-0000-0000-00004", acknowledged: false, daysBefore: 1),
            ] + [
                {
                    var p = playPurchase("tok-of-the-other-package-never-asked", nil); p.packageName = otherPackage; return p
                }()
            ],
            voided: [
                PlayTruth.Voided(
                    packageName: playPackage, purchaseToken: "tok-acknowledged", orderID: "GPA.3301-0000-0000-00001",
                    purchaseTimeMs: realNow - 3 * day, voidedTimeMs: realNow - 2 * day, source: 2, reason: 7, voidedQuantity: 1),
                PlayTruth.Voided(
                    packageName: playPackage, purchaseToken: "tok-cancelled", orderID: "GPA.3301-0000-0000-00003",
                    purchaseTimeMs: realNow - 3 * day, voidedTimeMs: realNow - day, source: 0, reason: 1),
                PlayTruth.Voided(
                    packageName: otherPackage, purchaseToken: "tok-of-the-other-package-never-asked", orderID: nil,
                    purchaseTimeMs: realNow - 3 * day, voidedTimeMs: realNow - day, source: 1, reason: 0),
            ])
    }

    /// Play's lists of `playWorld`'s first night: the missed order compensated and listed to
    /// acknowledge, the chargeback, the refund of a cancelled purchase and the forged token's grant
    /// clawed back, each row ending `google_play`.
    static func expectPlayLists(_ day: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let compensate = rows(day.appendingPathComponent("compensate.csv"), store: "google_play")
        #expect(
            compensate.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).prefix(13).joined(separator: ",") } == [
                "PO-U,P1,play.only.gems,consumable,1,GPA.3301-0000-0000-00004,GPA.3301-0000-0000-00004,2026-11-20T03:00:00Z,"
                    + "production,exact,paid_not_granted,GR-U,2026-11-21"
            ], "\(compensate)", sourceLocation: sourceLocation)
        #expect(compensate.dropFirst().allSatisfy { $0.hasSuffix(",0.99,USD,receipt,,") }, "\(compensate)", sourceLocation: sourceLocation)
        let clawback = rows(day.appendingPathComponent("clawback.csv"), store: "google_play").dropFirst().map {
            $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        #expect(
            clawback.map { "\($0[0]) \($0[9]) \($0[11]) \($0[13]) \($0[14])" } == [
                "PG-A chargeback 7 0.99 USD", "PG-C refunded 1  ", "PG-F invalid_receipt   ",
                // A grant naming the purchase by its token, though it has an order id: the same purchase's.
                "PG-T chargeback 7 0.99 USD",
            ], "\(clawback)", sourceLocation: sourceLocation)
        let acknowledge = N.read(day.appendingPathComponent("acknowledge.csv")).components(separatedBy: "\r\n")
        #expect(
            acknowledge == [
                "acknowledge_by,action,package,transaction_id,purchase_token,product_id,quantity,user_id,order_id,completed_at,store",
                "2026-11-23T03:00:00Z,grant_and_acknowledge,com.example.playgame,GPA.3301-0000-0000-00004,tok-unacknowledged,"
                    + "play.only.gems,1,P1,PO-U,2026-11-20T03:00:00Z,google_play",
                "",
            ], "\(acknowledge)", sourceLocation: sourceLocation)
        #expect(rows(day.appendingPathComponent("duplicate_grants.csv"), store: "google_play").count == 1, sourceLocation: sourceLocation)
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json")))
                as? [String: Any])
        #expect((summary["counts"] as? [String: Int])?["acknowledge"] == 1, "\(summary["counts"] ?? "")", sourceLocation: sourceLocation)
        let book = try XLSX(path: day.appendingPathComponent("reconciliation.xlsx").path)
        #expect(book.sheets.first { $0.name == "acknowledge" }?.rows.count == 2, sourceLocation: sourceLocation)
    }

    /// `lookup` of Play's purchases after `playWorld`'s first night: by Google's order id and by
    /// token, the night's verdicts; ids that are not Google's refused (64) before anything is read.
    static func expectPlayLookups(_ env: [String: String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        func lookup(_ args: [String]) throws -> (status: Int32, json: [String: Any], stderr: String) {
            let r = try runTool(
                "iap-reconcile", ["lookup"] + args + ["--source-schema", "shop", "--as-of", N.asOf, "--json"], environment: env)
            let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] ?? [:]
            return (r.status, json, r.stderr)
        }
        func item(_ r: (status: Int32, json: [String: Any], stderr: String)) -> [String: Any] {
            (r.json["transactions"] as? [[String: Any]])?.first ?? [:]
        }
        let missed = try lookup(["GPA.3301-0000-0000-00004"])
        let m = item(missed)
        #expect(
            missed.status == 0 && missed.json["store"] as? String == "google_play" && m["verdict"] as? String == "compensate"
                && m["user_id"] as? String == "P1" && m["order_id"] as? String == "PO-U" && m["owed"] as? Int == 1
                && m["report"] as? String == "compensate.csv" && m["first_seen"] as? String == "2026-11-21", "\(missed)",
            sourceLocation: sourceLocation)
        #expect(
            (m["text"] as? String ?? "").contains("acknowledge token tok-unacknowledged before 2026-11-23 03:00 UTC"), "\(m)",
            sourceLocation: sourceLocation)
        let charged = item(try lookup(["--token", "tok-acknowledged"]))
        #expect(
            charged["verdict"] as? String == "claw_back" && charged["grant_ids"] as? [String] == ["PG-A", "PG-T"]
                && (charged["text"] as? String ?? "").contains("charged back"), "\(charged)", sourceLocation: sourceLocation)
        #expect(item(try lookup(["--token", "tok-pending"]))["verdict"] as? String == "not_paid", sourceLocation: sourceLocation)
        let none = try lookup(["GPA.9999-0000-0000-00000"])
        #expect(none.status == 0 && (none.json["transactions"] as? [Any])?.isEmpty == true, "\(none)", sourceLocation: sourceLocation)
        for bad in [["GPA.12;drop"], ["--token", "a/b"], ["--token", "tok-pending", "--transaction", "1"], ["GPA."]] {
            let r = try lookup(bad)
            #expect(r.status == 64, "\(bad): \(r.stderr)", sourceLocation: sourceLocation)
        }
    }

    /// A report's header and rows of one store, without the `store` column that ends them.
    static func rows(_ url: URL, store: String) -> [String] {
        let lines = N.read(url).components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard let header = lines.first, header.hasSuffix(",store") else { return ["<no store column: \(lines.first ?? "")>"] }
        return [String(header.dropLast(6))]
            + lines.dropFirst().filter { $0.hasSuffix("," + store) }.map { String($0.dropLast(store.count + 1)) }
    }

    /// With Google Play configured: the App Store's rows of every report equal the generator's truth.
    static func expectAppStoreRowsMatchTruth(_ day: URL, expected: URL, sourceLocation: SourceLocation = #_sourceLocation) {
        for file in N.findingFiles {
            let got = rows(day.appendingPathComponent(file), store: "app_store").joined(separator: "\r\n") + "\r\n"
            let want = N.read(expected.appendingPathComponent(file))
            #expect(got == want, "\(file) differs from the generator's truth\n\(N.diff(got, want))", sourceLocation: sourceLocation)
        }
    }

    @Test(
        "Play's tokens asked of Google and its voided purchases swept: answers stored, a 404 believed only where Google knows other tokens, settled tokens not asked again, each voided record once, a 35-day gap reported; the App Store's lists unchanged"
    )
    func playTokensAsked() throws {
        let (w, env) = try Self.playWorld("two_stores_play")
        defer { w.stop() }
        let first = try w.run(["--source-schema", "shop"], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        Self.expectAppStoreRowsMatchTruth(day, expected: w.expected)
        try Self.expectPlayLists(day)
        let r = try w.t.db.query(
            """
            SELECT token || ' ' || package || ' ' || verdict || ' ' || coalesce(order_id, '-') || ' ' || coalesce(acknowledgement, '-')
                   || ' ' || coalesce(region_code, '-') || ' ' || coalesce(account_id, '-') || ' '
                   || coalesce((SELECT string_agg(product_id || 'x' || quantity || '/' || coalesce(refundable_quantity::text, '-'), ',')
                                FROM recon.play_purchase_lines l WHERE l.token = p.token), '-')
            FROM recon.play_purchases p ORDER BY token
            """)
        #expect(
            (0..<r.rowCount).map { r.value($0, 0) ?? "" } == [
                "tok-acknowledged com.example.playgame purchased GPA.3301-0000-0000-00001 ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED DE acct-1 play.only.gemsx1/1",
                "tok-cancelled com.example.playgame cancelled GPA.3301-0000-0000-00003 ACKNOWLEDGEMENT_STATE_PENDING DE acct-1 play.only.gemsx1/1",
                "tok-forged com.example.playgame unknown - - - - -",
                "tok-pending com.example.playgame pending - ACKNOWLEDGEMENT_STATE_PENDING DE acct-1 play.only.gemsx1/1",
                "tok-unacknowledged com.example.playgame purchased GPA.3301-0000-0000-00004 ACKNOWLEDGEMENT_STATE_PENDING DE acct-1 play.only.gemsx1/1",
            ])
        // The other package: Google knows none of its tokens, so its 404s are not believed; a
        // token of no order, with several packages, is not asked; the package the account may not
        // read (403) is refused alone, its token left unasked for the next night.
        let a = try w.t.db.query("SELECT token || ' ' || coalesce(package, '-') || ' ' || unknown FROM recon.play_attempts ORDER BY token")
        #expect(
            (0..<a.rowCount).map { a.value($0, 0) ?? "" } == [
                "tok-no-order - false", "tok-other-1 com.example.otherplay true", "tok-other-2 com.example.otherplay true",
            ])
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let play = try #require(summary["google_play"] as? [String: Any])
        #expect(
            play["candidates"] as? Int == 9 && play["purchased"] as? Int == 2 && play["pending"] as? Int == 1
                && play["cancelled"] as? Int == 1 && play["unknown"] as? Int == 1 && play["no_package"] as? Int == 1
                && play["unsettled"] as? Int == 2 && play["doubted_packages"] as? [String] == [Self.otherPackage]
                && play["refused_packages"] as? [String] == [Self.noAccess], "\(play)")
        let skipped = summary["skipped_checks"] as? [String] ?? []
        #expect(skipped.contains { $0.hasPrefix("google_play_verification com.example.otherplay (") }, "\(skipped)")
        #expect(skipped.contains { $0.hasPrefix("google_play_verification com.example.noaccess (Google refused") }, "\(skipped)")
        #expect(first.stderr.contains("Google Play: com.example.otherplay"), "\(first.stderr)")

        // The money of the purchased orders, exact as Google said it.
        let o = try w.t.db.query(
            """
            SELECT order_id || ' ' || coalesce(token, '-') || ' ' || total_currency || ' ' || total_units || ' ' || total_nanos
                   || ' ' || revenue_units || ' ' || revenue_nanos || ' ' || unknown
            FROM recon.play_orders ORDER BY order_id
            """)
        #expect(
            (0..<o.rowCount).map { o.value($0, 0) ?? "" } == [
                "GPA.3301-0000-0000-00001 tok-acknowledged USD 0 990000000 0 990000000 false",
                "GPA.3301-0000-0000-00004 tok-unacknowledged USD 0 990000000 0 990000000 false",
            ])
        #expect((play["orders"] as? [String: Any])?["stored"] as? Int == 2, "\(play)")

        // Google's voided purchases: each record once, the positions of the packages swept whole; the
        // package the account may not read keeps none.
        let v = try w.t.db.query(
            """
            SELECT token || ' ' || package || ' ' || voided_quantity || ' ' || coalesce(order_id, '-') || ' ' || source || ' ' || reason
            FROM recon.play_voided ORDER BY token
            """)
        #expect(
            (0..<v.rowCount).map { v.value($0, 0) ?? "" } == [
                "tok-acknowledged com.example.playgame 1 GPA.3301-0000-0000-00001 2 7",
                "tok-cancelled com.example.playgame 0 GPA.3301-0000-0000-00003 0 1",
                "tok-of-the-other-package-never-asked com.example.otherplay 0 - 1 0",
            ])
        #expect(
            try w.t.scalar("SELECT string_agg(package, ',' ORDER BY package) FROM recon.play_voided_positions")
                == "com.example.otherplay,com.example.playgame")
        let voided = try #require(play["voided"] as? [String: Any])
        #expect(voided["stored"] as? Int == 3 && voided["unfinished"] as? [String] == [Self.noAccess], "\(voided)")

        // An order Google does not know, asked beside one it knows: the batch fails whole (404),
        // is split, and the unknown order ends alone, without money; the known one is stored.
        try w.t.db.execute(
            """
            DELETE FROM recon.play_orders WHERE order_id = 'GPA.3301-0000-0000-00001';
            INSERT INTO recon.play_purchases (token, package, verdict, order_id, acknowledgement, test, asked_at, run_id)
            VALUES ('tok-forged-order', 'com.example.playgame', 'purchased', 'GPA.9999-0000-0000-00009',
                    'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED', false, now(), 0)
            """)

        try Self.expectPlayLookups(env)

        // Customer service took PG-A back: its claw-back closes as `revoked`, judged from Play's rows.
        try w.t.db.execute("UPDATE shop.play_grants SET revoked_at = '2026-11-20T12:00:00Z' WHERE grant_id = 'PG-A'")

        // Again: only what is not settled is asked (pending, unacknowledged within its days, the
        // attempts); the answers already stored stay.
        let again = try w.run(["--source-schema", "shop"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        let second = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(
            try w.t.scalar(
                """
                SELECT string_agg(finding_key || ' ' || coalesce(closed_because, '-'), ', ' ORDER BY finding_key) FROM recon.findings
                WHERE starts_with(finding_key, 'google_play|') AND closed_on IS NOT NULL
                """) == "google_play|clawback|PG-A revoked")
        #expect((second["google_play"] as? [String: Any])?["candidates"] as? Int == 6, "\(String(describing: second["google_play"]))")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_purchases") == 6)
        #expect(
            try w.t.scalar(
                """
                SELECT string_agg(order_id || ' ' || unknown || ' ' || coalesce(total_units::text, '-'), ', ' ORDER BY order_id)
                FROM recon.play_orders
                """) == "GPA.3301-0000-0000-00001 false 0, GPA.3301-0000-0000-00004 false 0, GPA.9999-0000-0000-00009 true -")
        let secondOrders = (second["google_play"] as? [String: Any])?["orders"] as? [String: Any]
        #expect(
            secondOrders?["asked"] as? Int == 2 && secondOrders?["unknown"] as? Int == 1
                && (secondOrders?["requests"] as? Int ?? 0) == 3, "\(String(describing: secondOrders))")
        #expect(((second["google_play"] as? [String: Any])?["voided"] as? [String: Any])?["stored"] as? Int == 0)
        // A position 35 days old: Google lists 30; the five days between are reported lost, the
        // sweep reads what Google still lists, and stores nothing twice.
        try w.t.db.execute(
            """
            UPDATE recon.play_voided_positions SET position_ms = (extract(epoch FROM now()) * 1000)::bigint - 35::bigint * 86400000
            WHERE package = 'com.example.playgame'
            """)
        // An order asked before its purchase's refund: asked again, its answer replacing the old one.
        try w.t.db.execute(
            """
            UPDATE recon.play_orders SET asked_at = '2026-01-01T00:00:00Z', state = 'STALE'
            WHERE order_id = 'GPA.3301-0000-0000-00001'
            """)
        let gap = try w.run(["--source-schema", "shop"], environment: env)
        #expect(
            try w.t.scalar(
                "SELECT state || ' ' || (asked_at > '2026-02-01') FROM recon.play_orders WHERE order_id = 'GPA.3301-0000-0000-00001'")
                != "STALE false")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_orders WHERE state = 'STALE'") == 0)
        #expect(gap.status == 0 && gap.stderr.contains("the voided purchases of com.example.playgame from"), "\(gap.stderr)")
        let gapSummary = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        let gapVoided = try #require((gapSummary["google_play"] as? [String: Any])?["voided"] as? [String: Any])
        #expect(
            (gapVoided["lost"] as? [String: String])?.keys.sorted() == [Self.playPackage] && gapVoided["stored"] as? Int == 0
                && (gapVoided["records"] as? Int ?? 0) >= 2, "\(gapVoided)")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_voided") == 3)

        // A key Google does not know: Play skipped tonight, said so; the App Store's reports written.
        let dir = try Harness.scratchDirectory("two_stores_play-wrong")
        let wrong = dir.appendingPathComponent("key.json")
        try Data(PlayKeyFile.json(key: try _RSA.Signing.PrivateKey(keySize: .bits2048), keyID: "k1")).write(to: wrong)
        let refused = try w.run(
            ["--source-schema", "shop", "--job-schema", "recon_refused"],
            environment: env.merging(["PLAY_SERVICE_ACCOUNT_FILE": wrong.path]) { $1 })
        #expect(refused.status == 0, "\(refused.stderr)")
        Self.expectAppStoreRowsMatchTruth(day, expected: w.expected)
        #expect(try w.t.int("SELECT count(*) FROM recon_refused.play_purchases") == 0)
        let third = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(((third["skipped_checks"] as? [String]) ?? []).contains { $0.hasPrefix("google_play_verification (") }, "\(third)")
        #expect(refused.stderr.contains("Google Play:") && !refused.stderr.contains("BEGIN PRIVATE KEY"), "\(refused.stderr)")
        // No token endpoint at all: the same, Play skipped.
        let silent = try w.run(
            ["--source-schema", "shop", "--job-schema", "recon_silent"],
            environment: env.merging(["PLAY_TOKEN_URL": "http://127.0.0.1:9/token"]) { $1 })
        #expect(silent.status == 0 && silent.stderr.contains("Google Play:"), "\(silent.stderr)")
        #expect(try w.t.int("SELECT count(*) FROM recon_silent.play_purchases") == 0)
        // A key file that is not one: exit 78 naming the variable.
        try Data("{}".utf8).write(to: wrong)
        let bad = try w.run(
            ["--source-schema", "shop", "--job-schema", "recon_refused"],
            environment: env.merging(["PLAY_SERVICE_ACCOUNT_FILE": wrong.path]) { $1 })
        #expect(bad.status == 78 && bad.stderr.contains("PLAY_SERVICE_ACCOUNT_FILE"), "\(bad.stderr)")
    }
}
