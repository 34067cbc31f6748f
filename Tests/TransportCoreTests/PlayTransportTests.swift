// Google Play's requests through the one transport, on the fake clock of
// TransportMachineTests: Google's classes, its 401/403 doubt, its refusal (Play skipped, Apple goes
// on), its buckets.

import Testing

@testable import AppStore
@testable import JobStore
@testable import PlayStore
@testable import Reconciliation
@testable import TransportCore

@Suite("Google Play through the transport (no socket, a fake clock)")
struct PlayTransportTests {
    static let second = Rig.second
    static func purchase(_ i: Int, package: String = "com.example.game") -> Ask {
        Ask(PlayRows.productPurchase(package: package, token: "token-\(i)")!)
    }
    static func googleError(_ status: Int, reason: String) -> Reply {
        Reply(outcome: .response(status: status, body: Array(#"{"error":{"code":\#(status),"errors":[{"reason":"\#(reason)"}]}}"#.utf8)))
    }

    @Test("Google's answers become the transport's classes: 404 not found, 410 a refusal marked 410, 5xx retried")
    func classes() {
        #expect(PlayRows.reply(httpStatus: 200, body: [1], retryAfter: nil, nowMs: 0) == .answer(httpStatus: 200, body: [1]))
        let notFound = Array(#"{"error":{"code":404,"errors":[{"reason":"purchaseTokenNotFound"}]}}"#.utf8)
        #expect(PlayRows.reply(httpStatus: 404, body: notFound, retryAfter: nil, nowMs: 0) == .notFound)
        // A 404 or 410 that is not Google's (a proxy, a wrong PLAY_API_URL) says nothing of the token.
        for (status, body) in [(404, "<html>Not Found</html>"), (404, ""), (404, #"{"error":{"code":500}}"#), (410, "gone")] {
            guard case .retry = PlayRows.reply(httpStatus: status, body: Array(body.utf8), retryAfter: nil, nowMs: 0) else {
                Issue.record("\(status) \(body) believed")
                continue
            }
        }
        let gone = Array(#"{"error":{"code":410,"errors":[{"reason":"purchaseTokenNoLongerValid"}]}}"#.utf8)
        if case .refused(_, let code) = PlayRows.reply(httpStatus: 410, body: gone, retryAfter: nil, nowMs: 0) {
            #expect(code == 410)
        } else {
            Issue.record("410 is not a refusal")
        }
        #expect(PlayRows.reply(httpStatus: 403, body: [], retryAfter: nil, nowMs: 0) == .unauthorized)
        #expect(PlayRows.reply(httpStatus: 429, body: [], retryAfter: "30", nowMs: 1_000) == .rateLimited(untilMs: 31_000))
        #expect(PlayRows.reply(httpStatus: 429, body: [], retryAfter: "soon", nowMs: 1_000) == .rateLimited(untilMs: nil))
        for status in [500, 502, 503, 408] {
            guard case .retry = PlayRows.reply(httpStatus: status, body: Array("<html>".utf8), retryAfter: nil, nowMs: 0) else {
                Issue.record("\(status) not retried")
                continue
            }
        }
        guard case .refused(let problem, 400) = PlayRows.reply(
            httpStatus: 400, body: Array(#"{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"token abc"}}"#.utf8),
            retryAfter: nil, nowMs: 0)
        else {
            Issue.record("400 not refused")
            return
        }
        #expect(problem.contains("INVALID_ARGUMENT") && !problem.contains("abc"), "\(problem)")
        // An IMF date.
        #expect(PlayAPI.parseRetryAfter("Wed, 25 Nov 2026 10:00:05 GMT", nowMs: 0)
            == UTC.millis(year: 2026, month: 11, day: 25, hour: 10, minute: 0, second: 5))
        #expect(PlayAPI.parseRetryAfter("99999999", nowMs: 0) == nil)
        #expect(PlayAPI.parseRetryAfter("Sun, 06 Nov 1000000000 08:49:37 GMT", nowMs: 0) == nil, "a year past 9999")
        #expect(PlayAPI.parseRetryAfter("Sun, 6 Nov 2026 08:49:37 GMT", nowMs: 0) == nil)
        // A request is made only of ids that pass their checks.
        #expect(PlayRows.productPurchase(package: "com.example.game", token: "a/../b") == nil)
    }

    @Test("a 401 or 403 is doubted a second with a fresh token; confirmed, that package's work is dropped, another package's and Apple's go on")
    func refusedServiceAccount() {
        for status in [401, 403] {
            let apple = (0..<3).map { TransportMachineTests.info($0) }
            var rig = Rig((0..<4).map { Self.purchase($0) } + apple, limits: Rig.limits(concurrency: 1))
            let error = rig.run { request, _ in
                request.service == .googlePlay ? Self.googleError(status, reason: "permissionDenied") : .ok
            }
            #expect(error == nil, "Play refused must not stop the run: \(String(describing: error))")
            let play = rig.sent.filter { $0.request.service == .googlePlay }
            #expect(play.count == 2, "the first and, a second later with a fresh token, its confirmation: \(play.count)")
            #expect(play[1].renewToken && play[1].at - play[0].at >= Self.second)
            #expect(rig.machine.counts.playRefusedPackages == ["com.example.game"] && rig.machine.counts.playRefusal == nil)
            #expect(rig.machine.counts.playDropped == 4, "the refused one and the three not asked")
            #expect(apple.allSatisfy { $0.decision == .definitive }, "Apple's work went on")
            #expect(rig.asks.prefix(4).allSatisfy { $0.decision == nil }, "nothing of Play's was settled (asked again next night)")
        }
        // Two packages, the account refused for one: the other's purchases are all asked and settled.
        let refused = (0..<3).map { Self.purchase($0, package: "com.example.noaccess") }
        let other = (3..<6).map { Self.purchase($0, package: "com.example.game") }
        var two = Rig(refused + other, limits: Rig.limits(concurrency: 1))
        #expect(two.run { request, _ in
            request.bundleID == "com.example.noaccess" ? Self.googleError(403, reason: "permissionDenied") : .ok
        } == nil)
        #expect(two.machine.counts.playRefusedPackages == ["com.example.noaccess"] && !two.machine.playRefused)
        #expect(other.allSatisfy { $0.decision == .definitive } && refused.allSatisfy { $0.decision == nil })
        // A stray 401: the fresh token works, nothing is refused.
        var stray = Rig((0..<3).map { Self.purchase($0) }, limits: Rig.limits(concurrency: 1))
        #expect(stray.run { _, n in n == 1 ? Self.googleError(401, reason: "authError") : .ok } == nil)
        #expect(!stray.machine.playRefused && stray.asks.allSatisfy { $0.decision == .definitive })
    }

    @Test("no token from Google's token endpoint: Play is skipped for the run, with the reason")
    func tokenUnavailable() {
        var machine = TransportMachine<Ask>(
            limits: Rig.limits(concurrency: 2), service: "Google Play", apps: nil, breaker: OutageBreaker(wave: 2))
        let first = Self.purchase(0), second = Self.purchase(1)
        guard case .send(let send) = machine.fed(first, now: Rig.start) else {
            Issue.record("not sent")
            return
        }
        machine.credentialUnavailable(
            send, reason: "Google's token endpoint refused the service account (invalid_grant)", outage: false, now: Rig.start)
        #expect(!machine.counts.playOutage)
        #expect(machine.playRefused && machine.counts.playRefusal?.contains("invalid_grant") == true)
        guard case .pull = machine.fed(second, now: Rig.start) else {
            Issue.record("the next Play exchange was not dropped unasked")
            return
        }
        #expect(machine.counts.playDropped == 2 && machine.counts.total == 0)
        // An App Store request still goes.
        guard case .send = machine.fed(TransportMachineTests.info(1), now: Rig.start) else {
            Issue.record("Apple held")
            return
        }
    }

    @Test("Google's buckets: 44 a second per bucket for the project, the voided list once a second per package")
    func buckets() {
        var rig = Rig((0..<120).map { Self.purchase($0) }, limits: Rig.limits(concurrency: 16))
        #expect(rig.run { _, _ in .ok } == nil)
        let times = rig.sent.map(\.at)
        for (i, t) in times.enumerated() {
            #expect(times[i...].prefix { $0 < t + RateBudget.windowNs }.count <= 44)
        }
        // The voided list: per package, so two packages go side by side.
        let pages = (0..<4).flatMap { i in
            ["com.example.a", "com.example.b"].map { Ask(PlayRows.voidedPurchases(package: $0, startTime: Int64(i), pageToken: nil)!) }
        }
        var voided = Rig(pages, limits: Rig.limits(concurrency: 8))
        #expect(voided.run { _, _ in .ok } == nil)
        for package in ["com.example.a", "com.example.b"] {
            let at = voided.sent.filter { $0.request.bundleID == package }.map(\.at)
            #expect(at.count == 4)
            #expect(zip(at, at.dropFirst()).allSatisfy { $1 - $0 >= Self.second }, "\(package): \(at)")
        }
        #expect(voided.sent.last!.at - voided.sent.first!.at < 4 * Self.second, "the two packages did not wait for each other")
    }
}
