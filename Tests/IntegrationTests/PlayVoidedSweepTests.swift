// Google's voided purchases list swept through the Pager and the one transport, against the Play
// simulator over HTTP: every page, each record once, the position moved only by a finished sweep,
// a span older than Google keeps reported lost.

import AppStoreSimulator
import Foundation
import PlaySimulator
import PlayStore
import Reconciliation
import Testing
import _CryptoExtras

@testable import JobStore
@testable import StoreIO

@Suite("Google's voided purchases swept over HTTP")
struct PlayVoidedSweepTests {
    static let game = "com.example.game", other = "com.example.other"
    static let day: Int64 = 86_400_000

    final class World {
        let harness: PlayHarness
        let transport: AppStoreTransport
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var service: PlayService { harness.service }

        /// `count` voided records of the game spread over the last `days` days, and three of the other app.
        init(count: Int, days: Int64 = 25) throws {
            var truth = PlayTruth()
            let now = self.now, day = PlayVoidedSweepTests.day
            truth.voided = (0..<count).map { i in
                let at = now - days * day + Int64(i) * (days * day / Int64(max(count, 1)))
                return PlayTruth.Voided(
                    packageName: game, purchaseToken: "tok-\(i)", orderID: "GPA.\(i)", purchaseTimeMs: at - 3_600_000, voidedTimeMs: at,
                    source: i % 3, reason: i % 9, voidedQuantity: i % 10 == 0 ? 1 : nil)
            } + (0..<3).map { i in
                PlayTruth.Voided(packageName: other, purchaseToken: "other-\(i)", orderID: nil, purchaseTimeMs: now - 2 * day,
                                 voidedTimeMs: now - day + Int64(i))
            }
            harness = try PlayHarness(truth: truth, packages: [game, other])
            var transport = AppStoreTransport(settings: PlayHarness.transportSettings, service: "Google Play", concurrency: 4)
            transport.play = harness.settings
            self.transport = transport
        }

        /// Sweeps `packages` from `positions`; each sweep and the records it stored (by token and time).
        func sweep(_ packages: [String], positions: [String: EpochMillis] = [:]) throws -> [(PlayVoidedSweep, [String])] {
            var stored: [String: [String]] = [:]
            let sweeps = packages.map { package in
                PlayVoidedSweep(package: package, position: positions[package], now: now) { page in
                    stored[package, default: []] += page.map { "\($0.purchaseToken)@\($0.voidedTime)" }
                }
            }
            var counts = Pager.Counts()
            try Pager(transport: transport).run(sweeps, progress: StageProgress(stage: "voided", enabled: false), counts: &counts)
            return sweeps.map { ($0, stored[$0.package] ?? []) }
        }

        func calls(_ endpoint: PlayEndpoint) -> Int { harness.calls(endpoint) }
    }

    @Test("a first sweep: 30 days back, every page, each record once, both packages; a second from its end finds nothing")
    func firstAndNext() throws {
        let world = try World(count: 2500)
        let swept = try world.sweep([Self.game, Self.other])
        let (game, stored) = swept[0]
        #expect(game.finished && game.problem == nil && game.lostSpan == nil)
        #expect(game.start == world.now - PlayVoidedSweep.retentionMs + 60_000 && game.end == world.now - 60_000)
        #expect(stored.count == 2500 && Set(stored).count == 2500, "\(stored.count) stored")
        #expect(swept[1].0.finished && swept[1].1.count == 3)
        #expect(world.calls(.voidedPurchases) == 4, "three pages of the game, one of the other app")
        #expect(world.service.stats.tooManyRequests == 0)
        // The next night starts where this one ended, less the overlap: only records already stored.
        let next = try world.sweep([Self.game], positions: [Self.game: game.end])
        #expect(next[0].0.finished && next[0].0.start == game.end - PlayVoidedSweep.overlapMs)
        #expect(Set(next[0].1).isSubset(of: Set(stored)))
    }

    @Test("a position older than Google keeps: the sweep starts 30 days back and reports the span lost")
    func lostSpan() throws {
        let world = try World(count: 50)
        let position = world.now - 35 * Self.day
        let swept = try world.sweep([Self.game], positions: [Self.game: position])
        let sweep = swept[0].0
        #expect(sweep.finished && swept[0].1.count == 50)
        let lost = try #require(sweep.lostSpan)
        #expect(lost.from == position && lost.to == sweep.start && sweep.start > position)
        #expect(world.service.calls.allSatisfy { $0.status != 400 }, "never asked further back than Google answers")
        // A recent position loses nothing and asks only from there (less the overlap).
        let recent = try world.sweep([Self.game], positions: [Self.game: world.now - 5 * Self.day])
        #expect(recent[0].0.lostSpan == nil && recent[0].1.count == 10, "\(recent[0].1.count)")
        // A position inside the overlap of the retention's edge loses nothing either.
        let edge = try world.sweep([Self.game], positions: [Self.game: world.now - PlayVoidedSweep.retentionMs + 120_000])
        #expect(edge[0].0.lostSpan == nil && edge[0].0.start == world.now - PlayVoidedSweep.retentionMs + 60_000)
    }

    @Test("a garbage page is asked again, never stored; garbage every time: the sweep is not finished and says why")
    func garbage() throws {
        let world = try World(count: 1500)
        world.service.setFaults(PlayFaultPlan(rules: [.next(1, [.invalidUTF8], endpoint: .voidedPurchases)]))
        let swept = try world.sweep([Self.game])
        #expect(swept[0].0.finished && swept[0].1.count == 1500 && Set(swept[0].1).count == 1500)
        world.service.setFaults(PlayFaultPlan(rules: [.share(1, of: PlayFault.garbage, endpoint: .voidedPurchases)]))
        let broken = try world.sweep([Self.game])
        #expect(!broken[0].0.finished && broken[0].0.problem != nil && broken[0].1.isEmpty)
        // Google refusing the account: nothing read, the sweep not finished (its position stays).
        world.service.setFaults(PlayFaultPlan(rules: [.share(1, of: [.forbidden], endpoint: .voidedPurchases)]))
        let refused = try world.sweep([Self.game])
        #expect(!refused[0].0.finished && refused[0].1.isEmpty)
    }
}
