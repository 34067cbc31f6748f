// What every Server API request goes through before its answer, in Apple's order: the route, the
// bearer JWT (401; a good token names the app the answer is scoped to), `--stray-401`'s one 401,
// the endpoint's rate for that app and environment (429 + Retry-After in ms), then a seeded fault drawn
// like verifyReceipt's (by seed, endpoint and id, and the n-th call for them). Each request is
// counted and logged with its endpoint.

import Foundation
import Reconciliation

extension SimulatorCore {
    /// Decides the answer to a Server API request and how long to wait before sending it.
    func handleAPI(_ request: APIRequest) -> (action: SimAction, latencyMs: Int) {
        let nowMs = SimClock.nowMs()
        let env = request.environment
        guard let api else {
            record(environment: env, rid: nil, outcome: "404", endpoint: "unknown", at: nowMs)
            return (.http(.text(404, "Not Found")), 0)
        }
        guard let routed = ServerAPIService.route(request.path) else {
            record(environment: env, rid: nil, outcome: "404", endpoint: "unknown", at: nowMs)
            return (.http(.text(404, "Not Found")), 0)
        }
        let (route, id) = routed
        let loggedID = id.map { AppleOrderID.isWellFormed($0) ? String($0) : "?" }
        func done(_ answer: APIAnswer, latency: Int = 0) -> (SimAction, Int) {
            record(environment: env, rid: nil, outcome: answer.outcome, endpoint: route.name, pathID: loggedID,
                   at: nowMs)
            return (.http(answer), latency)
        }
        let wanted = route.method
        guard request.method == wanted else {
            return done(APIAnswer(status: 405, contentType: "text/plain", headers: [("Allow", wanted)],
                                  body: Array("Method Not Allowed".utf8), outcome: "405"))
        }
        // Apple's 401 body is not documented; a short text, never the token.
        func unauthenticated(_ reason: JWTRejection) -> (SimAction, Int) {
            done(.text(401, "Unauthenticated\n", outcome: "401:" + reason.rawValue))
        }
        let number = api.nextRequestNumber()
        var request = request
        switch api.config.credentials.check(authorization: request.authorization, nowSeconds: nowMs / 1000) {
        case .failure(let reason): return unauthenticated(reason)
        case .success(let bundle): request.bundle = bundle
        }
        if number == api.config.stray401 { return unauthenticated(.stray) }
        if let freeAt = api.limiter.admit(RateLimiter.Key(route: route, environment: env, bundle: request.bundle),
                                          nowMs: nowMs) {
            var answer = APIAnswer.error(429, 4_290_000, "Rate limit exceeded.")
            answer.headers = [("Retry-After", String(freeAt))]
            // The call log says until when: a test checks that nothing came before it.
            answer.outcome += ":until=\(freeAt)"
            return done(answer)
        }
        // Faults and latency: keyed like verifyReceipt's by receipt id, here by endpoint and id.
        let faultKey = route.name + ":" + (loggedID ?? request.query.first { $0.0 == "paginationToken" }?.1 ?? "-")
        let callIndex = api.nextCallIndex(faultKey)
        let latency = latencyMs(receiptID: faultKey, callIndex: callIndex)
        let plan = faultPlan
        var refunds = refundView
        refunds.outcomes = api.consumption.outcomeRefunds
        guard var fault = plan.fault(receiptID: faultKey, callIndex: callIndex) else {
            return done(api.answer(route, id: id, request, refunds: refunds, nowMs: nowMs), latency: latency)
        }
        // A faulted consumption answer never reached Apple (it is not recorded); its 202 has no body
        // to cut short or replace, so those two faults become a reset.
        if route == .consumption, fault == .truncated || fault == .nonjson { fault = .reset }
        let outcome: String
        let action: SimAction
        switch fault {
        case .timeout, .reset:
            outcome = fault.rawValue
            action = .fault(fault, body: [])
        case .truncated:
            outcome = fault.rawValue
            action = .fault(fault, body: api.answer(route, id: id, request, refunds: refunds, nowMs: nowMs).body)
        case .http5xx:
            outcome = fault.rawValue
            action = .http(.text(503, "Service Unavailable"))
        case .http429:
            // A burst of Apple's own 429s: Retry-After a second ahead, in ms.
            outcome = fault.rawValue
            var answer = APIAnswer.error(429, 4_290_000, "Rate limit exceeded.")
            answer.headers = [("Retry-After", String(nowMs + 1000))]
            answer.outcome += ":until=\(nowMs + 1000)"
            action = .http(answer)
        case .nonjson:
            outcome = fault.rawValue
            action = .http(APIAnswer(status: 200, contentType: "text/html",
                                     body: Array("<html><head><title>503</title></head><body>Service Unavailable</body></html>".utf8),
                                     outcome: ""))
        case .s21005, .s21009, .s211xx:
            // verifyReceipt's "try again" statuses become the Server API's retryable error codes.
            let (status, code, message) = Self.retryableError(seed: plan.seed, key: faultKey, callIndex: callIndex)
            outcome = fault.rawValue + ":\(code)"
            action = .http(.error(status, code, message))
        }
        record(environment: env, rid: nil, outcome: outcome, endpoint: route.name, pathID: loggedID, at: nowMs)
        return (action, latency)
    }

    /// One of Apple's retryable error answers, chosen by seed, key and call.
    static func retryableError(seed: UInt64, key: String, callIndex: Int) -> (Int, Int, String) {
        let choices: [(Int, Int, String)] = [
            (404, 4_040_002, "Account not found. Please try again."),
            (404, 4_040_004, "App not found. Please try again."),
            (404, 4_040_006, "Original transaction id not found. Please try again."),
            (500, 5_000_001, "An unknown error occurred. Please try again."),
        ]
        return choices[Int(SimHash.combine(seed, SimHash.fnv(key), UInt64(callIndex), 0xA91) % 4)]
    }
}
