// When the request loops stop asking an App Store that does not answer (contract §3, "Retries"),
// outcome by outcome. No network, no clock.

import Testing

@testable import AppStore

@Suite("The outage breaker: when an App Store that does not answer stops the stage")
struct OutageBreakerTests {
    static let refused = "Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server (http://127.0.0.1:9/verifyReceipt)"

    /// `wave` first requests sent, then each outcome in turn (true: an HTTP answer); the verdict after each.
    static func verdicts(wave: Int, first: Int, _ outcomes: [Bool], moreFirstRequests: Bool = true) -> [OutageBreaker.Verdict] {
        var breaker = OutageBreaker(wave: wave)
        for _ in 0..<first { breaker.sent(first: true) }
        var sent = 0
        return outcomes.map { answered in
            sent += 1
            if answered { breaker.answered() } else { breaker.failed(first: sent <= first, reason: refused) }
            return breaker.verdict(moreFirstRequests: moreFirstRequests)
        }
    }

    @Test("the whole first wave failing in transport, with no HTTP answer, is unreachable")
    func firstWave() {
        let v = Self.verdicts(wave: 16, first: 16, Array(repeating: false, count: 16))
        #expect(v.dropLast().allSatisfy { $0 == .goOn })
        #expect(v.last == .unreachable)
    }

    @Test("one HTTP answer in the first wave (any status: a 503 is an answer) keeps the stage going")
    func oneAnswer() {
        let v = Self.verdicts(wave: 16, first: 16, [false] + [true] + Array(repeating: false, count: 14))
        #expect(v.allSatisfy { $0 == .goOn })
    }

    @Test("fewer receipts than --concurrency: the first wave is all of them, once no other is coming")
    func smallNight() {
        #expect(Self.verdicts(wave: 16, first: 3, [false, false, false], moreFirstRequests: false).last == .unreachable)
        #expect(Self.verdicts(wave: 16, first: 3, [false, false, false], moreFirstRequests: true).last == .goOn)
    }

    @Test("retries failing before the first wave is done do not count as the wave")
    func retriesAreNotTheWave() {
        var breaker = OutageBreaker(wave: 4)
        for _ in 0..<4 { breaker.sent(first: true) }
        breaker.failed(first: true, reason: Self.refused)
        for _ in 0..<10 {
            breaker.sent(first: false)
            breaker.failed(first: false, reason: Self.refused)
        }
        #expect(breaker.verdict(moreFirstRequests: true) == .goOn)
        for _ in 0..<3 { breaker.failed(first: true, reason: Self.refused) }
        #expect(breaker.verdict(moreFirstRequests: true) == .unreachable)
    }

    @Test("after answers: two waves in a row with no HTTP answer stop it, at least 16", arguments: [
        (1, 16), (4, 16), (8, 16), (16, 32), (64, 128),
    ])
    func streak(wave: Int, limit: Int) {
        var breaker = OutageBreaker(wave: wave)
        breaker.sent(first: true)
        breaker.answered()
        #expect(breaker.streakLimit == limit)
        for n in 1...limit {
            breaker.failed(first: false, reason: Self.refused)
            #expect(breaker.verdict(moreFirstRequests: true) == (n == limit ? .stoppedAnswering : .goOn))
        }
    }

    @Test("a lossy network (the chaos load: 2% timeouts, 5% resets) never trips it: an answer ends every streak")
    func lossyNetwork() {
        var breaker = OutageBreaker(wave: 64)
        var rng = SplitMix(seed: 11)
        var longest = 0
        for i in 0..<100_000 {
            breaker.sent(first: i < 20_000)
            if rng.next() % 100 < 7 { breaker.failed(first: false, reason: "Recv failure: Connection reset by peer") } else { breaker.answered() }
            longest = max(longest, breaker.streak)
            if breaker.verdict(moreFirstRequests: true) != .goOn { Issue.record("tripped after \(i + 1) requests") }
        }
        #expect(longest < 16)
    }

    @Test("the line names the host and libcurl's reason, and says what was kept")
    func messages() {
        var breaker = OutageBreaker(wave: 2)
        breaker.sent(first: true)
        breaker.sent(first: true)
        breaker.failed(first: true, reason: "Could not resolve host: apple.invalid (https://apple.invalid/verifyReceipt)")
        breaker.failed(first: true, reason: "Could not resolve host: apple.invalid (https://apple.invalid/verifyReceipt)")
        #expect(breaker.message(.unreachable, service: "the App Store") == "the App Store is unreachable (Could not resolve "
            + "host: apple.invalid (https://apple.invalid/verifyReceipt)): the first 2 requests got no HTTP answer; "
            + "nothing was believed: run again later")
        var later = OutageBreaker(wave: 1)
        later.answered()
        for _ in 0..<16 { later.failed(first: false, reason: Self.refused) }
        #expect(later.message(.stoppedAnswering, service: "the App Store Server API") == "the App Store Server API stopped "
            + "answering (\(Self.refused)): 16 requests in a row got no HTTP answer after 1 answer; the answers received "
            + "are kept: run again later")
    }
}

/// A tiny seeded generator: the same outcomes on every run.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
