@testable import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Testing

/// `iap-reconcile respond` end to end, the built executable against a real Postgres
/// and the simulator over real HTTP. Here the requests come from the shop's own
/// `iap_notifications`, signed by the test PKI as Apple signs them, hostile rows among them.
@Suite("respond: answering Apple's refund requests", .serialized, .enabled(if: Harness.hasDatabase))
struct RespondTests {
    typealias W = ServerAPINightTests.World
    static let asOfMs = UTC.parse(NightTests.asOf)!

    /// A CONSUMPTION_REQUEST for `row`, signed at `signedMs` (or another type).
    static func notification(_ row: AppleTruthRow, pki: TestPKI, signedMs: Int64, uuid: String,
                             type: String = "CONSUMPTION_REQUEST", reason: String = "UNINTENDED_PURCHASE") -> String {
        let transaction = pki.signTransaction(row.payload(signedDate: signedMs, refund: nil))
        let json = #"{"notificationType":"\#(type)","notificationUUID":"\#(uuid)","data":{"bundleId":"\#(row.bundleID)","#
            + #""environment":"\#(row.appleEnvironment)","signedTransactionInfo":"\#(transaction)","consumptionRequestReason":"\#(reason)"},"#
            + #""version":"2.0","signedDate":\#(signedMs)}"#
        return pki.sign(payload: Array(json.utf8))
    }

    static func uuid(_ n: Int) -> String { String(format: "6f1d%04x-0000-4000-8000-%012x", n, n) }

    static func json(_ r: ProcessResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
    }

    @Test("requests from iap_notifications: decided as lookup decides, consent and the 12 hours kept, bad payloads kept aside, nothing sent without --send")
    func shopNotifications() throws {
        let w = try ServerAPINightTests.world("respond_shop", share: "0.25")
        defer { w.stop() }
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        let pki = try TestPKI.load(directory: w.dir.appendingPathComponent("pki").path)
        let rows = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        let candidates: [AppleTruthRow] = rows.filter {
            $0.environment == .production && $0.refund == nil && $0.productType == .consumable && $0.bundleID == NightTests.bundle
        }
        let compensateRows = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-21"), "compensate.csv")
        let compensate = Set(compensateRows.map { $0["transaction_id"]! })
        let undelivered = Array(candidates.filter { compensate.contains($0.transactionID) }.prefix(4))
        // Granted, by lookup's verdict: the first six.
        var delivered: [AppleTruthRow] = []
        for row in candidates where !compensate.contains(row.transactionID) && delivered.count < 6 {
            if try LookupAgreesTests.lookup(w, row.transactionID)?["verdict"] as? String == "granted" { delivered.append(row) }
        }
        #expect(undelivered.count == 4 && delivered.count == 6)
        let asked = undelivered + delivered

        try w.t.db.execute("""
            CREATE TABLE public.iap_notifications (signed_payload text, received_at timestamptz);
            TRUNCATE public.iap_consents, public.iap_consumption
            """)
        func insert(_ payload: String?, at ms: Int64) throws {
            try w.t.db.query("INSERT INTO public.iap_notifications VALUES (\(payload), to_timestamp(\(ms)::bigint / 1000.0))")
        }
        // Every request but the last two is inside its 12 hours at --now; those two are older.
        var signedAt: [String: Int64] = [:]
        for (i, row) in asked.enumerated() {
            let ms = i < asked.count - 2 ? Self.asOfMs - Int64(i + 1) * 600_000 : Self.asOfMs - 13 * 3_600_000
            signedAt[row.transactionID] = ms
            try insert(Self.notification(row, pki: pki, signedMs: ms, uuid: Self.uuid(i)), at: ms + 1000)
            // Apple repeats a notification: the same UUID again, stored once.
            if i == 0 { try insert(Self.notification(row, pki: pki, signedMs: ms, uuid: Self.uuid(i)), at: ms + 3_600_000) }
        }
        // Consent for all but the second delivered purchase's user; the third's came after the request.
        let noConsent = delivered[1].customer, lateConsent = delivered[2].customer
        for row in asked where row.customer != noConsent {
            let at = row.customer == lateConsent ? Self.asOfMs - 60_000 : Self.asOfMs - 40 * 86_400_000
            try w.t.db.query("INSERT INTO public.iap_consents VALUES (\(row.customer), to_timestamp(\(at)::bigint / 1000.0))")
        }
        try w.t.db.query("""
            INSERT INTO public.iap_consumption (transaction_id, consumption_percentage)
            VALUES (\(delivered[0].transactionID), 67932), (\(delivered[3].transactionID), 250000)
            """)
        // Hostile rows: a broken signature, garbage, NULL, an empty text, another type (not ours, not an error).
        let good = Self.notification(delivered[4], pki: pki, signedMs: Self.asOfMs - 60_000, uuid: Self.uuid(900))
        var tampered = Array(good.utf8)
        tampered[tampered.count - 5] = tampered[tampered.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        try insert(String(decoding: tampered, as: UTF8.self), at: Self.asOfMs - 50_000)
        try insert("not a jws at all", at: Self.asOfMs - 40_000)
        try insert(nil, at: Self.asOfMs - 30_000)
        try insert("", at: Self.asOfMs - 25_000)
        try insert(Self.notification(delivered[5], pki: pki, signedMs: Self.asOfMs - 20_000, uuid: Self.uuid(901), type: "ONE_TIME_CHARGE"),
                   at: Self.asOfMs - 20_000)

        let first = try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress"])
        #expect(first.status == 0, "\(first.stderr)")
        let doc = try Self.json(first)
        // The simulator's notification history holds requests of its own (the generator's): only ours are looked at here.
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE source = 'iap_notifications'") == asked.count)
        #expect(doc["found"] as? Int ?? 0 >= asked.count && doc["rejected"] as? Int == 4 && doc["send"] as? Bool == false,
                "found \(doc["found"] ?? "nil"), rejected \(doc["rejected"] ?? "nil"), read \(doc["read"] ?? "nil")")
        let ours = { (item: [String: Any]) in (item["notification_uuid"] as? String)?.hasPrefix("6f1d") == true }
        let decided = try #require(doc["decided"] as? [[String: Any]]).filter(ours)
        var verdicts: [String: Int] = [:]
        #expect(decided.count == asked.count)
        for item in decided {
            let tid = item["transaction_id"] as! String
            let row = asked.first { $0.transactionID == tid }!
            let state = item["state"] as! String
            let body = (item["body"] as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            if signedAt[tid]! < Self.asOfMs - 12 * 3_600_000 {
                #expect(state == "expired", "\(tid): \(item)")
                continue
            }
            if row.customer == noConsent || row.customer == lateConsent {
                #expect(state == "no_consent", "\(tid): \(item)")
                continue
            }
            // The verdict lookup gives, on the same facts: respond's answer follows it.
            let verdict = try #require(try LookupAgreesTests.lookup(w, tid))["verdict"] as? String
            #expect(state == "would_send", "\(tid) (\(verdict ?? "?")): \(item)")
            verdicts[verdict ?? "?", default: 0] += 1
            // The product's flag (the generator sets it for some products), else the default: false.
            let sample = try w.t.scalar(
                "SELECT coalesce(bool_or(sample_content_provided), false)::text FROM public.iap_products WHERE product_id = \(row.productID)")
            #expect(body?["customerConsented"] as? Bool == true && body?["sampleContentProvided"] as? Bool == (sample == "true"), "\(item)")
            if verdict == "granted" {
                #expect(body?["deliveryStatus"] as? String == "DELIVERED", "\(tid): \(item)")
                let pct = tid == delivered[0].transactionID ? 67932 : nil
                #expect(body?["consumptionPercentage"] as? Int == pct, "\(tid): \(item)")
            } else {
                // Never (fully) granted: compensated by the night, or before its window (not delivered either).
                #expect(["compensate", "outside_window"].contains(verdict) && body?["deliveryStatus"] as? String == "UNDELIVERED_OTHER"
                        && body?["consumptionPercentage"] as? Int == 0, "\(tid) (\(verdict ?? "?")): \(item)")
            }
            #expect(body?["refundPreference"] == nil)
        }
        #expect(verdicts == ["granted": 2, "compensate": 4], "\(verdicts)")
        let rejects = try w.t.db.query("SELECT source || ': ' || reason FROM recon.respond_rejects ORDER BY 1")
        #expect(rejects.rowCount == 4, "\((0..<rejects.rowCount).map { rejects.value($0, 0) ?? "" })")
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE sends > 0") == 0, "sent without --send")

        // Again: nothing new is found; the open ones are decided again, the same way.
        let again = try Self.json(try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress"]))
        #expect(again["found"] as? Int == 0)
        let reDecided = (again["decided"] as? [[String: Any]] ?? []).filter(ours).map { "\($0["transaction_id"]!) \($0["state"]!) \($0["body"] ?? "")" }
        let firstOpen = decided.filter { !["expired", "no_consent"].contains($0["state"] as? String) }.map { "\($0["transaction_id"]!) \($0["state"]!) \($0["body"] ?? "")" }
        #expect(reDecided.sorted() == firstOpen.sorted())

        // The night lists them: one row per request, the answer as stored.
        let second = try w.night()
        #expect(second.status == 0, "\(second.stderr)")
        let all = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-21"), "consumption_requests.csv")
        let csv = all.filter { $0["notification_uuid"]!.hasPrefix("6f1d") }
        #expect(csv.count == asked.count)
        for row in csv {
            let stored = try w.t.scalar("SELECT state FROM recon.consumption_requests WHERE notification_uuid = \(row["notification_uuid"]!)")
            #expect(row["answer"] == stored && row["outcome"] == "pending" && row["reason"] == "UNINTENDED_PURCHASE", "\(row)")
        }
        #expect(all.count == (try w.t.int("SELECT count(*) FROM recon.consumption_requests")))
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: w.out.appendingPathComponent("2026-11-21/summary.json"))) as? [String: Any])
        let funnel = try #require(summary["refund_requests"] as? [String: Any])
        #expect(funnel["requests"] as? Int == all.count && funnel["answered_in_time"] as? Int == 0, "\(funnel)")

        // The same shop mapped as a two-store shop (a store column on the four relations, the
        // shop's own relations beside them): a new request in its iap_notifications is found, and
        // the open ones are decided as before, consents and consumption read from the shop's
        // schema, never the App Store's views.
        try w.t.db.execute("""
            CREATE SCHEMA shop;
            CREATE VIEW shop.iap_products AS SELECT *, 'app_store'::text AS store FROM public.iap_products;
            CREATE VIEW shop.iap_orders AS SELECT *, 'app_store'::text AS store FROM public.iap_orders;
            CREATE VIEW shop.iap_receipts AS SELECT *, 'app_store'::text AS store FROM public.iap_receipts;
            CREATE VIEW shop.iap_grants AS SELECT *, 'app_store'::text AS store FROM public.iap_grants;
            CREATE VIEW shop.iap_consents AS SELECT * FROM public.iap_consents;
            CREATE VIEW shop.iap_consumption AS SELECT * FROM public.iap_consumption;
            CREATE VIEW shop.iap_notifications AS SELECT * FROM public.iap_notifications;
            """)
        try insert(Self.notification(delivered[0], pki: pki, signedMs: Self.asOfMs - 30_000, uuid: Self.uuid(950)), at: Self.asOfMs - 29_000)
        let twoStores = try Self.json(try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress", "--source-schema", "shop"]))
        #expect(twoStores["found"] as? Int == 1, "\(twoStores["found"] ?? "nil")")
        let shopDecided = (twoStores["decided"] as? [[String: Any]] ?? []).filter(ours)
        let newOne = shopDecided.filter { $0["notification_uuid"] as? String == Self.uuid(950) }
        #expect(newOne.count == 1 && newOne.first?["state"] as? String == "would_send", "\(newOne)")
        let sameAsBefore = shopDecided.filter { $0["notification_uuid"] as? String != Self.uuid(950) }
            .map { "\($0["transaction_id"]!) \($0["state"]!) \($0["body"] ?? "")" }
        #expect(sameAsBefore.sorted() == firstOpen.sorted(), "\(sameAsBefore)")
    }

    /// The simulator's log of accepted answers: one JSON object per line.
    static func consumptionLog(_ url: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func parsed(_ body: String?) -> NSDictionary? {
        body.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? NSDictionary }
    }

    @Test("requests from notification history, --send: each answered once within its window, with exactly the body decided; nothing without consent; a rerun sends nothing")
    func sendFromHistory() throws {
        let dir = try Harness.scratchDirectory("respond-send-log")
        let log = dir.appendingPathComponent("consumption.jsonl")
        let w = try ServerAPINightTests.world("respond_send", share: "0.25", simArguments: ["--consumption-log", log.path])
        defer { w.stop() }
        let night = try w.night()
        #expect(night.status == 0, "\(night.stderr)")
        let truth = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        let requested = truth.filter { $0.consumptionRequest != nil && $0.bundleID == NightTests.bundle }
        #expect(requested.count >= 10, "the generator made \(requested.count) requests")

        // Sending off: decided and recorded, nothing reaches Apple.
        let dry = try Self.json(try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress"]))
        let dryItems = try #require(dry["decided"] as? [[String: Any]])
        #expect(dry["found"] as? Int == requested.count, "found \(dry["found"] ?? "nil") of \(requested.count)")
        #expect(Self.consumptionLog(log).isEmpty, "an answer was sent without --send")
        var states: [String: Int] = [:]
        for item in dryItems { states[item["state"] as! String, default: 0] += 1 }
        let expired = requested.filter { $0.consumptionRequest!.signedDateMs < Self.asOfMs - 12 * 3_600_000 }.count
        #expect(states["expired"] == expired && (states["would_send"] ?? 0) > 0 && (states["no_consent"] ?? 0) > 0, "\(states)")
        let willSend = dryItems.filter { $0["state"] as? String == "would_send" }

        // Sending on: exactly what was decided, once each.
        let sent = try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress", "--send"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let sentItems = try #require(try Self.json(sent)["decided"] as? [[String: Any]])
        let answers = Self.consumptionLog(log)
        #expect(answers.count == willSend.count, "\(answers.count) answers reached Apple, \(willSend.count) were to be sent")
        for item in willSend {
            let tid = item["transaction_id"] as! String
            let got = answers.filter { $0["transactionId"] as? String == tid }
            #expect(got.count == 1 && got.first?["put"] as? Int == 1, "\(tid): \(got.count) answers")
            #expect((got.first?["body"] as? NSDictionary) == Self.parsed(item["body"] as? String), "\(tid): \(got.first ?? [:]) ≠ \(item)")
            let after = sentItems.first { $0["notification_uuid"] as? String == item["notification_uuid"] as? String }
            #expect(after?["state"] as? String == "sent" && after?["http_status"] as? Int == 202, "\(tid): \(after ?? [:])")
        }
        // Nothing reached Apple for a request without consent, expired or not judged.
        let silent = Set(dryItems.filter { $0["state"] as? String != "would_send" }.map { $0["transaction_id"] as! String })
        #expect(!answers.contains { silent.contains($0["transactionId"] as? String ?? "") })
        // Each sent inside its window, by respond's clock.
        #expect(try w.t.int("""
            SELECT count(*) FROM recon.consumption_requests
            WHERE state = 'sent' AND (extract(epoch FROM sent_at) * 1000)::bigint > requested_ms + 12 * 3600000
            """) == 0)
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state = 'sent' AND sends = 1") == willSend.count)

        // Again, and again an hour later: nothing is sent twice; the expired stay unanswered.
        let metrics = dir.appendingPathComponent("respond.prom")
        for now in [NightTests.asOf, "2026-11-21T04:00:00Z"] {
            let again = try w.run(["respond", "--now", now, "--json", "--no-progress", "--send", "--metrics-file", metrics.path])
            #expect(again.status == 0, "\(again.stderr)")
        }
        let prom = NightTests.read(metrics)
        #expect(prom.contains("iap_reconcile_respond_requests{answer=\"sent\"} \(willSend.count)\n")
                && prom.contains("iap_reconcile_respond_last_run_exit_code 0\n")
                && prom.contains("# TYPE iap_reconcile_respond_oldest_unanswered_age_seconds gauge"), "\(prom)")
        #expect(Self.consumptionLog(log).count == answers.count, "a request was answered twice")

        // The night lists every request with its answer; the funnel counts the file.
        let second = try w.night()
        #expect(second.status == 0, "\(second.stderr)")
        let csv = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-21"), "consumption_requests.csv")
        #expect(csv.count == requested.count)
        #expect(csv.filter { $0["answer"] == "sent" }.count == willSend.count)
        let summary = try #require(try JSONSerialization.jsonObject(
            with: Data(contentsOf: w.out.appendingPathComponent("2026-11-21/summary.json"))) as? [String: Any])
        let funnel = try #require(summary["refund_requests"] as? [String: Any])
        #expect(funnel["requests"] as? Int == csv.count && funnel["answered_in_time"] as? Int == willSend.count, "\(funnel)")
        let outcomes = ["refunded", "declined", "pending", "no_outcome"].reduce(0) { $0 + (funnel[$1] as? Int ?? 0) }
        #expect(outcomes == csv.count)
    }

    @Test("killed (SIGKILL) while sending, then run again: every request answered, none twice but those stored as sending at the kill")
    func killedWhileSending() throws {
        let dir = try Harness.scratchDirectory("respond-kill-log")
        let log = dir.appendingPathComponent("consumption.jsonl")
        let w = try ServerAPINightTests.world("respond_kill", share: "0.25",
                                              simArguments: ["--consumption-log", log.path, "--latency-ms", "20"])
        defer { w.stop() }
        #expect(try w.night().status == 0)
        // 2% of Apple's 50 a second: one answer a second, so the kill lands among the sends.
        let job = try startTool("iap-reconcile", ["respond", "--now", NightTests.asOf, "--send", "--no-progress",
                                                  "--share-percent", "2"], environment: w.env)
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, job.process.isRunning, Self.consumptionLog(log).count < 3 { usleep(5_000) }
        let killedWhileSending = job.process.isRunning
        job.kill9()
        #expect(killedWhileSending, "respond ended before the kill")
        let beforeRerun = Self.consumptionLog(log).count
        let sendingAtKill = try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state = 'sending'")
        #expect(sendingAtKill > 0)

        let again = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        let answers = Self.consumptionLog(log)
        #expect(answers.count > beforeRerun)
        var perTransaction: [String: Int] = [:]
        for a in answers { perTransaction[a["transactionId"] as? String ?? "", default: 0] += 1 }
        let sends = try w.t.db.query("SELECT transaction_id, sends, state FROM recon.consumption_requests WHERE sends > 0")
        var repeated = 0
        for i in 0..<sends.rowCount {
            let tid = sends.value(i, 0)!, n = Int(sends.value(i, 1)!)!
            #expect(sends.value(i, 2) == "sent", "\(tid) ended \(sends.value(i, 2) ?? "nil")")
            // Each call counted before it was made: Apple got at most that many, and twice only when stored as sending at the kill.
            #expect((perTransaction[tid] ?? 0) <= n && n <= 2, "\(tid): \(perTransaction[tid] ?? 0) answers, \(n) sends")
            if (perTransaction[tid] ?? 0) == 2 { repeated += 1 }
        }
        #expect(repeated <= sendingAtKill, "\(repeated) answered twice, \(sendingAtKill) were sending at the kill")
        #expect(perTransaction.values.allSatisfy { $0 >= 1 && $0 <= 2 })
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state IN ('would_send', 'sending')") == 0)
    }

    @Test("a night while respond runs again and again: both finish, the reports equal the generator's truth")
    func besideTheNight() throws {
        // A slow App Store, so the night lasts long enough for several responds.
        let w = try ServerAPINightTests.world("respond_beside", users: 600, share: "0.25", simArguments: ["--latency-ms", "60"])
        defer { w.stop() }
        // The schema first (respond never migrates), then the night and respond at once.
        #expect(try w.run(["migrate"]).status == 0)
        let night = try startTool("iap-reconcile", ["run", "--as-of", NightTests.asOf, "--out", w.out.path, "--no-progress",
                                                    "--timeout-ms", "3000", "--retry-base-ms", "20"], environment: w.env)
        var responds: [Int32] = []
        let deadline = Date().addingTimeInterval(240)
        while night.process.isRunning && Date() < deadline {
            let r = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress", "--share-percent", "100"])
            responds.append(r.status)
            #expect(r.status == 0, "respond during the night: \(r.stderr)")
            usleep(300_000)
        }
        night.process.waitUntilExit()
        #expect(night.process.terminationStatus == 0)
        #expect(responds.count >= 2, "the night ended before respond could run beside it (\(responds.count) runs)")
        NightTests.expectReportsMatchTruth(w.out.appendingPathComponent("2026-11-21"), expected: w.expected)
    }

    @Test("Apple refuses an answer (400 4000185, family shared): recorded with its errorCode, never sent again; a refused key (401): exit 78, nothing marked sent")
    func refusedAnswers() throws {
        let dir = try Harness.scratchDirectory("respond-refused")
        let w = try ServerAPINightTests.world("respond_refused", share: "0.25")
        defer { w.stop() }
        #expect(try w.night().status == 0)
        let dry = try Self.json(try w.run(["respond", "--now", NightTests.asOf, "--json", "--no-progress"]))
        let willSend = (dry["decided"] as? [[String: Any]] ?? []).filter { $0["state"] as? String == "would_send" }
        let shared = try #require(willSend.first?["transaction_id"] as? String)

        // A key Apple does not know: 401 on the first request, exit 78, nothing sent or marked sent.
        let otherKey = dir.appendingPathComponent("other.p8")
        #expect(try runTool("iap-sim", ["keygen", "--out", otherKey.path], environment: w.env).status == 0)
        var refusedKey = w.env
        refusedKey["IAP_PRIVATE_KEY_FILE"] = otherKey.path
        let unauthorized = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress"], environment: refusedKey)
        #expect(unauthorized.status == 78 && unauthorized.stderr.contains("401"), "\(unauthorized.status): \(unauthorized.stderr)")
        #expect(try w.t.int("SELECT count(*) FROM recon.consumption_requests WHERE state IN ('sent', 'sending')") == 0)

        // The same truth, but one requested purchase is family shared: Apple refuses its answer.
        var rows = try AppleTruthFile.parse(String(contentsOf: w.truth, encoding: .utf8))
        let i = try #require(rows.firstIndex { $0.transactionID == shared })
        rows[i].familyShared = true
        let truth = dir.appendingPathComponent("apple-truth.tsv"), log = dir.appendingPathComponent("consumption.jsonl")
        try (AppleTruthFile.header + rows.map(AppleTruthFile.line).joined()).write(to: truth, atomically: true, encoding: .utf8)
        let key = URL(fileURLWithPath: w.env["IAP_PRIVATE_KEY_FILE"]!)
        let sim = try SimulatorProcess(["--refunds", w.dir.appendingPathComponent("refund-list.csv").path, "--apple-truth", truth.path,
                                        "--pki", w.dir.appendingPathComponent("pki").path, "--shared-secret", ServerAPINightTests.secret,
                                        "--api-key", key.path, "--api-key-id", ServerAPINightTests.keyID,
                                        "--api-issuer", ServerAPINightTests.issuer, "--api-bundle", NightTests.bundle,
                                        "--consumption-log", log.path])
        defer { sim.stop() }
        var env = w.env.merging(sim.urls) { $1 }
        env["IAP_API_URL_PRODUCTION"] = "http://127.0.0.1:\(sim.port)/production"
        env["IAP_API_URL_SANDBOX"] = "http://127.0.0.1:\(sim.port)/sandbox"
        for _ in 0..<2 {
            let r = try w.run(["respond", "--now", NightTests.asOf, "--send", "--no-progress"], environment: env)
            #expect(r.status == 0, "\(r.stderr)")
        }
        let stored = try w.t.db.query("""
            SELECT state, http_status::text, error_code::text, sends::text FROM recon.consumption_requests WHERE transaction_id = \(shared)
            """)
        #expect(stored.value(0, 0) == "rejected" && stored.value(0, 1) == "400" && stored.value(0, 2) == "4000185"
                && stored.value(0, 3) == "1", "\((0..<4).map { stored.value(0, $0) ?? "nil" })")
        let answers = Self.consumptionLog(log)
        #expect(!answers.contains { $0["transactionId"] as? String == shared })
        #expect(answers.count == willSend.count - 1, "\(answers.count) accepted of \(willSend.count)")
        let night = try w.night()
        #expect(night.status == 0)
        let row = LookupAgreesTests.report(w.out.appendingPathComponent("2026-11-21"), "consumption_requests.csv")
            .first { $0["transaction_id"] == shared }
        #expect(row?["answer"] == "rejected" && row?["apple_error_code"] == "4000185", "\(row ?? [:])")
    }

    @Test("a job schema behind this build: exit 78 asking for migrate; no key: 78; bad options: 64")
    func refusals() throws {
        let w = try ServerAPINightTests.world("respond_refusals", users: 20)
        defer { w.stop() }
        let behind = try w.run(["respond", "--now", NightTests.asOf, "--no-progress"])
        #expect(behind.status == 78 && behind.stderr.contains("iap-reconcile migrate"), "\(behind.stderr)")
        var noKey = w.env
        noKey["IAP_KEY_ID"] = nil
        let unset = try w.run(["respond", "--now", NightTests.asOf], environment: noKey)
        #expect(unset.status == 78 && unset.stderr.contains("IAP_KEY_ID"), "\(unset.stderr)")
        for bad in [["--share-percent", "0"], ["--refund-preference", "always"], ["--decline-above", "101"], ["--now", "yesterday"],
                    ["--as-of", NightTests.asOf]] {
            let r = try w.run(["respond"] + bad)
            #expect(r.status == 64, "\(bad): \(r.status) \(r.stderr)")
        }
        var env = w.env
        env["IAP_CONSUMPTION_RESPONSES"] = "yes please"
        let badEnv = try w.run(["respond", "--now", NightTests.asOf], environment: env)
        #expect(badEnv.status == 64 && badEnv.stderr.contains("IAP_CONSUMPTION_RESPONSES"), "\(badEnv.stderr)")
    }
}
