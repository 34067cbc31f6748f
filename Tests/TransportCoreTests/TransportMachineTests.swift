// The transport's state machine on a fake clock: every event is fed by hand or by a scripted
// Apple, every action read back. No socket, no simulator, no sleeping: this target links neither
// HTTP nor AppStoreSimulator (Package.swift).

import Testing

@testable import AppStore
@testable import JobStore
@testable import Reconciliation
@testable import TransportCore

/// One request's work, as the night's exchanges are: it reads an answer into an `Answer` and keeps
/// what it was told.
final class Ask: AppStoreExchange {
    let request: AppStoreRequest
    var retry = RetryPolicy.State()
    var sends = 0
    var decision: RetryPolicy.Decision?
    var replies: [AppStoreReply] = []

    init(_ request: AppStoreRequest) { self.request = request }

    func read(_ reply: AppStoreReply) throws -> Answer {
        replies.append(reply)
        switch reply {
        case .answer: return Answer(status: nil, answerClass: .ok, problem: nil)
        case .unauthorized: return Answer(status: nil, answerClass: .config, problem: "refused")
        case .notFound, .refused: return Answer(status: nil, answerClass: .reject, rejection: .invalidReceipt, problem: "no")
        case .rateLimited, .retry: return Answer(status: nil, answerClass: .retry, problem: "again")
        }
    }

    func settled(
        _ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest,
        completion: ExchangeCompletion
    ) -> Bool {
        if case .sendAgain = decision { return false }
        self.decision = decision
        return false
    }
}

/// What a scripted Apple answers one request: an outcome, headers, after `latencyMs`.
struct Reply {
    var outcome: ExchangeCompletion.Outcome
    var headers: [String: String] = [:]
    var latencyMs: UInt64 = 10

    static let ok = Reply(outcome: .response(status: 200, body: Array("{}".utf8)))
    static let unauthorized = Reply(outcome: .response(status: 401, body: []))
    static func rateLimited(retryAfterUnixMs: Int64?) -> Reply {
        Reply(outcome: .response(status: 429, body: []), headers: retryAfterUnixMs.map { ["Retry-After": String($0)] } ?? [:])
    }
    static let unreachable = Reply(outcome: .failure(message: "Could not connect to 127.0.0.1:9", timedOut: false), latencyMs: 1)
}

/// A request as the rig saw it go out.
struct Sent {
    var at: UInt64
    var request: AppStoreRequest
    var renewToken: Bool
}

/// The driver's loop on a fake clock: the machine's sends are answered by `apple` after their
/// latency; a poll advances the clock to the next answer or to the end of its timeout.
struct Rig {
    static let second: UInt64 = 1_000_000_000
    static let start: UInt64 = 100 * second
    static let unixStart: Int64 = 1_780_000_000_000
    var machine: TransportMachine<Ask>
    var clock = Rig.start
    var sent: [Sent] = []
    var asks: [Ask]

    init(_ asks: [Ask], limits: TransportLimits, apps: NightApps? = nil) {
        self.asks = asks
        machine = TransportMachine(
            limits: limits, service: "the App Store Server API", apps: apps,
            breaker: OutageBreaker(wave: limits.concurrency))
    }

    static func limits(concurrency: Int = 4, maxAttempts: Int = 4) -> TransportLimits {
        TransportLimits(concurrency: concurrency, policy: RetryPolicy(maxAttempts: maxAttempts, retryBaseMs: 50))
    }

    /// Runs every ask to its end; returns the error the run ended with, if any.
    mutating func run(apple: (AppStoreRequest, Int) -> Reply) -> JobError? {
        var machine = self.machine
        var log: [Sent] = []
        var clock = self.clock
        defer { (self.machine, self.sent, self.clock) = (machine, log, clock) }
        var feed = asks[...]
        var pending: [(due: UInt64, completion: ExchangeCompletion)] = []
        var nth: [String: Int] = [:]
        func unixMs() -> Int64 { Self.unixStart + Int64((clock - Self.start) / 1_000_000) }
        func send(_ s: TransportMachine<Ask>.Send, at now: UInt64) {
            machine.sent(s, now: now)
            log.append(Sent(at: now, request: s.request, renewToken: s.renewToken))
            let key = s.request.path + (s.request.bundleID ?? "")
            nth[key, default: 0] += 1
            let reply = apple(s.request, nth[key]!)
            pending.append(
                (
                    now + reply.latencyMs * 1_000_000,
                    ExchangeCompletion(tag: s.tag, outcome: reply.outcome, headers: reply.headers)
                ))
        }
        do {
            for _ in 0..<1_000_000 {
                let now = clock
                var step = machine.fill(now: now)
                fill: while true {
                    switch step {
                    case .send(let s):
                        send(s, at: now)
                        step = machine.fill(now: now)
                    case .pull:
                        guard let next = feed.popFirst() else {
                            machine.feedEmpty(finished: true)
                            break fill
                        }
                        step = machine.fed(next, now: now)
                    case .idle:
                        break fill
                    }
                }
                switch machine.wait(now: now) {
                case .finished:
                    try machine.finish()
                    return nil
                case .pull:
                    machine.feedEmpty(finished: feed.isEmpty)
                case .poll(let timeoutMs):
                    pending.sort { $0.due < $1.due }
                    let until = now + UInt64(max(timeoutMs, 1)) * 1_000_000
                    guard let first = pending.first, first.due <= until else {
                        clock = until
                        continue
                    }
                    clock = first.due
                    while let first = pending.first, first.due <= clock {
                        pending.removeFirst()
                        if let next = try machine.answered(first.completion, now: clock, unixMs: unixMs(), jitter: 0.5) {
                            send(next, at: clock)
                        }
                    }
                    if let outage = machine.outage() { throw outage }
                }
            }
            Issue.record("the run never ended")
            return nil
        } catch let error as JobError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    /// Sends of requests named `name` (an endpoint), in order.
    func sends(_ name: String) -> [Sent] { sent.filter { $0.request.name == name } }
}

@Suite("The transport's state machine (no socket, a fake clock)")
struct TransportMachineTests {
    static let second = Rig.second
    static func info(_ i: Int, app: String? = nil) -> Ask {
        Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: String(2_000_000_000 + i), bundleID: app))
    }
    static func report(_ i: Int) -> Ask {
        Ask(AppStoreEndpoints.salesReports.request(in: .production, query: [("filter[reportDate]", "2026-11-\(10 + i)")]))
    }

    @Test("a 429 with Retry-After holds its endpoint until then: nothing to it goes earlier, then the request goes again")
    func retryAfterHolds() {
        var rig = Rig((0..<6).map { Self.info($0) }, limits: Rig.limits(concurrency: 2))
        let holdUntil = Rig.unixStart + 1_500
        var calls = 0
        let error = rig.run { _, _ in
            calls += 1
            return calls == 1 ? .rateLimited(retryAfterUnixMs: holdUntil) : .ok
        }
        #expect(error == nil)
        #expect(rig.machine.counts.rateLimited == 1)
        let afterFirst = rig.sent.dropFirst().map(\.at)
        // The first answer (10 ms) held the endpoint: every later request went at or after the Retry-After.
        #expect(afterFirst.filter { $0 > Rig.start }.allSatisfy { $0 >= Rig.start + 1_500 * 1_000_000 })
        #expect(rig.asks.allSatisfy { $0.decision == .definitive })
        #expect(rig.machine.counts.requests["transaction_info"] == 7)
    }

    @Test("a 429 without Retry-After (or past an hour ahead) holds nothing: its request backs off, the others go on")
    func retryAfterMissing() {
        for retryAfter in [nil, Rig.unixStart + 3_700_000] as [Int64?] {
            var rig = Rig((0..<4).map { Self.info($0) }, limits: Rig.limits(concurrency: 1))
            let error = rig.run { request, n in
                request.path.hasSuffix("2000000000") && n == 1 ? .rateLimited(retryAfterUnixMs: retryAfter) : .ok
            }
            #expect(error == nil)
            let first = rig.sends("transaction_info")
            // The second exchange goes right after the 429 (10 ms), not after an hour.
            #expect(first.count == 5 && first[1].at == Rig.start + 10_000_000)
            #expect(first[1].request.path.hasSuffix("2000000001"))
            #expect(first.last!.at < Rig.start + Rig.second, "the 429'd request came back after its backoff alone")
        }
    }

    @Test("the budget: at most its limit in any window of a second (and 1%), however fast Apple answers")
    func budget() {
        var limits = Rig.limits(concurrency: 8)
        limits.rates = [.transactionInfo: 10]
        var rig = Rig((0..<40).map { Self.info($0) }, limits: limits)
        #expect(rig.run { _, _ in .ok } == nil)
        let times = rig.sent.map(\.at)
        #expect(times.count == 40)
        for (i, t) in times.enumerated() {
            let inWindow = times[i...].prefix { $0 < t + RateBudget.windowNs }.count
            #expect(inWindow <= 10, "\(inWindow) requests within a window from \(t)")
        }
        // And the budget is used: 40 requests take about 4 windows, not 40 seconds.
        #expect(times.last! - times.first! < 5 * Self.second)
    }

    @Test("X-Rate-Limit: once a tenth of the hourly allowance is left, App Store Connect is paused, then asked again")
    func hourlyAllowance() {
        var limits = Rig.limits(concurrency: 1)
        limits.hourlyPauseNs = 30 * Self.second
        var rig = Rig((0..<3).map { Self.report($0) }, limits: limits)
        let error = rig.run { _, _ in
            var reply = Reply.ok
            reply.headers["X-Rate-Limit"] = "user-hour-lim:100;user-hour-rem:10;"
            return reply
        }
        #expect(error == nil)
        let times = rig.sends("sales_reports").map(\.at)
        #expect(times.count == 3)
        #expect(times[1] - times[0] >= 30 * Self.second && times[2] - times[1] >= 30 * Self.second)
        // With plenty left, no pause.
        var plenty = Rig((0..<3).map { Self.report($0) }, limits: limits)
        _ = plenty.run { _, _ in Reply(outcome: Reply.ok.outcome, headers: ["X-Rate-Limit": "user-hour-lim:100;user-hour-rem:90"]) }
        #expect(plenty.sent.last!.at - plenty.sent.first!.at < Self.second)
    }

    @Test("a host that never answers: one wave goes out (never a second), then exit 75's line")
    func outageFirstWave() {
        var rig = Rig((0..<20).map { Self.info($0) }, limits: Rig.limits(concurrency: 4))
        // The failures come one by one (as a slow resolver makes them): none frees a slot for a fifth.
        var calls = 0
        let error = rig.run { _, _ in
            calls += 1
            var reply = Reply.unreachable
            reply.latencyMs = UInt64(calls)
            return reply
        }
        #expect(error?.code == .temporary)
        #expect(error?.message.contains("unreachable") == true)
        #expect(error?.message.contains("Could not connect") == true)
        #expect(rig.sent.count == 4, "the first wave only: \(rig.sent.count)")
        #expect(rig.asks.allSatisfy { $0.decision == nil }, "nothing was believed")
    }

    @Test("the team key: a 401 is doubted (a second, a fresh token); confirmed, its step is told and the run goes on")
    func teamKeyDoubt() {
        var rig = Rig([Self.report(0), Self.report(1), Self.info(0)], limits: Rig.limits(concurrency: 1))
        let error = rig.run { request, _ in request.service == .connect ? .unauthorized : .ok }
        #expect(error == nil, "the team key is not the run's to stop")
        let reports = rig.sends("sales_reports")
        #expect(reports.count == 2, "asked, then asked again once, then nothing more to App Store Connect")
        #expect(reports[1].at >= reports[0].at + UnauthorizedDoubts.confirmAfterNs && reports[1].renewToken)
        #expect(!reports[0].renewToken)
        #expect(rig.asks[0].decision == .definitive)
        #expect(rig.asks[1].decision == nil && rig.asks[1].sends == 0, "dropped unasked")
        #expect(rig.asks[2].decision == .definitive, "the Server API goes on")
        // A stray 401: the fresh request is answered and the doubt clears.
        var stray = Rig([Self.report(0), Self.report(1)], limits: Rig.limits(concurrency: 1))
        var calls = 0
        #expect(
            stray.run { _, _ in
                calls += 1
                return calls == 1 ? .unauthorized : .ok
            } == nil)
        #expect(stray.asks.allSatisfy { $0.decision == .definitive })
        #expect(stray.machine.counts.retried == 1)
    }

    @Test("one app of several refused: only its work is dropped (counted), the others go on; every app refused: exit 78")
    func oneAppOfSeveral() {
        let apps = NightApps(apps: ["com.a", "com.b"])
        var asks: [Ask] = []
        for i in 0..<6 { asks.append(Self.info(i, app: i % 2 == 0 ? "com.a" : "com.b")) }
        var rig = Rig(asks, limits: Rig.limits(concurrency: 1), apps: apps)
        let error = rig.run { request, _ in request.bundleID == "com.a" ? .unauthorized : .ok }
        #expect(error == nil)
        #expect(apps.refusedApps == ["com.a"])
        #expect(apps.droppedCounts["com.a"] == 3, "the refused one and the two never sent")
        #expect(asks.filter { $0.request.bundleID == "com.b" }.allSatisfy { $0.decision == .definitive })
        let toA = rig.sent.filter { $0.request.bundleID == "com.a" }
        #expect(toA.count == 2 && toA[1].renewToken, "asked again once, with a fresh token")
        #expect(apps.requestCounts["com.b"]?["transaction_info"] == 3)

        let both = NightApps(apps: ["com.a", "com.b"])
        var all = Rig((0..<4).map { Self.info($0, app: $0 % 2 == 0 ? "com.a" : "com.b") }, limits: Rig.limits(), apps: both)
        let stop = all.run { _, _ in .unauthorized }
        #expect(stop?.code == .configuration)
        #expect(stop?.message.contains("for every app (com.a, com.b)") == true)
    }

    @Test("without the night's apps (lookup, respond), a confirmed 401 stops the run with exit 78")
    func unauthorizedStops() {
        var limits = Rig.limits(concurrency: 1)
        limits.defaultApp = "com.one"
        var rig = Rig([Self.info(0), Self.info(1)], limits: limits)
        let error = rig.run { _, _ in .unauthorized }
        #expect(error?.code == .configuration)
        #expect(error?.message.contains("for com.one") == true)
        #expect(rig.asks[0].decision == .stop && rig.asks[1].sends == 0)
    }

    @Test("stopSendingAtNs: nothing goes at or after it; the answers in flight are still read")
    func stopSending() {
        var limits = Rig.limits(concurrency: 1)
        limits.rates = [.transactionInfo: 2]
        limits.stopSendingAtNs = Rig.start + 3 * Self.second
        var rig = Rig((0..<20).map { Self.info($0) }, limits: limits)
        #expect(rig.run { _, _ in Reply(outcome: Reply.ok.outcome, latencyMs: 400) } == nil)
        #expect(rig.sent.allSatisfy { $0.at < Rig.start + 3 * Self.second })
        #expect(rig.sent.count >= 4 && rig.sent.count < 20)
        #expect(rig.asks.prefix(rig.sent.count).allSatisfy { $0.decision == .definitive }, "every request sent was read")
        #expect(rig.asks.dropFirst(rig.sent.count).allSatisfy { $0.sends == 0 && $0.decision == nil })
    }

    @Test("longestRateLimitWaitMs: a 429 asking for a longer wait ends the run (exit 75) and says how long")
    func longestRateLimitWait() {
        var limits = Rig.limits(concurrency: 1)
        limits.longestRateLimitWaitMs = 300_000
        var rig = Rig([Self.info(0)], limits: limits)
        let error = rig.run { _, _ in .rateLimited(retryAfterUnixMs: Rig.unixStart + 600_010) }
        #expect(error?.code == .temporary)
        #expect(error?.message.contains("asks to wait 600 s") == true)
        // A shorter wait is waited for.
        var short = Rig([Self.info(0)], limits: limits)
        #expect(short.run { _, n in n == 1 ? .rateLimited(retryAfterUnixMs: Rig.unixStart + 2_000) : .ok } == nil)
        #expect(short.sent.count == 2 && short.sent[1].at >= Rig.start + 2 * Self.second)
    }

    @Test("hostile events: an answer for a tag never sent, twice for one tag, is ignored")
    func strayCompletions() throws {
        var machine = TransportMachine<Ask>(
            limits: Rig.limits(concurrency: 1), service: "x", apps: nil, breaker: OutageBreaker(wave: 1))
        let stray = ExchangeCompletion(tag: 42, outcome: .response(status: 200, body: []))
        #expect(try machine.answered(stray, now: Rig.start, unixMs: Rig.unixStart, jitter: 0) == nil)
        guard case .pull = machine.fill(now: Rig.start) else {
            Issue.record("a fresh machine did not ask the feed")
            return
        }
        guard case .send(let s) = machine.fed(Self.info(0), now: Rig.start) else {
            Issue.record("the first request did not go")
            return
        }
        machine.sent(s, now: Rig.start)
        let done = ExchangeCompletion(tag: s.tag, outcome: Reply.ok.outcome)
        _ = try machine.answered(done, now: Rig.start + 1, unixMs: Rig.unixStart, jitter: 0)
        _ = try machine.answered(done, now: Rig.start + 2, unixMs: Rig.unixStart, jitter: 0)
        #expect(machine.counts.requests["transaction_info"] == 1 && machine.breaker.answers == 1)
    }
}
