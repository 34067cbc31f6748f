import AppStore
import Foundation
import JobStore
import Logging
import PlayStore
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// What the night's Google Play stage did (summary.json `google_play`).
public struct PlayCounts: Sendable, Equatable {
    /// Tokens asked tonight (Play's clean receipt rows in the window, not yet settled).
    public var candidates = 0
    public var requests = 0
    /// Answers stored tonight, by verdict.
    public var purchased = 0
    public var pending = 0
    public var cancelled = 0
    public var unknown = 0
    /// Tokens asked without a settled answer (410, garbage, no answer, a 404 of a doubted package):
    /// asked again next night.
    public var unsettled = 0
    /// Tokens whose package cannot be told: not asked.
    public var noPackage = 0
    /// Packages where Google called every token asked unknown (HTTP 404): those 404s are not believed.
    public var doubtedPackages: [String] = []
    /// Packages Google refused the service account for (HTTP 401 or 403, confirmed): their tokens
    /// were not asked; the other packages were.
    public var refusedPackages: [String] = []
    /// Why Google Play was skipped tonight (its service account refused, its token endpoint silent);
    /// nil: asked.
    public var skipped: String?
    /// 429 answers.
    public var rateLimited = 0
    public var seconds = 0.0
    /// The money of the purchased orders (`PlayOrderMoney`), asked after the tokens.
    public var orders = PlayOrderCounts()
    /// Play's notifications pulled before the tokens were asked; nil without `PLAY_PUBSUB_SUBSCRIPTION`.
    public var notifications: PlayNotificationCounts?

    public init() {}
}

/// The night's Google Play stage (contract, "Google Play purchases"): every purchase token of Play's
/// clean receipt rows in the window that Google has not settled yet is asked
/// `purchases.productsv2.getproductpurchasev2` through the one transport, in batches, and its
/// answer stored in `play_purchases` (its products in `play_purchase_lines`), or its attempt in
/// `play_attempts`. A token is settled once Google called it cancelled or unknown, or purchased and
/// acknowledged (or completed more than four days before the night: Google refunds an
/// unacknowledged purchase after three). Google refusing the service account, or its token
/// endpoint not answering, skips Play for the night: the App Store's night goes on.
public struct PlayPurchases {
    let settings: JobSettings
    let play: PlaySettings
    let runID: Int64
    let logger: Logger
    /// Tokens read, asked and stored together: memory is bounded by the batch, not the tokens.
    static let batch = 1000
    /// Requests in flight to Google.
    static let concurrency = 16

    public init(settings: JobSettings, play: PlaySettings, runID: Int64, logger: Logger) {
        (self.settings, self.play, self.runID, self.logger) = (settings, play, runID, logger)
    }

    private struct Candidate {
        let token: String
        let package: String?
    }

    /// An asked token: its candidate, package and exchange.
    private typealias Asked = (candidate: Candidate, package: String, exchange: PlayAsking<PlayPurchase>)

    public func run(db: PGConnection) throws -> PlayCounts {
        let started = Date()
        var counts = PlayCounts()
        var transport = AppStoreTransport(settings: settings.transport, service: "Google Play", concurrency: Self.concurrency)
        transport.play = play
        var breaker = OutageBreaker(wave: Self.concurrency)
        var transportCounts = TransportCounts()
        /// Per package tonight: answers other than 404, and 404s.
        var known: [String: Int] = [:], unknown: [String: Int] = [:]
        // One transport run for every batch, so that its budget remembers the last second of the
        // batch before (a run per batch let each batch's first second add to it: 76 calls in
        // one second, `make bench-play`). The feed reads the next batch when the last is taken.
        var queue: [Asked] = [], pending: [Asked] = []
        var after = "", exhausted = false
        var readFailure: Error?
        func load() {
            guard queue.isEmpty, !exhausted, readFailure == nil else { return }
            do {
                let batch = try candidates(db, after: after)
                exhausted = batch.count < Self.batch
                guard let last = batch.last else { return }
                after = last.token
                counts.candidates += batch.count
                var homeless: [Candidate] = []
                for candidate in batch {
                    guard let package = candidate.package ?? (play.packages.count == 1 ? play.packages[0] : nil),
                        let request = PlayRows.productPurchase(package: package, token: candidate.token)
                    else {
                        homeless.append(candidate)
                        continue
                    }
                    queue.append((candidate, package, PlayAsking(request, read: PlayPurchase.read)))
                }
                queue.reverse()
                if !homeless.isEmpty {
                    try db.transaction {
                        for candidate in homeless {
                            counts.noPackage += 1
                            try attempt(
                                db, token: candidate.token, package: nil,
                                problem: "no package: the receipt's order names no product of PLAY_PACKAGE_NAMES, which lists several")
                        }
                    }
                }
            } catch {
                readFailure = error
            }
        }
        var feed = PullFeed<PlayAsking<PlayPurchase>>(
            pull: {
                load()
                guard let next = queue.popLast() else { return nil }
                pending.append(next)
                return next.exchange
            },
            done: {
                load()
                return queue.isEmpty && (exhausted || readFailure != nil)
            })
        // Each answer stored as soon as the transport settled it (a run killed midway asks again
        // only the tokens in flight).
        func record() throws {
            let ready = pending.filter { $0.exchange.finished }
            guard !ready.isEmpty else { return }
            pending.removeAll { $0.exchange.finished }
            try db.transaction {
                for (candidate, package, exchange) in ready {
                    switch exchange.outcome {
                    case .read(let purchase):
                        known[package, default: 0] += 1
                        try store(db, token: candidate.token, package: package, purchase: purchase)
                        switch purchase.state {
                        case .purchased: counts.purchased += 1
                        case .pending: counts.pending += 1
                        case .cancelled: counts.cancelled += 1
                        }
                    case .notFound:
                        unknown[package, default: 0] += 1
                        try attempt(
                            db, token: candidate.token, package: package, problem: "Google knows no such token (HTTP 404)",
                            unknown: true)
                    case .gone:
                        known[package, default: 0] += 1
                        counts.unsettled += 1
                        try attempt(db, token: candidate.token, package: package, problem: "the token is no longer valid (HTTP 410)")
                    case .refused(let problem, _), .gaveUp(let problem):
                        counts.unsettled += 1
                        try attempt(db, token: candidate.token, package: package, problem: problem)
                    }
                }
            }
        }
        try transport.run(&feed, breaker: &breaker, counts: &transportCounts, recorded: record)
        try record()
        if let readFailure { throw readFailure }
        if let refusal = transportCounts.playRefusal {
            counts.skipped = refusal
        } else if Set(play.packages).isSubset(of: transportCounts.playRefusedPackages) {
            counts.skipped =
                "Google refused the service account for every package of PLAY_PACKAGE_NAMES (HTTP 401 or 403, "
                + "again with a fresh token a second later)"
        }
        counts.refusedPackages = transportCounts.playRefusedPackages.sorted()
        try settleUnknown(db, known: known, unknown: unknown, counts: &counts)
        counts.requests = transportCounts.requests.values.reduce(0, +)
        counts.rateLimited = transportCounts.rateLimited
        counts.seconds = Date().timeIntervalSince(started)
        return counts
    }

    /// A 404 is believed (the token stored `unknown`, a rejection) only in a package where Google
    /// knew some token, tonight or before; a package whose every token asked is unknown is more
    /// likely the wrong package or another developer's account than a shop of forged tokens, and
    /// its 404s stay attempts (`doubtedPackages`, skipped_checks).
    private func settleUnknown(_ db: PGConnection, known: [String: Int], unknown: [String: Int], counts: inout PlayCounts) throws {
        let S = settings.jobSchema.sql
        for (package, n) in unknown.sorted(by: { $0.key < $1.key }) {
            let before =
                try db.query(
                    "SELECT count(*) FROM \(S).play_purchases WHERE package = \(package) AND verdict <> 'unknown'"
                ).value(0, 0).flatMap { Int($0) } ?? 0
            guard known[package, default: 0] + before > 0 else {
                counts.doubtedPackages.append(package)
                counts.unsettled += n
                continue
            }
            try db.transaction {
                let moved = try db.query(
                    """
                    WITH gone AS (
                        DELETE FROM \(S).play_attempts WHERE package = \(package) AND unknown AND run_id = \(runID) RETURNING token
                    )
                    INSERT INTO \(S).play_purchases (token, package, verdict, asked_at, run_id)
                    SELECT token, \(package), 'unknown', now(), \(runID) FROM gone
                    ON CONFLICT (token) DO UPDATE SET verdict = 'unknown', package = EXCLUDED.package,
                        order_id = NULL, acknowledgement = NULL, completed_at = NULL, region_code = NULL, account_id = NULL,
                        profile_id = NULL, test = false, asked_at = EXCLUDED.asked_at, run_id = EXCLUDED.run_id
                    RETURNING token
                    """)
                counts.unknown += moved.rowCount
                try db.execute(
                    "DELETE FROM \(S).play_purchase_lines l USING \(S).play_purchases p WHERE p.token = l.token AND p.verdict = 'unknown'")
            }
        }
    }

    /// The next batch of tokens after `after` (in token order), with the package their receipt's
    /// order names (its product's `bundle_id`, when one of `PLAY_PACKAGE_NAMES`), or their
    /// notification's package.
    private func candidates(_ db: PGConnection, after: String) throws -> [Candidate] {
        let S = settings.jobSchema.sql
        let views = try SourceStore.googlePlay.viewsSchema(of: settings.jobSchema).sql
        let receipts = SourceRelation.receipts.cleanRows(
            "\(views).iap_receipts", jobSchema: settings.jobSchema, store: .googlePlay)
        let start: SQL = "to_timestamp(\(settings.windowStart)::bigint / 1000.0)"
        let now: SQL = "to_timestamp(\(settings.asOf)::bigint / 1000.0)"
        // A token Play's notifications named (its package the message's) is asked as an uploaded one.
        let r = try db.query(
            """
            SELECT DISTINCT ON (c.token) c.token, c.package
            FROM (
                SELECT x.receipt_data::text AS token, pk.package
                FROM \(receipts) x
                LEFT JOIN LATERAL (
                    SELECT pr.bundle_id::text AS package FROM \(views).iap_orders o
                    JOIN \(views).iap_products pr ON pr.product_id = o.product_id
                    WHERE o.order_id = x.order_id AND pr.bundle_id::text = ANY(\(play.packages)::text[])
                    ORDER BY 1 LIMIT 1
                ) pk ON true
                WHERE x.submitted_at >= \(start) AND x.submitted_at < \(now) AND x.receipt_data::text > \(after)
                UNION ALL
                SELECT m.token, m.package FROM \(S).play_messages m
                WHERE m.token IS NOT NULL AND m.token > \(after) AND m.package = ANY(\(play.packages)::text[])
                  AND m.published_at >= \(start)
            ) c
            LEFT JOIN \(S).play_purchases pp ON pp.token = c.token
            WHERE pp.token IS NULL OR pp.verdict = 'pending'
                  OR (pp.verdict = 'purchased' AND pp.acknowledgement IS DISTINCT FROM 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED'
                      AND pp.completed_at >= \(now) - interval '4 days')
            ORDER BY c.token, c.package NULLS LAST
            LIMIT \(literal: .int(Self.batch))
            """)
        return r.rows.compactMap { row in row[0].map { Candidate(token: $0, package: row[1]) } }
    }

    /// Stores what Google said of `token` (replacing what it said before), and forgets its attempts.
    private func store(_ db: PGConnection, token: String, package: String, purchase p: PlayPurchase) throws {
        let S = settings.jobSchema.sql
        let verdict: String
        switch p.state {
        case .purchased: verdict = "purchased"
        case .pending: verdict = "pending"
        case .cancelled: verdict = "cancelled"
        }
        let completed = p.completionTime.map { UTC.timestamp($0) }
        try db.query(
            """
            INSERT INTO \(S).play_purchases (token, package, verdict, order_id, acknowledgement, completed_at, region_code,
                account_id, profile_id, test, asked_at, run_id)
            VALUES (\(token), \(package), \(verdict), \(p.orderID), \(p.acknowledgement.rawValue), \(completed)::timestamptz,
                \(p.regionCode), \(p.obfuscatedAccountID), \(p.obfuscatedProfileID), \(p.isTest), now(), \(runID))
            ON CONFLICT (token) DO UPDATE SET package = EXCLUDED.package, verdict = EXCLUDED.verdict,
                order_id = EXCLUDED.order_id, acknowledgement = EXCLUDED.acknowledgement, completed_at = EXCLUDED.completed_at,
                region_code = EXCLUDED.region_code, account_id = EXCLUDED.account_id, profile_id = EXCLUDED.profile_id,
                test = EXCLUDED.test, asked_at = EXCLUDED.asked_at, run_id = EXCLUDED.run_id
            """)
        try db.query("DELETE FROM \(S).play_purchase_lines WHERE token = \(token)")
        for (i, line) in p.lineItems.enumerated() {
            try db.query(
                """
                INSERT INTO \(S).play_purchase_lines (token, line, product_id, quantity, refundable_quantity, consumption_state)
                VALUES (\(token), \(i + 1), \(line.productID), \(line.quantity), \(line.refundableQuantity), \(line.consumptionState))
                """)
        }
        try db.query("DELETE FROM \(S).play_attempts WHERE token = \(token)")
    }

    /// One more attempt at `token` that settled nothing.
    private func attempt(_ db: PGConnection, token: String, package: String?, problem: String, unknown: Bool = false) throws {
        let S = settings.jobSchema.sql
        try db.query(
            """
            INSERT INTO \(S).play_attempts (token, package, attempts, unknown, last_problem, last_attempt_at, run_id)
            VALUES (\(token), \(package), 1, \(unknown), \(problem), now(), \(runID))
            ON CONFLICT (token) DO UPDATE SET package = EXCLUDED.package, attempts = \(S).play_attempts.attempts + 1,
                unknown = EXCLUDED.unknown, last_problem = EXCLUDED.last_problem, last_attempt_at = EXCLUDED.last_attempt_at,
                run_id = EXCLUDED.run_id
            """)
    }
}

/// A feed that asks for its next exchange when the transport has room: the night's Play tokens,
/// read from the database a batch at a time, all in one transport run.
private struct PullFeed<E: AppStoreExchange>: ExchangeFeed {
    let pull: () -> E?
    let done: () -> Bool
    mutating func next() -> E? { pull() }
    mutating func next(timeoutMs: Int) -> E? { pull() }
    var finished: Bool { done() }
}
