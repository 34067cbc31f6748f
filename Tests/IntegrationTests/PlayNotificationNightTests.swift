// Play's notifications in the night, over HTTP against the Play simulator's Pub/Sub: each message
// stored once before it is acknowledged, a purchase whose upload never came found through its
// notification, a pending refund review kept for respond; an acknowledgement that fails leaves the
// messages stored and delivered again, storing them again changes nothing.

import Foundation
import PlaySimulator
import PlayStore
import Postgres
import Reconciliation
import Testing

@testable import NightLearn

@Suite("Google Play's notifications in the night", .serialized, .enabled(if: Harness.hasDatabase))
struct PlayNotificationNightTests {
    typealias N = NightTests
    typealias T = TwoStoreSourcesTests
    static let subscription = "projects/iap-test/subscriptions/play-night"

    /// The simulator's clock, moved on by the tests (a lease runs out without waiting for it).
    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var offsetMs: Int64 = 0
        func advance(seconds: Int64) { lock.withLock { offsetMs += seconds * 1000 } }
        var now: Int64 { lock.withLock { Int64(Date().timeIntervalSince1970 * 1000) + offsetMs } }
    }

    @Test(
        "a notification's token is asked and its purchase listed though no upload came; a refund review kept; an acknowledgement that fails loses nothing and stores nothing twice"
    )
    func notificationsInTheNight() throws {
        let realNow = Int64(Date().timeIntervalSince1970 * 1000)
        var truth = T.playTruth()
        truth.purchases.append(
            T.playPurchase("tok-never-uploaded", "GPA.3301-0000-0000-00005", acknowledged: false, daysBefore: 1, account: "PO-N"))
        truth.notifications = [
            .init(
                packageName: T.playPackage, eventTimeMs: realNow - 3_600_000,
                kind: .oneTimeProduct(notificationType: 1, purchaseToken: "tok-never-uploaded", sku: "play.only.gems")),
            .init(
                packageName: T.playPackage, eventTimeMs: realNow - 1_800_000,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-1", orderID: "GPA.3301-0000-0000-00001", refundReason: 7, obfuscatedAccountID: "acct-1")),
            .init(packageName: T.playPackage, eventTimeMs: realNow - 900_000, kind: .test),
            .init(
                packageName: T.playPackage, eventTimeMs: realNow - 600_000,
                kind: .voidedPurchase(
                    purchaseToken: "tok-a-subscription", orderID: "GPA.3301-0000-0000-00099", productType: 1, refundType: 1)),
        ]
        let clock = Clock()
        let harness = try PlayHarness(truth: truth, packages: [T.playPackage], subscription: Self.subscription) { config in
            config.now = { clock.now }
        }
        let (w, base) = try T.playWorld("play_notifications")
        defer { w.stop() }
        try w.t.db.execute("INSERT INTO shop.play_orders VALUES ('PO-N', 'play.only.gems')")
        let env = Self.environment(base, harness)
        let day = w.out.appendingPathComponent("2026-11-21")

        // First night: every acknowledgement refused (503, each attempt): the messages are stored,
        // not acknowledged, and the night goes on.
        harness.service.setFaults(PlayFaultPlan(rules: [.share(1, of: [.unavailable], endpoint: .pubsubAcknowledge)]))
        let metrics = w.out.appendingPathComponent("metrics.prom")
        let first = try w.run(["--source-schema", "shop", "--metrics-file", metrics.path], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(harness.service.pubsub.acknowledged.isEmpty)
        // The metrics an operator alerts on: the nearest acknowledgement deadline (the two purchases
        // completed a day before the night: three days from then), the sweep's position, Play not skipped.
        let prom = try String(contentsOf: metrics, encoding: .utf8)
        let asOf = Int64(ISO8601DateFormatter().date(from: N.asOf)!.timeIntervalSince1970)
        #expect(prom.contains("\niap_reconcile_play_acknowledge_next_deadline_timestamp_seconds \(asOf + 2 * 86_400)\n"), "\(prom)")
        #expect(prom.contains("\niap_reconcile_play_skipped 0\n"), "\(prom)")
        let age = prom.split(separator: "\n").first {
            $0.hasPrefix("iap_reconcile_play_voided_position_age_seconds{package=\"com.example.playgame\"} ")
        }
        #expect(age.flatMap { Double($0.split(separator: " ").last ?? "") }.map { $0 >= 0 && $0 < 900 } == true, "\(prom)")
        let messages = try w.t.db.query(
            """
            SELECT kind || ' ' || coalesce(package, '-') || ' ' || coalesce(token, '-') || ' ' || coalesce(order_id, '-')
            FROM recon.play_messages ORDER BY published_at
            """)
        #expect(
            (0..<messages.rowCount).map { messages.value($0, 0) ?? "" } == [
                "purchased com.example.playgame tok-never-uploaded -",
                "refund_review com.example.playgame - GPA.3301-0000-0000-00001",
                "test com.example.playgame - -",
                "subscription com.example.playgame - -",
            ])
        #expect(
            try w.t.scalar(
                "SELECT pending_refund_token || ' ' || order_id || ' ' || refund_reason || ' ' || account_id || ' ' || state FROM recon.play_refund_reviews"
            ) == "prt-1 GPA.3301-0000-0000-00001 7 acct-1 new")
        // The purchase nobody uploaded: asked because its notification named it, a missed order
        // of the order its obfuscated account id names, to grant and acknowledge.
        #expect(try w.t.scalar("SELECT verdict FROM recon.play_purchases WHERE token = 'tok-never-uploaded'") == "purchased")
        let compensate = T.rows(day.appendingPathComponent("compensate.csv"), store: "google_play")
        let missed = compensate.filter { $0.contains("GPA.3301-0000-0000-00005") }
        #expect(missed.count == 1 && missed.first?.hasPrefix("PO-N,P1,play.only.gems,") == true, "\(compensate)")
        #expect(missed.first?.contains(",exact,paid_not_granted,") == true, "\(missed)")
        let acknowledge = try String(contentsOf: day.appendingPathComponent("acknowledge.csv"), encoding: .utf8)
        #expect(acknowledge.contains("GPA.3301-0000-0000-00005") && acknowledge.contains("grant_and_acknowledge"), "\(acknowledge)")
        let summary = try Self.summary(day)
        let notes = try #require((summary["google_play"] as? [String: Any])?["notifications"] as? [String: Any])
        #expect(
            notes["pulled"] as? Int == 4 && notes["stored"] as? Int == 4 && notes["tokens"] as? Int == 1
                && notes["refund_reviews"] as? Int == 1 && notes["unreadable"] as? Int == 0 && notes["skipped"] is String, "\(notes)")
        #expect((summary["skipped_checks"] as? [String] ?? []).contains { $0.hasPrefix("google_play_notifications (") })
        // Each store's rows: the Play rows of each file, and the App Store's the rest.
        let stores = try #require(summary["stores"] as? [String: [String: Any]], "\(summary.keys.sorted())")
        let counts = try #require(summary["counts"] as? [String: Int])
        for file in ["compensate", "clawback", "acknowledge", "refunds", "unattributed"] {
            let play = T.rows(day.appendingPathComponent(file + ".csv"), store: "google_play").count - 1
            let byStore = stores.mapValues { ($0["counts"] as? [String: Int])?[file] }
            #expect(byStore["google_play"] == play && byStore["app_store"] == (counts[file] ?? 0) - play, "\(file): \(byStore) \(play)")
        }
        let page = try String(contentsOf: day.appendingPathComponent("summary.html"), encoding: .utf8)
        #expect(page.contains("data-section=\"stores\"") && page.contains("data-store=\"google_play\""))
        let compensateBefore = try Data(contentsOf: day.appendingPathComponent("compensate.csv"))

        // The leases run out; the next night is delivered the same messages again: nothing new is
        // stored, the messages are acknowledged, the lists are the same.
        harness.service.setFaults(PlayFaultPlan())
        clock.advance(seconds: 11)
        let second = try w.run(["--source-schema", "shop"], environment: env)
        #expect(second.status == 0, "\(second.stderr)")
        let again = try #require((try Self.summary(day)["google_play"] as? [String: Any])?["notifications"] as? [String: Any])
        #expect(again["pulled"] as? Int == 4 && again["stored"] as? Int == 0 && again["skipped"] == nil, "\(again)")
        #expect(harness.service.pubsub.acknowledged.count == 4)
        #expect(harness.service.pubsub.deliveries.values.sorted() == [2, 2, 2, 2])
        #expect(try w.t.int("SELECT count(*) FROM recon.play_messages") == 4)
        #expect(try w.t.int("SELECT count(*) FROM recon.play_refund_reviews") == 1)
        #expect(try Data(contentsOf: day.appendingPathComponent("compensate.csv")) == compensateBefore)

        // Nothing waits: one pull, empty.
        let third = try w.run(["--source-schema", "shop"], environment: env)
        #expect(third.status == 0, "\(third.stderr)")
        let last = try #require((try Self.summary(day)["google_play"] as? [String: Any])?["notifications"] as? [String: Any])
        #expect(last["pulled"] as? Int == 0 && last["pulls"] as? Int == 1, "\(last)")
    }

    @Test(
        "respond answers Google's pending refund reviews by the night's rules: DECLINE a delivered purchase consumed above the line, APPROVE a missed order, nothing for a charged-back one or one past 24 hours; each sent once"
    )
    func respondAnswersRefundReviews() throws {
        let asOf = Int64(ISO8601DateFormatter().date(from: N.asOf)!.timeIntervalSince1970 * 1000)
        var truth = T.playTruth()
        truth.purchases += [
            T.playPurchase("tok-never-uploaded", "GPA.3301-0000-0000-00005", acknowledged: false, daysBefore: 1, account: "PO-N"),
            T.playPurchase("tok-granted", "GPA.3301-0000-0000-00006", daysBefore: 1),
        ]
        func review(_ token: String, _ order: String, hoursBefore: Int64) -> PlayTruth.Notification {
            .init(
                packageName: T.playPackage, eventTimeMs: asOf - hoursBefore * 3_600_000,
                kind: .pendingRefundReview(pendingRefundToken: token, orderID: order, refundReason: 1, obfuscatedAccountID: nil))
        }
        truth.notifications = [
            .init(
                packageName: T.playPackage, eventTimeMs: asOf - 20 * 3_600_000,
                kind: .oneTimeProduct(notificationType: 1, purchaseToken: "tok-never-uploaded", sku: "play.only.gems")),
            review("prt-granted", "GPA.3301-0000-0000-00006", hoursBefore: 2),
            review("prt-missed", "GPA.3301-0000-0000-00005", hoursBefore: 2),
            review("prt-charged-back", "GPA.3301-0000-0000-00001", hoursBefore: 2),
            review("prt-too-old", "GPA.3301-0000-0000-00006", hoursBefore: 30),
            review("prt-unknown-order", "GPA.3301-0000-0000-00077", hoursBefore: 1),
        ]
        let harness = try PlayHarness(truth: truth, packages: [T.playPackage], subscription: Self.subscription)
        let (w, base) = try T.playWorld("play_respond")
        defer { w.stop() }
        try w.t.db.execute(
            """
            INSERT INTO shop.play_orders VALUES ('PO-N', 'play.only.gems'), ('PO-G', 'play.only.gems');
            INSERT INTO shop.play_receipts VALUES ('GR-G', 'PO-G', 'tok-granted');
            INSERT INTO shop.play_grants VALUES ('PG-G', 'PO-G', 'GPA.3301-0000-0000-00006');
            CREATE TABLE shop.iap_consumption (transaction_id text, consumption_percentage int);
            INSERT INTO shop.iap_consumption VALUES ('GPA.3301-0000-0000-00006', 80000);
            """)
        let env = Self.environment(base, harness)
        let night = try w.run(["--source-schema", "shop"], environment: env)
        #expect(night.status == 0, "\(night.stderr)")

        func respond(_ extra: [String] = [], environment: [String: String]) throws -> ProcessResult {
            try runTool(
                "iap-reconcile",
                [
                    "respond", "--now", N.asOf, "--source-schema", "shop", "--refund-preference", "from-delivery", "--no-progress",
                    "--timeout-ms", "2000", "--retry-base-ms", "20",
                ] + extra,
                environment: environment)
        }
        // Recorded first: nothing reaches Google without --send.
        let recorded = try respond(["--json"], environment: env)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(harness.service.refundReviews.isEmpty)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(recorded.stdout.utf8)) as? [String: Any])
        let play = try #require(json["google_play"] as? [String: Any], "\(recorded.stdout)")
        let decided = (play["decided"] as? [[String: Any]] ?? []).map {
            "\($0["order_id"] ?? "") \($0["state"] ?? "") \($0["detail"] ?? "-")"
        }
        #expect(
            decided.sorted() == [
                "GPA.3301-0000-0000-00001 not_judged claw_back",
                "GPA.3301-0000-0000-00005 would_send -",
                "GPA.3301-0000-0000-00006 expired not answered within 24 hours of the notification",
                "GPA.3301-0000-0000-00006 would_send -",
                "GPA.3301-0000-0000-00077 not_judged the nights have no answer of Google for this order (no upload or notification named its token)",
            ], "\(decided)")
        #expect(!recorded.stdout.contains("prt-"), "the pending refund tokens stay in the job schema")

        // Sent while Apple's Server API is unreachable: Apple's part fails (exit 75, said), Google's
        // answers go all the same.
        let key = w.out.appendingPathComponent("key.p8")
        #expect(try runTool("iap-sim", ["keygen", "--out", key.path], environment: ProcessInfo.processInfo.environment).status == 0)
        var appleDown = env
        appleDown["IAP_ISSUER_ID"] = "57246542-96fe-1a63-e053-0824d011072a"
        appleDown["IAP_KEY_ID"] = "TESTKEY001"
        appleDown["IAP_PRIVATE_KEY_FILE"] = key.path
        appleDown["IAP_BUNDLE_IDS"] = N.bundle
        appleDown["IAP_API_URL_PRODUCTION"] = "http://127.0.0.1:9/production"
        appleDown["IAP_API_URL_SANDBOX"] = "http://127.0.0.1:9/sandbox"
        let sent = try respond(["--send"], environment: appleDown)
        #expect(sent.status == 75 && sent.stderr.contains("Google Play's go on"), "\(sent.status) \(sent.stderr)")
        let reviews = harness.service.refundReviews.map {
            "\($0.orderID) \($0.pendingRefundToken) \($0.preference.rawValue) \($0.sampleContentProvided) \($0.consumptionPercentageMilliunits.map(String.init) ?? "-")"
        }
        #expect(
            reviews.sorted() == [
                "GPA.3301-0000-0000-00005 prt-missed APPROVE false 0",
                "GPA.3301-0000-0000-00006 prt-granted DECLINE false 80000",
            ], "\(reviews)\n\(sent.stdout)\n\(sent.stderr)")
        #expect(
            try w.t.scalar(
                "SELECT string_agg(pending_refund_token || ' ' || state || ' ' || coalesce(http_status::text, '-'), ', ' ORDER BY pending_refund_token) FROM recon.play_refund_reviews"
            )
                == "prt-charged-back not_judged -, prt-granted sent 200, prt-missed sent 200, prt-too-old expired -, prt-unknown-order not_judged -"
        )

        // Again: what was sent is never sent again.
        let again = try respond(["--send"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(harness.service.refundReviews.count == 2 && harness.service.refundReviews.allSatisfy { $0.ignoredRepeats == 0 })

        // consumption_requests.csv lists the reviews with the answers, each ending google_play, by
        // time then message; a night after the chargeback of order 1 (Google voided it after the
        // review) says refunded.
        let realNow = Int64(Date().timeIntervalSince1970 * 1000)
        let later = try w.run(["--source-schema", "shop"], asOf: UTC.timestamp(realNow), environment: env)
        #expect(later.status == 0, "\(later.stderr)")
        let requests = T.rows(
            w.out.appendingPathComponent(String(UTC.timestamp(realNow).prefix(10))).appendingPathComponent("consumption_requests.csv"),
            store: "google_play")
        let cells = requests.dropFirst().map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(requests.first?.hasPrefix("requested_at,environment,transaction_id,") == true, "\(requests)")
        #expect(
            cells.map { [$0[2], $0[5], $0[6], $0[7], $0[8], $0[10], $0[13], $0[14], $0[17]].joined(separator: " ") } == [
                "GPA.3301-0000-0000-00006 play.only.gems 1 0.99 USD expired   pending",
                "GPA.3301-0000-0000-00006 play.only.gems 1 0.99 USD sent 80000 DECLINE pending",
                "GPA.3301-0000-0000-00005 play.only.gems 1 0.99 USD sent 0 APPROVE pending",
                "GPA.3301-0000-0000-00001 play.only.gems 1 0.99 USD not_judged   refunded",
                "GPA.3301-0000-0000-00077     not_judged   pending",
            ], "\(requests)")

        // Neither Apple's key nor a subscription: nothing to answer, exit 78 naming what to set.
        var none = env
        none["PLAY_PUBSUB_SUBSCRIPTION"] = nil
        let off = try respond([], environment: none)
        #expect(off.status == 78 && off.stderr.contains("PLAY_PUBSUB_SUBSCRIPTION"), "\(off.status) \(off.stderr)")
    }

    @Test(
        "--play-account-id: an obfuscatedExternalAccountId that is our order id's SHA-256 ties the purchase to that order; under user, the user id's SHA-256 makes it that user's"
    )
    func accountIDs() throws {
        let (w, base) = try T.playWorld("play_account_ids")
        defer { w.stop() }
        let hash = { (id: String) throws -> String in try #require(try w.t.scalar("SELECT encode(sha256(\(id)::bytea), 'hex')")) }
        let asOf = Int64(ISO8601DateFormatter().date(from: N.asOf)!.timeIntervalSince1970 * 1000)
        var truth = T.playTruth()
        truth.purchases += [
            T.playPurchase("tok-order-hash", "GPA.3301-0000-0000-00010", daysBefore: 1, account: try hash("PO-H")),
            T.playPurchase("tok-user-hash", "GPA.3301-0000-0000-00011", daysBefore: 1, account: try hash("P1")),
        ]
        truth.notifications = ["tok-order-hash", "tok-user-hash"].map {
            .init(
                packageName: T.playPackage, eventTimeMs: asOf - 20 * 3_600_000,
                kind: .oneTimeProduct(notificationType: 1, purchaseToken: $0, sku: "play.only.gems"))
        }
        let harness = try PlayHarness(truth: truth, packages: [T.playPackage], subscription: Self.subscription)
        try w.t.db.execute("INSERT INTO shop.play_orders VALUES ('PO-H', 'play.only.gems')")
        let env = Self.environment(base, harness)
        let day = w.out.appendingPathComponent("2026-11-21")
        func lists(_ extra: [String]) throws -> (compensate: [String], unattributed: [String]) {
            let r = try w.run(["--source-schema", "shop"] + extra, environment: env)
            #expect(r.status == 0, "\(r.stderr)")
            let pick = { (file: String) in
                T.rows(day.appendingPathComponent(file), store: "google_play").filter { $0.contains("GPA.3301-0000-0000-0001") }
            }
            return (pick("compensate.csv"), pick("unattributed.csv"))
        }
        // order (the default): the hash of PO-H names PO-H; the hash of a user names no order.
        let byOrder = try lists([])
        #expect(byOrder.compensate.count == 1 && byOrder.compensate.first?.hasPrefix("PO-H,P1,play.only.gems,") == true, "\(byOrder)")
        #expect(byOrder.compensate.first?.contains(",GPA.3301-0000-0000-00010,") == true, "\(byOrder)")
        #expect(byOrder.compensate.first?.contains(",exact,") == true, "\(byOrder)")
        #expect(byOrder.unattributed.count == 1 && byOrder.unattributed.first?.hasPrefix("GPA.3301-0000-0000-00011,") == true, "\(byOrder)")
        // user: the hash of P1 makes the purchase P1's (its order inferred); the order's hash names no user.
        let byUser = try lists(["--play-account-id", "user"])
        let mine = byUser.compensate.filter { $0.contains(",GPA.3301-0000-0000-00011,") }
        #expect(mine.count == 1 && mine.first?.split(separator: ",", omittingEmptySubsequences: false)[1] == "P1", "\(byUser)")
        #expect(mine.first?.contains(",exact,") == false, "\(byUser)")
        #expect(byUser.unattributed.count == 1 && byUser.unattributed.first?.hasPrefix("GPA.3301-0000-0000-00010,") == true, "\(byUser)")
        let bad = try w.run(["--source-schema", "shop", "--play-account-id", "email"], environment: env)
        #expect(bad.status == 64 && bad.stderr.contains("--play-account-id must be order or user"), "\(bad.stderr)")
        for rate in ["orders=0", "purchases=10", "orders", "voided_purchases=-1", "orders=1e9"] {
            let r = try w.run(["--source-schema", "shop", "--play-rate", rate], environment: env)
            #expect(r.status == 64 && r.stderr.contains("--play-rate '\(rate)' is not BUCKET=N"), "\(rate): \(r.stderr)")
        }
    }

    @Test(
        "Apple unreachable while Google Play answers: the night goes on, Play's lists written, the App Store's part skipped and said so; neither store answering: exit 75"
    )
    func oneStoreDown() throws {
        let harness = try PlayHarness(truth: T.playTruth(), packages: [T.playPackage])
        let (w, base) = try T.playWorld("play_apple_down")
        defer { w.stop() }
        var env = Self.environment(base, harness)
        env["PLAY_PUBSUB_SUBSCRIPTION"] = nil
        // Apple's simulator (verifyReceipt) is gone: every request is refused a connection.
        w.sim.stop()
        let night = try w.run(["--source-schema", "shop"], environment: env)
        #expect(night.status == 0, "\(night.stderr)")
        let day = w.out.appendingPathComponent("2026-11-21")
        let summary = try Self.summary(day)
        let skipped = summary["skipped_checks"] as? [String] ?? []
        #expect(skipped.contains { $0.hasPrefix("app_store_verification (") }, "\(skipped)")
        #expect(night.stderr.contains("the App Store's part is skipped tonight"), "\(night.stderr)")
        let compensate = T.rows(day.appendingPathComponent("compensate.csv"), store: "google_play")
        #expect(compensate.contains { $0.hasPrefix("PO-U,P1,play.only.gems,") }, "\(compensate)")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_purchases") > 0)

        // Google gone too: nothing to do tonight, exit 75 naming both.
        env["PLAY_API_URL"] = "http://127.0.0.1:9"
        env["PLAY_TOKEN_URL"] = "http://127.0.0.1:9/token"
        let both = try w.run(["--source-schema", "shop"], environment: env)
        #expect(both.status == 75 && both.stderr.contains("neither store answered tonight"), "\(both.status) \(both.stderr)")
    }

    @Test(
        "killed (SIGKILL) mid-sweep of Google's voided purchases and run again: every record stored once, the position moved only by the sweep that read every page"
    )
    func killedMidVoidedSweep() throws {
        let realNow = Int64(Date().timeIntervalSince1970 * 1000)
        var truth = T.playTruth()
        // Five pages of 1,000 records, one page a second at most (Google's 30 per 30 s).
        truth.voided += (0..<4500).map { i in
            PlayTruth.Voided(
                packageName: T.playPackage, purchaseToken: "tok-voided-\(i)", orderID: nil,
                purchaseTimeMs: realNow - 5 * 86_400_000, voidedTimeMs: realNow - 4 * 86_400_000 + Int64(i) * 1000, source: 0, reason: 1)
        }
        let harness = try PlayHarness(truth: truth, packages: [T.playPackage])
        let (w, base) = try T.playWorld("play_voided_kill")
        defer { w.stop() }
        var env = Self.environment(base, harness)
        env["PLAY_PUBSUB_SUBSCRIPTION"] = nil
        let job = try startTool(
            "iap-reconcile",
            [
                "run", "--source-schema", "shop", "--as-of", N.asOf, "--out", w.out.path, "--no-progress", "--timeout-ms", "3000",
                "--retry-base-ms", "20",
            ], environment: env)
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, job.process.isRunning, (try? w.t.int("SELECT count(*) FROM recon.play_voided")) ?? 0 < 1000 {
            usleep(20_000)
        }
        let killedInSweep = job.process.isRunning
        job.kill9()
        #expect(killedInSweep, "the run ended before the sweep could be interrupted")
        let storedBefore = try w.t.int("SELECT count(*) FROM recon.play_voided")
        #expect(storedBefore >= 1000 && storedBefore < 4502, "\(storedBefore)")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_voided_positions") == 0, "the position moved before the sweep ended")

        let again = try w.run(["--source-schema", "shop"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try w.t.int("SELECT count(*) FROM recon.play_voided") == 4502)
        #expect(try w.t.int("SELECT count(*) FROM recon.play_voided_positions WHERE package = \(T.playPackage)") == 1)
        let voided = try #require(
            (try Self.summary(w.out.appendingPathComponent("2026-11-21"))["google_play"] as? [String: Any])?["voided"] as? [String: Any])
        // The whole span read again (the old position), each record new to the job only once.
        #expect(voided["records"] as? Int == 4502 && voided["stored"] as? Int == 4502 - storedBefore, "\(voided)")
    }

    /// `base` with Google Play at `harness`: its one package, its API, token endpoint and Pub/Sub subscription.
    static func environment(_ base: [String: String], _ harness: PlayHarness) -> [String: String] {
        var env = base
        env["PLAY_PACKAGE_NAMES"] = T.playPackage
        env["PLAY_API_URL"] = harness.sim.baseURL
        env["PLAY_TOKEN_URL"] = harness.sim.baseURL + "/token"
        env["PLAY_PUBSUB_URL"] = harness.sim.baseURL
        env["PLAY_PUBSUB_SUBSCRIPTION"] = subscription
        return env
    }

    static func summary(_ day: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: day.appendingPathComponent("summary.json"))) as? [String: Any])
    }

    @Test("what the job keeps of a message: each kind, and data that is no notification kept as unreadable with its reason")
    func keptOfHostileData() {
        func kept(_ text: String) -> PlayNotificationPull.Kept { PlayNotificationPull.kept(Array(text.utf8)) }
        let base = #""packageName":"com.example.game","eventTimeMillis":"1700000000000""#
        #expect(
            kept(#"{\#(base),"oneTimeProductNotification":{"notificationType":2,"purchaseToken":"t.1","sku":"gems"}}"#)
                == .init(kind: "canceled", package: "com.example.game", eventAt: 1_700_000_000_000, token: "t.1"))
        #expect(
            kept(#"{\#(base),"voidedPurchaseNotification":{"purchaseToken":"t.2","orderId":"GPA.1","productType":2,"refundType":2}}"#)
                == .init(kind: "voided", package: "com.example.game", eventAt: 1_700_000_000_000, token: "t.2", orderID: "GPA.1"))
        let review = kept(
            #"{\#(base),"pendingRefundReviewNotification":{"pendingRefundToken":"p.1","orderId":"GPA.2","refundReason":7}}"#)
        #expect(review.kind == "refund_review" && review.orderID == "GPA.2" && review.review?.token == "p.1" && review.review?.reason == 7)
        let hostile: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated", Array(#"{\#(base),"testNotification":{"#.utf8)),
            ("invalid UTF-8", Array(#"{"packageName":"com.example.g"#.utf8) + [0xFF, 0xFE] + Array(#"","testNotification":{}}"#.utf8)),
            ("two kinds", Array(#"{\#(base),"testNotification":{},"subscriptionNotification":{}}"#.utf8)),
            ("no kind", Array("{\(base)}".utf8)),
            ("a repeated key", Array(#"{\#(base),"packageName":"com.other.game","testNotification":{}}"#.utf8)),
            (
                "a token that is not one",
                Array(#"{\#(base),"oneTimeProductNotification":{"notificationType":1,"purchaseToken":"a/../b","sku":"g"}}"#.utf8)
            ),
            (
                "a type out of range",
                Array(#"{\#(base),"oneTimeProductNotification":{"notificationType":9,"purchaseToken":"t","sku":"g"}}"#.utf8)
            ),
            ("a negative time", Array(#"{"packageName":"com.example.game","eventTimeMillis":"-5","testNotification":{}}"#.utf8)),
            ("a package that is not one", Array(#"{"packageName":"../x","eventTimeMillis":"1","testNotification":{}}"#.utf8)),
            ("an array", Array("[]".utf8)),
        ]
        for (name, data) in hostile {
            let k = PlayNotificationPull.kept(data)
            #expect(
                k.kind == "unreadable" && k.token == nil && k.review == nil && !(k.problem ?? "").isEmpty,
                "\(name): \(k.kind) \(k.problem ?? "")")
        }
    }
}
