import AppStore
import Foundation
import JobStore
import Logging
import PlayStore
import Postgres
import Reconciliation
import StoreIO
import TransportCore

/// What the night asked of Google's orders (summary.json `google_play.orders`).
public struct PlayOrderCounts: Sendable, Equatable {
    /// Orders asked, stored with their money, and answered unknown alone.
    public var asked = 0
    public var stored = 0
    public var unknown = 0
    /// Orders whose batch was not answered (left for the next night).
    public var unanswered = 0
    public var requests = 0

    public init() {}
}

/// Contract, "Google Play purchases": the money of each order of a purchase Google called
/// purchased, from `orders.batchget` (1 to 1,000 distinct ids of one package a call), stored exact
/// in `play_orders`. One unknown id fails the whole call (404): the batch is split in halves and
/// each asked again, until the unknown order is alone (stored `unknown`, no money). An order is
/// asked once, and again after a voided record of its purchase newer than its answer (the refund
/// rules read its `state`); a batch Google does not answer is asked again next night.
public struct PlayOrderMoney {
    let settings: JobSettings
    let play: PlaySettings
    let runID: Int64
    let logger: Logger
    /// Ids a call, at most (Google's limit).
    static let batch = 1000

    public init(settings: JobSettings, play: PlaySettings, runID: Int64, logger: Logger) {
        (self.settings, self.play, self.runID, self.logger) = (settings, play, runID, logger)
    }

    public func run(db: PGConnection) throws -> PlayOrderCounts {
        let S = settings.jobSchema.sql
        var counts = PlayOrderCounts()
        var transport = AppStoreTransport(settings: settings.transport, service: "Google Play", concurrency: 4)
        transport.play = play
        var breaker = OutageBreaker(wave: 4)
        var sent = TransportCounts()
        for package in play.packages {
            let r = try db.query(
                """
                SELECT DISTINCT p.order_id FROM \(S).play_purchases p
                WHERE p.package = \(package) AND p.verdict = 'purchased' AND p.order_id IS NOT NULL
                  AND (NOT EXISTS (SELECT 1 FROM \(S).play_orders o WHERE o.order_id = p.order_id)
                       -- asked before a refund of it: its state said nothing of the refund
                       OR EXISTS (SELECT 1 FROM \(S).play_orders o JOIN \(S).play_voided v ON v.token = p.token
                                  WHERE o.order_id = p.order_id AND NOT o.unknown
                                    AND o.asked_at < to_timestamp(v.voided_ms / 1000.0)))
                ORDER BY 1
                """)
            var waiting: [[String]] = stride(from: 0, to: r.rowCount, by: Self.batch).map { start in
                (start..<min(start + Self.batch, r.rowCount)).compactMap { r.value($0, 0) }.filter(PlayPaths.isOrderID)
            }.filter { !$0.isEmpty }
            counts.asked += waiting.reduce(0) { $0 + $1.count }
            // Each round asks every batch waiting; a batch answered 404 comes back as two halves.
            while !waiting.isEmpty, sent.playRefusal == nil, !sent.playRefusedPackages.contains(package) {
                let asked = waiting.compactMap { ids in
                    PlayRows.batchGetOrders(package: package, orderIDs: ids).map { (ids, PlayAsking($0, read: PlayOrder.readBatch)) }
                }
                waiting = []
                var feed = ListFeed(asked.map(\.1))
                try transport.run(&feed, breaker: &breaker, counts: &sent)
                try db.transaction {
                    for (ids, exchange) in asked where exchange.finished {
                        switch exchange.outcome {
                        case .read(let orders):
                            for order in orders where ids.contains(order.orderID) {
                                try store(db, package: package, order)
                                counts.stored += 1
                            }
                            counts.unanswered += ids.count - orders.filter { ids.contains($0.orderID) }.count
                        case .notFound where ids.count == 1:
                            try db.query(
                                """
                                INSERT INTO \(S).play_orders (order_id, package, unknown, asked_at, run_id)
                                VALUES (\(ids[0]), \(package), true, now(), \(runID)) ON CONFLICT (order_id) DO NOTHING
                                """)
                            counts.unknown += 1
                        case .notFound:
                            let half = ids.count / 2
                            waiting += [Array(ids[..<half]), Array(ids[half...])]
                        case .gone, .refused, .gaveUp:
                            counts.unanswered += ids.count
                        }
                    }
                }
            }
        }
        counts.requests = sent.requests.values.reduce(0, +)
        return counts
    }

    private func store(_ db: PGConnection, package: String, _ o: PlayOrder) throws {
        let S = settings.jobSchema.sql
        try db.query(
            """
            INSERT INTO \(S).play_orders (order_id, package, token, state, total_currency, total_units, total_nanos,
                tax_currency, tax_units, tax_nanos, revenue_currency, revenue_units, revenue_nanos, asked_at, run_id)
            VALUES (\(o.orderID), \(package), \(o.purchaseToken), \(o.state), \(o.total?.currency), \(o.total?.units),
                \(o.total.map { Int($0.nanos) }), \(o.tax?.currency), \(o.tax?.units), \(o.tax.map { Int($0.nanos) }),
                \(o.developerRevenue?.currency), \(o.developerRevenue?.units), \(o.developerRevenue.map { Int($0.nanos) }),
                now(), \(runID))
            ON CONFLICT (order_id) DO UPDATE SET
                token = EXCLUDED.token, state = EXCLUDED.state, unknown = false,
                total_currency = EXCLUDED.total_currency, total_units = EXCLUDED.total_units, total_nanos = EXCLUDED.total_nanos,
                tax_currency = EXCLUDED.tax_currency, tax_units = EXCLUDED.tax_units, tax_nanos = EXCLUDED.tax_nanos,
                revenue_currency = EXCLUDED.revenue_currency, revenue_units = EXCLUDED.revenue_units,
                revenue_nanos = EXCLUDED.revenue_nanos, asked_at = EXCLUDED.asked_at, run_id = EXCLUDED.run_id
            """)
    }
}
