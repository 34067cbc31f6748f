import AppStore
import Foundation
import JobStore
import Logging
import PlayStore
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// What the night's sweep of Google's voided purchases did (summary.json `google_play.voided`).
public struct PlayVoidedCounts: Sendable, Equatable {
    /// Records read tonight (a record read again by the overlap counts again), and records new to the job.
    public var records = 0
    public var stored = 0
    /// Packages whose sweep read every page (their position moved), and those cut short.
    public var finished: [String] = []
    public var unfinished: [String] = []
    /// Per package whose position was older than Google keeps: the span no longer listed, lost
    /// for good (`from`..`to`, UTC).
    public var lost: [String: String] = [:]
    /// Packages whose position, before tonight, was older than `--play-voided-alert-days`.
    public var stale: [String] = []
    public var requests = 0
    public var rateLimited = 0
    /// Why Google Play skipped the sweep (refused, unreachable); nil: swept.
    public var skipped: String?
    /// Per package with a position after tonight, its age by the real clock (seconds): small once
    /// a sweep finished, growing while sweeps are cut short (the metric an alert watches).
    public var positionAgeSeconds: [String: Double] = [:]

    public init() {}
}

/// Contract, "Google Play's refunds": each package of `PLAY_PACKAGE_NAMES` swept from its stored
/// position through `PlayVoidedSweep` (every page, `type` 0 with quantity-based partial refunds),
/// each record stored once as it is read; the position moves to the sweep's end only when it read
/// every page, in the same transaction as nothing else: a sweep cut short or killed is done again
/// from the old position next night, and what it stored stays.
public struct PlayVoidedNight {
    let settings: JobSettings
    let play: PlaySettings
    let runID: Int64
    let logger: Logger

    public init(settings: JobSettings, play: PlaySettings, runID: Int64, logger: Logger) {
        (self.settings, self.play, self.runID, self.logger) = (settings, play, runID, logger)
    }

    public func run(db: PGConnection) throws -> PlayVoidedCounts {
        let S = settings.jobSchema.sql
        var counts = PlayVoidedCounts()
        // Google's list is kept 30 days back from Google's now: the sweep goes by the real clock,
        // whatever the night's --as-of.
        let now = EpochMillis(Date().timeIntervalSince1970 * 1000)
        let stored = try db.query("SELECT package, position_ms FROM \(S).play_voided_positions")
        var positions: [String: EpochMillis] = [:]
        for row in stored.rows { if let p = row[0], let ms = row[1].flatMap({ Int64($0) }) { positions[p] = ms } }
        let alertMs = Int64(settings.playVoidedAlertDays) * 86_400_000
        counts.stale = play.packages.filter { positions[$0].map { now - $0 > alertMs } ?? false }
        var failure: Error?
        let sweeps = play.packages.map { package in
            PlayVoidedSweep(package: package, position: positions[package], now: now) { page in
                guard failure == nil else { return }
                do { counts.stored += try store(db, package: package, page) } catch {
                    failure = error
                    throw error
                }
                counts.records += page.count
            }
        }
        var transport = AppStoreTransport(settings: settings.transport, service: "Google Play", concurrency: play.packages.count)
        transport.play = play
        var paged = Pager.Counts()
        try Pager(transport: transport).run(
            sweeps, progress: StageProgress(stage: "play voided", enabled: settings.progress), counts: &paged)
        if let failure { throw failure }
        for sweep in sweeps {
            if let at = sweep.finished ? sweep.end : positions[sweep.package] {
                counts.positionAgeSeconds[sweep.package] = Double(max(0, now - at)) / 1000
            }
            if let lost = sweep.lostSpan { counts.lost[sweep.package] = UTC.timestamp(lost.from) + ".." + UTC.timestamp(lost.to) }
            guard sweep.finished else {
                counts.unfinished.append(sweep.package)
                continue
            }
            counts.finished.append(sweep.package)
            try db.query(
                """
                INSERT INTO \(S).play_voided_positions (package, position_ms, swept_at, run_id)
                VALUES (\(sweep.package), \(sweep.end), now(), \(runID))
                ON CONFLICT (package) DO UPDATE SET position_ms = EXCLUDED.position_ms, swept_at = EXCLUDED.swept_at,
                    run_id = EXCLUDED.run_id
                """)
        }
        counts.skipped = paged.playRefusal
        counts.requests = paged.requests.values.reduce(0, +)
        counts.rateLimited = paged.rateLimited
        return counts
    }

    /// Stores a page's records (each once); how many were new.
    private func store(_ db: PGConnection, package: String, _ page: [PlayVoided]) throws -> Int {
        let S = settings.jobSchema.sql
        var new = 0
        try db.transaction {
            for v in page {
                new += try db.query(
                    """
                    INSERT INTO \(S).play_voided (token, voided_ms, voided_quantity, package, order_id, purchase_ms, source, reason,
                        stored_at, run_id)
                    VALUES (\(v.purchaseToken), \(v.voidedTime), \(v.voidedQuantity ?? 0), \(package), \(v.orderID), \(v.purchaseTime),
                        \(v.source), \(v.reason), now(), \(runID))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """
                ).rowCount
            }
        }
        return new
    }
}
