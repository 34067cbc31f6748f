// The per-minute quota buckets, the stats a benchmark reads, and faults on demand: Google's error
// statuses, a timeout, and five bodies that are not Google's, each refused by PlayStore's readers.

import Foundation
import PlaySimulator
import PlayStore
import Testing

@Suite("Google Play simulator: quotas and faults")
struct PlayQuotaFaultTests {
    @Test("a bucket's quota: quota+1 calls in 60 s is 429, the other bucket is not touched; the stats")
    func perMinute() throws {
        let w = try PlayWorld { $0.quotaPerMinute = 5 }
        let token = "Bearer " + (try w.accessToken())
        let path = PlayWorld.purchasePath("tok-bought-1")
        for n in 1...5 {
            #expect(try w.get(path, authorization: token).status == 200, "call \(n)")
            w.clock.advance(ms: 1000)
        }
        let refused = try w.get(path, authorization: token)
        #expect(refused.status == 429)
        #expect(
            refused.text == #"{"error":{"code":429,"message":"Rate limit exceeded","status":"RESOURCE_EXHAUSTED"}}"#)
        #expect(w.service.calls.last?.note == "429:quota One-time Purchases")
        #expect(try w.get(PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"]), authorization: token).status == 200)
        w.clock.advance(ms: 60_000)
        #expect(try w.get(path, authorization: token).status == 200)
        let stats = w.service.stats
        #expect(stats.calls[.productPurchase] == 7)
        #expect(stats.calls[.batchGetOrders] == 1)
        #expect(stats.calls[.token] == 1)
        #expect(stats.busiestMinute[.productPurchase] == 6)
        #expect(stats.tooManyRequests == 1)
        #expect(stats.statuses[200] == 8)
        #expect(stats.callsPerMinute[.productPurchase]?.values.reduce(0, +) == 7)
    }

    @Test("the next N calls get Google's errors and a timeout, in turn; then the answer again")
    func statusFaults() throws {
        let w = try PlayWorld()
        let token = "Bearer " + (try w.accessToken())
        let kinds: [PlayFault] = [
            .unauthenticated, .forbidden, .notFound, .gone, .rateLimited, .internalError, .unavailable, .timeout,
        ]
        w.service.setFaults(PlayFaultPlan(rules: [.next(kinds.count, kinds, endpoint: .batchGetOrders)]))
        let path = PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"])
        var statuses: [Int] = []
        for _ in kinds {
            let r = try w.get(path, authorization: token)
            statuses.append(r.status)
            if r.status == 504 {
                #expect(r.headers["content-type"]?.hasPrefix("text/html") == true)
            } else {
                #expect((jsonObject(r.body)?["error"] as? [String: Any])?["code"] as? Int == r.status)
            }
        }
        #expect(statuses == [401, 403, 404, 410, 429, 500, 503, 504])
        #expect(try w.get(path, authorization: token).status == 200)
        #expect(try w.get(PlayWorld.purchasePath("tok-bought-1"), authorization: token).status == 200)
        #expect(w.service.calls.filter { $0.note.hasPrefix("fault:") }.count == kinds.count)
    }

    @Test("a rule for every call reaches the token endpoint too")
    func everyCall() throws {
        let w = try PlayWorld()
        w.service.setFaults(PlayFaultPlan(rules: [.next(1, [.unavailable])]))
        let r = try w.tokenCall(form: GoogleOAuth.form(assertion: w.assertion()))
        #expect(r.status == 503)
        guard case .retry = GoogleOAuth.answer(status: r.status, body: r.body) else {
            Issue.record("a 503 from the token endpoint must be retried")
            return
        }
        #expect(try w.get(PlayWorld.purchasePath("tok-bought-1")).status == 200)
    }

    @Test(
        "each garbage body is refused by PlayStore's readers",
        arguments: [PlayEndpoint.token, .productPurchase, .batchGetOrders, .voidedPurchases])
    func garbage(_ endpoint: PlayEndpoint) throws {
        let w = try PlayWorld()
        let token = "Bearer " + (try w.accessToken())
        w.service.setFaults(
            PlayFaultPlan(rules: [.next(PlayFault.garbage.count, PlayFault.garbage, endpoint: endpoint)]))
        for kind in PlayFault.garbage {
            let r: RawResponse
            let problem: String?
            switch endpoint {
            case .token:
                r = try w.tokenCall(form: GoogleOAuth.form(assertion: w.assertion()))
                if case .retry(let p) = GoogleOAuth.answer(status: r.status, body: r.body) {
                    problem = p
                } else {
                    problem = nil
                }
            case .productPurchase:
                r = try w.get(PlayWorld.purchasePath("tok-bought-1"), authorization: token)
                problem = PlayPurchase.read(r.body).failure
            case .batchGetOrders:
                r = try w.get(PlayWorld.ordersPath(["GPA.1111-2222-3333-44444"]), authorization: token)
                problem = PlayOrder.readBatch(r.body).failure
            case .voidedPurchases:
                r = try w.get(PlayWorld.voidedPath(""), authorization: token)
                problem = PlayVoidedPage.read(r.body).failure
            case .reviewRefund, .pubsubPull, .pubsubAcknowledge:
                Issue.record("\(endpoint): its garbage is tested with Pub/Sub and reviewrefund")
                return
            }
            #expect(r.status == 200, "\(kind)")
            #expect(problem != nil, "\(endpoint) \(kind) was believed: \(r.text)")
            switch kind {
            case .html: #expect(r.headers["content-type"]?.hasPrefix("text/html") == true)
            case .array: #expect(r.body.first == UInt8(ascii: "["))
            case .invalidUTF8: #expect(String(validating: r.body, as: UTF8.self) == nil)
            case .repeatedKey: #expect(r.text.hasPrefix(#"{"kind":"a","kind":"a","#))
            default: #expect(problem?.contains("JSON") == true, "\(kind): \(problem ?? "-")")
            }
        }
        #expect(
            w.service.calls.filter { $0.note.hasPrefix("fault:") }.map(\.note)
                == PlayFault.garbage.map { "fault:" + $0.rawValue })
    }

    @Test("a share of the calls is faulted, the same calls for the same seed")
    func seededShare() throws {
        func run(seed: UInt64) throws -> [Int] {
            var config = try PlaySimulatorConfig(keyFile: PlayKeys.keyFile, truth: PlayWorld.truth)
            config.now = { PlayWorld.start }
            config.faults = PlayFaultPlan(
                seed: seed, rules: [.share(0.3, of: [.unavailable, .internalError], endpoint: .productPurchase)])
            let service = PlayService(config: config)
            let form = GoogleOAuth.form(
                assertion: PlayKeys.account.assertion(
                    scopes: [GoogleOAuth.androidPublisherScope], now: PlayWorld.start / 1000))
            let answer = try #require(
                service.answer(PlayRequest(method: "POST", path: "/token", body: Array(form.utf8))))
            guard case .token(let token, _) = GoogleOAuth.answer(status: answer.status, body: answer.body) else {
                throw RawHTTPError(description: "no token")
            }
            let request = PlayRequest(
                method: "GET", path: PlayWorld.purchasePath("tok-bought-1"),
                headers: [("authorization", "Bearer " + token)])
            return (0..<200).map { _ in service.answer(request)?.status ?? 0 }
        }
        let a = try run(seed: 7)
        #expect(a == (try run(seed: 7)))
        #expect(a != (try run(seed: 8)))
        let faulted = a.filter { $0 != 200 }.count
        #expect((30...90).contains(faulted), "\(faulted) of 200")
        #expect(Set(a) == [200, 500, 503])
    }
}

extension Result {
    /// The failure's description, nil on success.
    var failure: String? {
        if case .failure(let error) = self { return "\(error)" }
        return nil
    }
}
