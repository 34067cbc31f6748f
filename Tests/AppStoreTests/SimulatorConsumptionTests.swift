// Send Consumption Information on the simulated Server API: every rule of Apple's
// ConsumptionRequest one by one, hostile bodies, the rate, the CONSUMPTION_REQUEST listing, and
// the outcome model (ConsumptionOutcomes.swift), all over real HTTP.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: consumption requests")
struct SimulatorConsumptionTests {
    static let hour: Int64 = 3_600_000
    static let good = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#

    /// A transaction id whose outcome draw satisfies `wanted` (the k-th such, from `base`).
    static func tid(base: Int64, where wanted: (Double) -> Bool, skip: Int = 0) -> String {
        var n = base
        var left = skip
        while true {
            let id = String(n)
            if wanted(ConsumptionOutcomeModel.draw(transactionID: id)) {
                if left == 0 { return id }
                left -= 1
            }
            n += 1
        }
    }

    static func row(_ tid: String, now: Int64, type: ProductType = .consumable, env: AppStoreEnvironment = .production,
                    requestAgo: Int64? = nil, reason: String = "UNINTENDED_PURCHASE", familyShared: Bool = false) -> AppleTruthRow {
        var r = APIWorld.row(tid, customer: "C" + tid, daysAgo: 3, now: now, type: type == .autoRenewable ? .consumable : type,
                             env: env)
        r.productType = type
        if type == .autoRenewable {
            r.productID = APIWorld.bundle + ".vip_month"
            r.expiresDateMs = now + 27 * APIWorld.day
        }
        r.familyShared = familyShared
        r.consumptionRequest = requestAgo.map { SimConsumptionRequest(signedDateMs: now - $0, reason: reason) }
        return r
    }

    static let consumable = "7100000000000001"
    static let autoRenewable = "7100000000000002"
    static let family = "7100000000000003"
    static let sandbox = "7100000000000004"
    static let nonConsumable = "7100000000000005"

    static func clock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The rows' times are counted from `now`.
    static func world(now: Int64 = clock(), consumptionRate: Int? = nil, log: String? = nil, faults: FaultPlan = FaultPlan(),
                      extra: (Int64) -> [AppleTruthRow] = { _ in [] }) throws -> APIWorld {
        var rows = [
            row(consumable, now: now, requestAgo: hour),
            row(autoRenewable, now: now, type: .autoRenewable, requestAgo: hour, reason: "UNSATISFIED_WITH_PURCHASE"),
            row(family, now: now, requestAgo: hour, reason: "LEGAL", familyShared: true),
            row(sandbox, now: now, env: .sandbox, requestAgo: 2 * hour, reason: "OTHER"),
            row(nonConsumable, now: now, type: .nonConsumable, requestAgo: 3 * hour, reason: "FULFILLMENT_ISSUE"),
        ]
        rows += extra(now)
        return try APIWorld(rows: rows, faults: faults, consumptionRate: consumptionRate, consumptionLog: log)
    }

    static func put(_ w: APIWorld, _ tid: String, _ body: String, env: String = "production") throws -> RawResponse {
        try w.call("/inApps/v2/transactions/consumption/" + tid, method: "PUT", env: env, body: body)
    }

    static func putBytes(_ w: APIWorld, _ tid: String, _ body: [UInt8]) throws -> RawResponse {
        try RawHTTP.request(port: w.sim.port, method: "PUT", path: "/production/inApps/v2/transactions/consumption/" + tid,
                            headers: [("Authorization", "Bearer " + (try APIWorld.token()))], body: body)
    }

    @Test("202 with an empty body; the answer is kept, numbered per transaction, and logged as a JSON line")
    func accepted() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("consumption-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let w = try Self.world(log: log)
        let body = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","consumptionPercentage":67932,"#
            + #""sampleContentProvided":true,"refundPreference":"DECLINE","unknownField":[1,2]}"#
        let r = try Self.put(w, Self.consumable, body)
        #expect(r.status == 202 && r.body.isEmpty, "\(r.status) \(r.text)")
        #expect(try Self.put(w, Self.sandbox, Self.good, env: "sandbox").status == 202)
        #expect(try Self.put(w, Self.autoRenewable, Self.good).status == 202, "no percentage: fine for a subscription")
        #expect(try Self.put(w, Self.consumable, Self.good).status == 202, "a repeat is accepted")
        let answers = w.sim.consumptionAnswers
        #expect(answers.count == 4)
        #expect(answers[0].transactionID == Self.consumable && answers[0].environment == .production && answers[0].put == 1)
        #expect(answers[0].consumptionPercentage == 67932 && answers[0].refundPreference == "DECLINE")
        #expect(answers[0].sampleContentProvided && answers[0].customerConsented && answers[0].deliveryStatus == "DELIVERED")
        #expect(answers[1].environment == .sandbox && answers[3].put == 2 && answers[3].consumptionPercentage == nil)
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4)
        let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(first["transactionId"] as? String == Self.consumable && first["put"] as? Int == 1)
        #expect(first["environment"] as? String == "production")
        let logged = try #require(first["body"] as? [String: Any])
        #expect(logged.count == 5 && logged["consumptionPercentage"] as? Int == 67932 && logged["refundPreference"] as? String == "DECLINE")
        #expect(String(lines[0]).contains(#""body":{"customerConsented":true,"deliveryStatus":"DELIVERED","consumptionPercentage":67932,"sampleContentProvided":true,"refundPreference":"DECLINE"}"#))
        #expect(w.sim.calls.contains { $0.endpoint == "consumption" && $0.outcome == "202" && $0.pathID == Self.consumable })
    }

    @Test("each rule: its status and Apple's errorCode, or a 400 without one where Apple publishes none")
    func rules() throws {
        let w = try Self.world()
        let cases: [(String, String, Int, Int?)] = [
            // (transaction, body, status, errorCode)
            ("12ab", Self.good, 400, 4_000_006),
            ("123456789012345678901", Self.good, 400, 4_000_006),
            (Self.consumable, #"{"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            (Self.consumable, #"{"customerConsented":false,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            (Self.consumable, #"{"customerConsented":"true","deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            (Self.consumable, #"{"customerConsented":null,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#, 400, 4_000_035),
            (Self.consumable, #"{"customerConsented":true,"sampleContentProvided":false}"#, 400, 4_000_036),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"delivered","sampleContentProvided":false}"#, 400, 4_000_036),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":0,"sampleContentProvided":false}"#, 400, 4_000_036),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, 400, 4_000_041),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":"no"}"#, 400, 4_000_041),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":0}"#, 400, 4_000_041),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"refundPreference":"REFUND"}"#, 400, 4_000_044),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"refundPreference":2}"#, 400, 4_000_044),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":100001}"#, 400, nil),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":-1}"#, 400, nil),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":50.5}"#, 400, nil),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":"50000"}"#, 400, nil),
            (Self.consumable, #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":false,"consumptionPercentage":1}"#, 400, nil),
            ("9999999999999999", Self.good, 404, 4_040_010),
            (Self.family, Self.good, 400, 4_000_185),
            (Self.autoRenewable, #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":0}"#, 400, 4_000_209),
        ]
        for (tid, body, status, code) in cases {
            let r = try Self.put(w, tid, body)
            #expect(r.status == status && r.errorCode == code, "\(tid) \(body): \(r.status) \(r.text)")
        }
        // A sandbox transaction is unknown in production, and the other way round.
        #expect(try Self.put(w, Self.sandbox, Self.good).errorCode == 4_040_010)
        #expect(try Self.put(w, Self.consumable, Self.good, env: "sandbox").errorCode == 4_040_010)
        // Accepted edge values: nulls of optional fields are absent, 0 when undelivered, the bounds.
        for body in [#"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_SERVER_OUTAGE","sampleContentProvided":true,"consumptionPercentage":0,"refundPreference":"GRANT_FULL"}"#,
                     #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":100000,"refundPreference":null}"#,
                     #"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":null,"refundPreference":"GRANT_PRORATED"}"#] {
            let r = try Self.put(w, Self.consumable, body)
            #expect(r.status == 202, "\(body): \(r.status) \(r.text)")
        }
        #expect(w.sim.consumptionAnswers.count == 3, "no refused request is kept")
        // Method and token like every endpoint.
        #expect(try w.call("/inApps/v2/transactions/consumption/" + Self.consumable, body: Self.good).status == 405)
        #expect(try w.call("/inApps/v2/transactions/consumption/" + Self.consumable, method: "PUT", body: Self.good,
                           authorization: "").status == 401)
        #expect(w.sim.consumptionAnswers.count == 3)
    }

    @Test("hostile bodies: 400 without an errorCode, nothing kept")
    func hostile() throws {
        let w = try Self.world()
        let good = Array(Self.good.utf8)
        var bodies: [[UInt8]] = [
            [], Array("null".utf8), Array("[]".utf8), Array("\"x\"".utf8), Array("true".utf8), Array("42".utf8),
            Array(good.prefix(good.count - 1)), Array(good.prefix(10)),
            Array(#"{"customerConsented":true,"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#.utf8),
            Array((Self.good + "x").utf8), Array((Self.good + Self.good).utf8),
            Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":99999999999999999999999}"#.utf8),
            Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":1e3}"#.utf8),
            Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"consumptionPercentage":-9223372036854775808}"#.utf8),
            Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"x":"\u00"}"#.utf8),
            Array(#"{'customerConsented':true}"#.utf8),
            [0xEF, 0xBB, 0xBF] + good,
            Array(repeating: UInt8(ascii: "["), count: 100) + Array(repeating: UInt8(ascii: "]"), count: 100),
            Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false,"x":"#.utf8)
                + Array(repeating: UInt8(ascii: "a"), count: 70_000),
        ]
        var invalid = good
        invalid[3] = 0xFF
        bodies.append(invalid)
        bodies.append(Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED\#u{0}","sampleContentProvided":false}"#.utf8))
        bodies.append(Array(#"{"customerConsented":true,"deliveryStatus":"#.utf8) + [0x22, 0xC3, 0x28, 0x22] + Array(#","sampleContentProvided":false}"#.utf8))
        for body in bodies {
            let r = try Self.putBytes(w, Self.consumable, body)
            #expect(r.status == 400 && r.errorCode == nil, "\(String(decoding: body.prefix(80), as: UTF8.self)): \(r.status) \(r.text)")
        }
        #expect(w.sim.consumptionAnswers.isEmpty)
    }

    @Test("its own rate: 429 with Retry-After in ms over the limit; the sandbox gets a tenth")
    func rateLimit() throws {
        let w = try Self.world(consumptionRate: 10)
        var statuses: [Int] = []
        var retryAfter: Int64?
        for _ in 0..<12 {
            let r = try Self.put(w, Self.consumable, Self.good)
            statuses.append(r.status)
            if r.status == 429 {
                #expect(r.errorCode == 4_290_000)
                retryAfter = r.headers["retry-after"].flatMap { Int64($0) }
            }
        }
        #expect(statuses.filter { $0 == 202 }.count == 10 && statuses.filter { $0 == 429 }.count == 2, "\(statuses)")
        let until = try #require(retryAfter)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(until > now - 1000 && until <= now + 1100, "Retry-After is a UNIX time in ms")
        #expect(w.sim.consumptionAnswers.count == 10, "a refused call is not kept")
        // Other endpoints keep their own budget.
        #expect(try w.call("/inApps/v1/transactions/" + Self.consumable).status == 200)
        let sandbox = try (0..<2).map { _ in try Self.put(w, Self.sandbox, Self.good, env: "sandbox").status }
        #expect(sandbox == [202, 429])
    }

    @Test("a faulted call never reached Apple: nothing kept; a cut-short or HTML answer becomes a reset")
    func faults() throws {
        for kind in [SimFault.http5xx, .http429, .s211xx] {
            let w = try Self.world(faults: FaultPlan(seed: 3, rate: 1, kinds: [kind]))
            let r = try Self.put(w, Self.consumable, Self.good)
            #expect(r.status >= 400 && r.status != 202, "\(kind): \(r.status)")
            #expect(w.sim.consumptionAnswers.isEmpty)
        }
        for kind in [SimFault.truncated, .nonjson, .reset] {
            let w = try Self.world(faults: FaultPlan(seed: 3, rate: 1, kinds: [kind]))
            #expect(throws: RawHTTPError.self, "\(kind)") { try Self.put(w, Self.consumable, Self.good) }
            #expect(w.sim.consumptionAnswers.isEmpty)
            #expect(w.sim.calls.last?.outcome == "reset")
        }
    }

    /// Every notification of a history request (all pages), with its decoded payload.
    static func history(_ w: APIWorld, start: Int64, end: Int64, type: String? = nil, env: String = "production") throws
        -> [(type: String, data: [String: Any], signedDate: Int64, transaction: SignedTransaction)] {
        var out: [(String, [String: Any], Int64, SignedTransaction)] = []
        var token: String?
        for _ in 0..<50 {
            let body = #"{"startDate":\#(start),"endDate":\#(end)\#(type.map { #","notificationType":"\#($0)""# } ?? "")}"#
            let r = try w.post("/inApps/v1/notifications/history" + (token.map { "?paginationToken=" + $0 } ?? ""), env: env,
                               body: body)
            #expect(r.status == 200, "\(r.status) \(r.text)")
            for item in r.json?["notificationHistory"] as? [[String: Any]] ?? [] {
                let jws = try #require(item["signedPayload"] as? String)
                guard case .success(let object) = w.verifier.verifySignedObject(jws) else {
                    Issue.record("the notification does not verify")
                    continue
                }
                let payload = try #require(try JSONSerialization.jsonObject(with: Data(object.payload)) as? [String: Any])
                let data = try #require(payload["data"] as? [String: Any])
                guard let t = w.verified(data["signedTransactionInfo"]) else { continue }
                out.append((payload["notificationType"] as? String ?? "", data, object.signedDate, t))
            }
            guard r.json?["hasMore"] as? Bool == true else { break }
            token = r.json?["paginationToken"] as? String
        }
        return out
    }

    @Test("CONSUMPTION_REQUEST: listed at the request's time with its reason, filtered by type, the transaction verifies")
    func listing() throws {
        let now = Self.clock()
        let w = try Self.world(now: now)
        let all = try Self.history(w, start: w.now - 30 * APIWorld.day, end: w.now + 60_000, type: "CONSUMPTION_REQUEST")
        let byTID = Dictionary(all.map { ($0.transaction.transaction.transactionID, $0) }, uniquingKeysWith: { a, _ in a })
        #expect(Set(byTID.keys) == [Self.consumable, Self.autoRenewable, Self.family, Self.nonConsumable])
        #expect(all.allSatisfy { $0.type == "CONSUMPTION_REQUEST" })
        let c = try #require(byTID[Self.consumable])
        #expect(c.data["consumptionRequestReason"] as? String == "UNINTENDED_PURCHASE")
        #expect(c.signedDate == now - Self.hour, "listed at exactly consumption_request_ms")
        #expect(c.data["appAppleId"] != nil && c.data["environment"] as? String == "Production")
        #expect(c.data["bundleId"] as? String == APIWorld.bundle && c.transaction.revocationDate == nil)
        #expect(byTID[Self.nonConsumable]?.data["consumptionRequestReason"] as? String == "FULFILLMENT_ISSUE")
        #expect(byTID[Self.family]?.transaction.inAppOwnershipType == "FAMILY_SHARED")
        let sandbox = try Self.history(w, start: w.now - 20 * APIWorld.day, end: w.now, type: "CONSUMPTION_REQUEST", env: "sandbox")
        #expect(sandbox.map(\.transaction.transaction.transactionID) == [Self.sandbox])
        #expect(sandbox.first?.data["appAppleId"] == nil && sandbox.first?.data["consumptionRequestReason"] as? String == "OTHER")
        // Unfiltered, the requests are among the ONE_TIME_CHARGEs; no outcome yet (windows still open).
        let unfiltered = try Self.history(w, start: w.now - 30 * APIWorld.day, end: w.now + 60_000)
        #expect(unfiltered.filter { $0.type == "CONSUMPTION_REQUEST" }.count == all.count)
        #expect(!unfiltered.contains { $0.type == "REFUND" || $0.type == "REFUND_DECLINED" })
    }

    @Test("outcomes: DELIVERED 90000 DECLINE mostly declined, GRANT_FULL always refunded, none mostly refunded and shown everywhere")
    func outcomes() throws {
        let n = 40
        // Requests 40 hours ago: every outcome (12 to 18 hours after) is in the past.
        let declineIDs = (0..<n).map { String(7_200_000_000_000_000 + Int64($0)) }
        let grantIDs = (0..<10).map { String(7_300_000_000_000_000 + Int64($0)) }
        let silentIDs = (0..<n).map { String(7_400_000_000_000_000 + Int64($0)) }
        let refundedWhenSilent = Self.tid(base: 7_500_000_000_000_000, where: { $0 < 0.9 })
        let now = Self.clock()
        // Unlimited: more than Apple's 50 a second are sent here.
        let w = try Self.world(now: now, consumptionRate: 0) { now in
            (declineIDs + grantIDs + silentIDs + [refundedWhenSilent]).map { Self.row($0, now: now, requestAgo: 40 * Self.hour) }
        }
        for tid in declineIDs {
            let body = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","consumptionPercentage":90000,"sampleContentProvided":false,"refundPreference":"DECLINE"}"#
            #expect(try Self.put(w, tid, body).status == 202)
        }
        for tid in grantIDs {
            let body = #"{"customerConsented":true,"deliveryStatus":"UNDELIVERED_OTHER","sampleContentProvided":false,"refundPreference":"GRANT_FULL"}"#
            #expect(try Self.put(w, tid, body).status == 202)
        }
        // Before any listing, a read decides nothing.
        let before = try #require(w.verified(try w.call("/inApps/v1/transactions/" + refundedWhenSilent).json?["signedTransactionInfo"]))
        #expect(before.revocationDate == nil && w.sim.consumptionOutcome(transactionID: refundedWhenSilent) == nil)

        let start = w.now - 10 * APIWorld.day
        let outcomes = try Self.history(w, start: start, end: w.now)
            .filter { $0.type == "REFUND" || $0.type == "REFUND_DECLINED" }
        var first: [String: String] = [:]
        for o in outcomes where first[o.transaction.transaction.transactionID] == nil {
            first[o.transaction.transaction.transactionID] = o.type
            let request = now - 40 * Self.hour
            #expect(o.signedDate >= request + 12 * Self.hour && o.signedDate <= request + 18 * Self.hour)
            #expect((o.type == "REFUND") == (o.transaction.revocationDate != nil))
        }
        let declined = declineIDs.filter { first[$0] == "REFUND_DECLINED" }.count
        #expect(declineIDs.allSatisfy { first[$0] != nil } && declined >= n / 2 && declined < n, "declined \(declined) of \(n)")
        #expect(grantIDs.allSatisfy { first[$0] == "REFUND" })
        let silentRefunds = silentIDs.filter { first[$0] == "REFUND" }.count
        #expect(silentRefunds >= n * 3 / 4, "refunded \(silentRefunds) of \(n) without an answer")
        #expect(first[refundedWhenSilent] == "REFUND")
        // Memoized: a late answer changes nothing; every listing and every read agrees.
        let late = #"{"customerConsented":true,"deliveryStatus":"DELIVERED","consumptionPercentage":100000,"sampleContentProvided":false,"refundPreference":"DECLINE"}"#
        #expect(try Self.put(w, refundedWhenSilent, late).status == 202)
        let again = try Self.history(w, start: start, end: w.now, type: "REFUND")
        #expect(Set(again.map(\.transaction.transaction.transactionID)) == Set(first.filter { $0.value == "REFUND" }.keys))
        let declinedOnly = try Self.history(w, start: start, end: w.now, type: "REFUND_DECLINED")
        #expect(Set(declinedOnly.map(\.transaction.transaction.transactionID)) == Set(first.filter { $0.value == "REFUND_DECLINED" }.keys))
        #expect(w.sim.consumptionOutcome(transactionID: refundedWhenSilent) == .refund)
        let info = try #require(w.verified(try w.call("/inApps/v1/transactions/" + refundedWhenSilent).json?["signedTransactionInfo"]))
        #expect(info.revocationDate == ConsumptionOutcomeModel.outcomeMs(
            transactionID: refundedWhenSilent, request: SimConsumptionRequest(signedDateMs: now - 40 * Self.hour, reason: "OTHER")))
        #expect(info.revocationReason == 0 && info.revocationType == "REFUND_FULL")
        let refunds = try w.call("/inApps/v2/refund/lookup/" + refundedWhenSilent)
        #expect((refunds.json?["signedTransactions"] as? [Any])?.count == 1)
        // A declined one stays as it was.
        if let kept = declineIDs.first(where: { first[$0] == "REFUND_DECLINED" }) {
            let t = try #require(w.verified(try w.call("/inApps/v1/transactions/" + kept).json?["signedTransactionInfo"]))
            #expect(t.revocationDate == nil)
        }
        // The open windows (requests an hour old) have no outcome in a listing up to now.
        #expect(first[Self.consumable] == nil)
    }

    @Test("the model's numbers")
    func model() {
        func answer(_ status: String, _ pct: Int?, _ pref: String?) -> SimConsumptionAnswer {
            SimConsumptionAnswer(transactionID: "1", environment: .production, receivedMs: 0, put: 1, customerConsented: true,
                                 deliveryStatus: status, sampleContentProvided: false, consumptionPercentage: pct,
                                 refundPreference: pref)
        }
        #expect(ConsumptionOutcomeModel.refundChance(nil) == 0.90)
        #expect(ConsumptionOutcomeModel.refundChance(answer("UNDELIVERED_QUALITY_ISSUE", 0, nil)) == 0.95)
        #expect(ConsumptionOutcomeModel.refundChance(answer("DELIVERED", 50_000, "DECLINE")) == 0.20)
        #expect(ConsumptionOutcomeModel.refundChance(answer("DELIVERED", 49_999, "DECLINE")) == 0.50)
        #expect(ConsumptionOutcomeModel.refundChance(answer("DELIVERED", 90_000, nil)) == 0.50)
        #expect(ConsumptionOutcomeModel.refundChance(answer("DELIVERED", 90_000, "GRANT_FULL")) == 1.0)
        let request = SimConsumptionRequest(signedDateMs: 1_000_000_000_000, reason: "OTHER")
        let times = (0..<200).map { ConsumptionOutcomeModel.outcomeMs(transactionID: String(8_000_000 + $0), request: request) }
        #expect(times.allSatisfy { $0 >= request.signedDateMs + 12 * Self.hour && $0 <= request.signedDateMs + 18 * Self.hour })
        #expect(Set(times).count > 150)
        let draws = (0..<1000).map { ConsumptionOutcomeModel.draw(transactionID: String(9_000_000 + $0)) }
        #expect(draws.filter { $0 < 0.9 }.count > 850 && draws.filter { $0 < 0.9 }.count < 950)
    }
}
