import AppStore
import Foundation
import HTTP
import Logging
import Postgres
import Reconciliation

/// What the Server API sweeps did, for the summary and the tests.
public struct SweepCounts: Sendable, Equatable {
    /// Notifications stored per type (repeats of a UUID counted once), rejected payloads.
    public var notifications: [String: Int] = [:]
    public var notificationsRejected = 0
    /// Customers whose history was asked, left for a later night, transactions returned.
    public var historyCustomers = 0
    public var historyLeft = 0
    public var historyTransactions = 0
    public var historyRejected = 0
    var pager = Pager.Counts()
}

/// Contract §3b's nightly sweeps (issue 11): Get Notification History for REFUND,
/// REFUND_REVERSED and ONE_TIME_CHARGE in each environment, from where the last finished sweep
/// reached to `--as-of`; then Get Transaction History v2 for the customers with open orders in the
/// window. Every signed object is verified before it is stored; each page is stored in one
/// transaction with the position it reached, so a run killed at any moment resumes without losing
/// or double-counting a notification (the UUID is the key).
struct ServerAPISweeps {
    let settings: JobSettings
    let api: ServerAPISettings
    let runID: Int64
    let logger: Logger
    var S: SQL { settings.jobSchema.sql }

    /// REFUND_DECLINED: the outcome of a refund request `respond` answered (consumption_requests.csv).
    static let notificationTypes = ["REFUND", "REFUND_REVERSED", "ONE_TIME_CHARGE", "REFUND_DECLINED"]

    func run(db: PGConnection) throws -> SweepCounts {
        var counts = SweepCounts()
        let progress = Progress(stage: "sweep", enabled: settings.progress)
        defer { progress.finish() }
        var transport = AppStoreTransport(settings: settings, service: "the App Store Server API")
        transport.serverAPI = api
        transport.rates = api.rates
        let pager = Pager(transport: transport)
        let bundles: Set<String>? = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs

        // 1. Notification history: eight sweeps (four types, two environments), one page at a time each.
        let hadRefundsBefore = try db.query("SELECT 1 FROM \(S).notifications WHERE notification_type = 'REFUND' LIMIT 1").rowCount > 0
        var sweeps: [NotificationSweep] = []
        for environment in AppStoreEnvironment.allCases {
            let maxDays: Int64 = environment == .production ? 180 : 30
            // Apple counts its 180 (30) days back from its own now, not from --as-of; an hour's margin
            // for clocks that differ.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let earliest = max(settings.asOf, now) - maxDays * 86_400_000 + 3_600_000
            for type in Self.notificationTypes {
                let position = try db.query("""
                    SELECT reached_ms FROM \(S).notification_sweeps WHERE notification_type = \(type) AND environment = \(environment.rawValue)
                    """)
                let stored = position.rowCount > 0 ? position.value(0, 0).flatMap { Int64($0) } : nil
                let first = DecisionSettings.windowStart(asOf: settings.asOf, days: min(settings.refundWindowDays, Int(maxDays)))
                let start = max(stored ?? first, earliest)
                // Nothing to ask when an earlier sweep already reached as_of (a rerun for a past date).
                guard start < settings.asOf else { continue }
                sweeps.append(NotificationSweep(sweeps: self, db: db, type: type, environment: environment, start: start,
                                                end: settings.asOf, bundles: bundles))
            }
        }
        progress.setTotal(sweeps.count)
        try pager.run(sweeps, progress: progress, counts: &counts.pager)
        for sweep in sweeps {
            counts.notifications[sweep.type, default: 0] += sweep.stored
            counts.notificationsRejected += sweep.rejected
        }
        let refundSweeps = sweeps.filter { $0.type == "REFUND" && $0.environment == .production && $0.finished }
        if hadRefundsBefore, !refundSweeps.isEmpty, refundSweeps.allSatisfy({ $0.seen == 0 }) {
            logger.warning("""
                the refund sweep found no notification at all since the last night, though earlier windows had refunds: \
                check that App Store Server Notifications V2 are still sent to your server (App Store Connect, App \
                Information); notification history holds only what Apple sent or tried to send there
                """)
        }

        // 2. Transaction history of the customers with open orders in the window.
        let customers = try historyCustomers(db)
        counts.historyLeft = max(0, customers.total - customers.list.count)
        let conversations = customers.list.map {
            HistoryCustomer(sweeps: self, db: db, userID: $0.user, transactionID: $0.transaction, revision: $0.revision,
                            bundles: bundles)
        }
        counts.historyCustomers = conversations.count
        progress.setTotal(sweeps.count + conversations.count)
        try pager.run(conversations, progress: progress, counts: &counts.pager)
        for c in conversations {
            counts.historyTransactions += c.learned
            counts.historyRejected += c.rejected
        }
        if counts.historyLeft > 0 {
            logger.notice("transaction history: customers left for a later night (--history-limit)",
                          metadata: ["asked": "\(conversations.count)", "left": "\(counts.historyLeft)"])
        }
        return counts
    }

    /// Users with an open order created in the window and a production Apple transaction known from
    /// an upload of theirs: those with a `paid` order first, then the newest order; at most
    /// `--history-limit`. A customer asked before is asked with the same transaction id and the
    /// stored revision (valid only for the same query), so only what changed comes back.
    func historyCustomers(_ db: PGConnection) throws -> (list: [(user: String, transaction: String, revision: String?)], total: Int) {
        let src: SQL = "\(ident: settings.sourceSchema)"
        let result = try db.query("""
            WITH cand AS (
                SELECT user_id, bool_or(status = 'paid') AS paid, max(created_at) AS newest
                FROM \(src).iap_orders
                WHERE transaction_id IS NULL AND status IS DISTINCT FROM 'delivered' AND user_id IS NOT NULL
                  AND created_at >= to_timestamp(\(settings.windowStart)::bigint / 1000.0) AND created_at <= to_timestamp(\(settings.asOf)::bigint / 1000.0)
                GROUP BY user_id
            ), known AS (
                SELECT DISTINCT ON (r.user_id) r.user_id, rt.transaction_id
                FROM \(src).iap_receipts r
                JOIN cand c ON c.user_id = r.user_id
                JOIN \(S).receipt_transactions rt ON rt.receipt_id = r.receipt_id AND rt.environment = 'production'
                ORDER BY r.user_id, r.submitted_at DESC, rt.transaction_id
            )
            SELECT c.user_id, coalesce(h.transaction_id, k.transaction_id), h.revision, count(*) OVER ()
            FROM cand c JOIN known k ON k.user_id = c.user_id
            LEFT JOIN \(S).history_customers h ON h.user_id = c.user_id
            ORDER BY c.paid DESC, c.newest DESC, c.user_id
            LIMIT \(settings.historyLimit)
            """)
        var list: [(String, String, String?)] = []
        var total = 0
        for i in 0..<result.rowCount {
            guard let user = result.value(i, 0), let tid = result.value(i, 1), ServerAPI.isPathSafe(tid) else { continue }
            list.append((user, tid, result.value(i, 2)))
            total = Int(result.value(i, 3) ?? "0") ?? 0
        }
        return (list, max(total, list.count))
    }
}

/// One notification history sweep: a type, an environment, a window.
final class NotificationSweep: Conversation {
    let sweeps: ServerAPISweeps
    let db: PGConnection
    let type: String
    let environment: AppStoreEnvironment
    let start, end: Int64
    let bundles: Set<String>?
    private var token: String?
    /// Notifications read, stored for the first time, rejected by a check.
    private(set) var seen = 0, stored = 0, rejected = 0
    private(set) var finished = false

    init(sweeps: ServerAPISweeps, db: PGConnection, type: String, environment: AppStoreEnvironment, start: Int64, end: Int64,
         bundles: Set<String>?) {
        (self.sweeps, self.db, self.type, self.environment, self.start, self.end, self.bundles)
            = (sweeps, db, type, environment, start, end, bundles)
    }

    var request: AppStoreRequest {
        AppStoreEndpoints.notificationHistory.request(in: environment, query: [("paginationToken", token)],
                                                      body: ServerAPI.notificationHistoryBody(startMs: start, endMs: end, type: type))
    }

    func page(_ body: [UInt8]) throws -> Bool {
        let page = try AppStoreEndpoints.notificationHistory.reader(body)
        var rows: [(uuid: String, type: String, subtype: String?, tid: String?, signed: Int64)] = []
        var items: [LearnTransactions.Item] = []
        for payload in page.signedPayloads {
            seen += 1
            switch sweeps.settings.signedData.verifyNotification(payload, bundleIDs: bundles) {
            case .failure(let rejection):
                rejected += 1
                sweeps.logger.warning("a notification failed a check and is not believed",
                                      metadata: ["type": "\(type)", "reason": "\(rejection)"])
            case .success(let n):
                guard n.type == type, n.transaction.map({ $0.transaction.environment == environment }) ?? true else {
                    rejected += 1
                    sweeps.logger.warning("notification history answered with another type or environment",
                                          metadata: ["asked": "\(type)", "got": "\(n.type)"])
                    continue
                }
                rows.append((n.uuid, n.type, n.subtype, n.transaction?.transaction.transactionID, n.signedDate))
                if let t = n.transaction {
                    items.append(LearnTransactions.Item(t, source: .notification,
                                                        reversedAt: n.type == "REFUND_REVERSED" ? n.signedDate : nil))
                }
            }
        }
        let last = !page.hasMore
        let S = sweeps.S
        try db.transaction {
            for r in rows {
                let inserted = try db.query("""
                    INSERT INTO \(S).notifications (notification_uuid, notification_type, subtype, environment,
                        transaction_id, signed_date_ms, run_id)
                    VALUES (\(r.uuid), \(r.type), \(r.subtype), \(environment.rawValue), \(r.tid), \(r.signed), \(sweeps.runID)) ON CONFLICT (notification_uuid) DO NOTHING
                    """)
                if inserted.affectedRows > 0 { stored += 1 }
            }
            try LearnTransactions.store(items, db: db, schema: sweeps.settings.jobSchema)
            if last {
                // The position advances only with what was stored, in the same transaction.
                try db.query("""
                    INSERT INTO \(S).notification_sweeps (notification_type, environment, reached_ms, run_id)
                    VALUES (\(type), \(environment.rawValue), \(end), \(sweeps.runID))
                    ON CONFLICT (notification_type, environment) DO UPDATE
                    SET reached_ms = greatest(notification_sweeps.reached_ms, EXCLUDED.reached_ms),
                        run_id = EXCLUDED.run_id, updated_at = now()
                    """)
            }
        }
        if last { finished = true } else { token = page.paginationToken }
        return last
    }

    func abandon(_ problem: String) {
        sweeps.logger.warning("a notification sweep stopped; it starts again from the same point next run",
                              metadata: ["type": "\(type)", "environment": "\(environment.rawValue)", "problem": "\(problem)"])
    }
}

/// One customer's transaction history: sort ASCENDING, no dates, from the stored revision.
final class HistoryCustomer: Conversation {
    let sweeps: ServerAPISweeps
    let db: PGConnection
    let userID: String
    let transactionID: String
    let bundles: Set<String>?
    private var revision: String?
    private(set) var learned = 0, rejected = 0

    init(sweeps: ServerAPISweeps, db: PGConnection, userID: String, transactionID: String, revision: String?,
         bundles: Set<String>?) {
        (self.sweeps, self.db, self.userID, self.transactionID, self.revision, self.bundles)
            = (sweeps, db, userID, transactionID, revision, bundles)
    }

    /// Fixed parameters (ASCENDING, no dates) so that a stored `revision` stays valid for the next
    /// night; the job filters dates itself.
    var request: AppStoreRequest {
        AppStoreEndpoints.transactionHistory.request(in: .production, id: transactionID,
                                                     query: [("sort", "ASCENDING"), ("revision", revision)])
    }

    func page(_ body: [UInt8]) throws -> Bool {
        let page = try AppStoreEndpoints.transactionHistory.reader(body)
        var items: [LearnTransactions.Item] = []
        for jws in page.signedTransactions {
            switch sweeps.settings.signedData.verifyTransaction(jws, bundleIDs: bundles) {
            case .failure(let rejection):
                rejected += 1
                sweeps.logger.warning("a transaction of transaction history failed a check and is not believed",
                                      metadata: ["reason": "\(rejection)"])
            case .success(let t):
                items.append(LearnTransactions.Item(t, source: .transactionHistory, historyUser: userID))
            }
        }
        let S = sweeps.S
        try db.transaction {
            try LearnTransactions.store(items, db: db, schema: sweeps.settings.jobSchema)
            // The revision of each page stored with its transactions: a rerun continues from here.
            try db.query("""
                INSERT INTO \(S).history_customers (user_id, transaction_id, environment, revision, run_id)
                VALUES (\(userID), \(transactionID), 'production', \(page.revision), \(sweeps.runID))
                ON CONFLICT (user_id) DO UPDATE SET revision = EXCLUDED.revision, run_id = EXCLUDED.run_id, asked_at = now()
                """)
        }
        learned += items.count
        revision = page.revision
        return !page.hasMore
    }

    func abandon(_ problem: String) {
        sweeps.logger.warning("transaction history of a customer not read; asked again next run",
                              metadata: ["user_id": "\(userID)", "problem": "\(problem)"])
    }
}
