import AppStore
import Foundation
import HTTP
import Logging
import Postgres
import Reconciliation
import StoreIO

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
    /// The sweeps' pages and items.
    package var pager = Pager.Counts()
    /// Per app of IAP_BUNDLE_IDS: notifications stored, customers asked, transactions returned.
    public var apps: [String: App] = [:]
    public struct App: Sendable, Equatable {
        public var notifications = 0
        public var historyCustomers = 0
        public var historyTransactions = 0
    }
}

/// Contract §3b's nightly sweeps: Get Notification History for REFUND,
/// REFUND_REVERSED, ONE_TIME_CHARGE and REFUND_DECLINED in each environment, for each app of
/// IAP_BUNDLE_IDS (Apple keeps a history per app), from where that app's last finished
/// sweep reached to `--as-of`; then Get Transaction History v2 for the customers with open orders
/// in the window, in each app they bought in. Every signed object is verified before it is stored; each page is stored in one
/// transaction with the position it reached, so a run killed at any moment resumes without losing
/// or double-counting a notification (the UUID is the key).
package struct ServerAPISweeps {
    let settings: JobSettings
    let api: ServerAPISettings
    let runID: Int64
    let logger: Logger
    var S: SQL { settings.jobSchema.sql }

    /// The sweeps of run `runID` with the Server API key `api`.
    package init(settings: JobSettings, api: ServerAPISettings, runID: Int64, logger: Logger) {
        (self.settings, self.api, self.runID, self.logger) = (settings, api, runID, logger)
    }

    /// REFUND_DECLINED: the outcome of a refund request `respond` answered (consumption_requests.csv).
    static let notificationTypes = ["REFUND", "REFUND_REVERSED", "ONE_TIME_CHARGE", "REFUND_DECLINED"]

    /// Runs every sweep on `db` (the run's session), storing what Apple tells.
    package func run(db: PGConnection) throws -> SweepCounts {
        var counts = SweepCounts()
        let progress = StageProgress(stage: "sweep", enabled: settings.progress)
        defer { progress.finish() }
        var transport = AppStoreTransport(settings: settings, service: "the App Store Server API")
        transport.serverAPI = api
        transport.rates = api.rates
        let pager = Pager(transport: transport)
        let apps = settings.bundleIDList
        try adoptRowsBeforeApps(db)

        // 1. Notification history: eight sweeps per app (four types, two environments), one page at a time each.
        let hadRefundsBefore = try db.query("SELECT 1 FROM \(S).notifications WHERE notification_type = 'REFUND' LIMIT 1").rowCount > 0
        var sweeps: [NotificationSweep] = []
        for environment in AppStoreEnvironment.allCases {
            let maxDays: Int64 = environment == .production ? 180 : 30
            // Apple counts its 180 (30) days back from its own now, not from --as-of; an hour's margin
            // for clocks that differ.
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let earliest = max(settings.asOf, now) - maxDays * 86_400_000 + 3_600_000
            for app in apps {
                for type in Self.notificationTypes {
                    let position = try db.query(
                        """
                        SELECT reached_ms FROM \(S).notification_sweeps
                        WHERE bundle_id = \(app) AND notification_type = \(type) AND environment = \(environment.rawValue)
                        """)
                    let stored = position.rowCount > 0 ? position.value(0, 0).flatMap { Int64($0) } : nil
                    let first = DecisionSettings.windowStart(asOf: settings.asOf, days: min(settings.refundWindowDays, Int(maxDays)))
                    let start = max(stored ?? first, earliest)
                    // Nothing to ask when an earlier sweep already reached as_of (a rerun for a past date).
                    guard start < settings.asOf else { continue }
                    sweeps.append(
                        NotificationSweep(
                            sweeps: self, db: db, app: app, type: type, environment: environment,
                            start: start, end: settings.asOf))
                }
            }
        }
        progress.setTotal(sweeps.count)
        try pager.run(sweeps, progress: progress, counts: &counts.pager)
        for sweep in sweeps {
            counts.notifications[sweep.type, default: 0] += sweep.stored
            counts.notificationsRejected += sweep.rejected
            counts.apps[sweep.app, default: .init()].notifications += sweep.stored
        }
        let refundSweeps = sweeps.filter { $0.type == "REFUND" && $0.environment == .production && $0.finished }
        if hadRefundsBefore, !refundSweeps.isEmpty, refundSweeps.allSatisfy({ $0.seen == 0 }) {
            logger.warning(
                """
                the refund sweep found no notification at all since the last night, though earlier windows had refunds: \
                check that App Store Server Notifications V2 are still sent to your server (App Store Connect, App \
                Information); notification history holds only what Apple sent or tried to send there
                """)
        }

        // 2. Transaction history of the customers with open orders in the window.
        let customers = try historyCustomers(db)
        counts.historyLeft = max(0, customers.total - customers.list.count)
        let conversations = customers.list.map {
            HistoryCustomer(
                sweeps: self, db: db, userID: $0.user, app: $0.app, transactionID: $0.transaction,
                revision: $0.revision)
        }
        counts.historyCustomers = conversations.count
        progress.setTotal(sweeps.count + conversations.count)
        try pager.run(conversations, progress: progress, counts: &counts.pager)
        for c in conversations {
            counts.historyTransactions += c.learned
            counts.historyRejected += c.rejected
            counts.apps[c.app, default: .init()].historyCustomers += 1
            counts.apps[c.app, default: .init()].historyTransactions += c.learned
        }
        if counts.historyLeft > 0 {
            logger.notice(
                "transaction history: customers left for a later night (--history-limit)",
                metadata: ["asked": "\(conversations.count)", "left": "\(counts.historyLeft)"])
        }
        return counts
    }

    /// The rows of a build before migration 14, which asked the first app of IAP_BUNDLE_IDS
    /// only (bundle_id ''), become that app's.
    func adoptRowsBeforeApps(_ db: PGConnection) throws {
        guard let first = settings.bundleIDList.first else { return }
        try db.query("UPDATE \(S).notification_sweeps SET bundle_id = \(first) WHERE bundle_id = ''")
        try db.query("UPDATE \(S).history_customers SET bundle_id = \(first) WHERE bundle_id = ''")
    }

    /// Customers to ask, per app: users with an open order created in the window and a production
    /// Apple transaction of that app known from an upload of theirs (Apple answers a customer's
    /// history per app, for a transaction id of that app). An order's app is its product's
    /// `iap_products.bundle_id`; an order whose product names no app of IAP_BUNDLE_IDS goes to
    /// every app the user has a known transaction in. Those with a `paid` order first, then the
    /// newest order; at most `--history-limit` in all. A customer asked before is asked with the
    /// same transaction id and the stored revision (valid only for the same query), so only what
    /// changed comes back.
    func historyCustomers(_ db: PGConnection) throws
        -> (list: [(user: String, app: String, transaction: String, revision: String?)], total: Int)
    {
        let src: SQL = "\(ident: settings.sourceSchema)"
        let apps = settings.bundleIDList
        let first = apps.first ?? ""
        let result = try db.query(
            """
            WITH cand AS (
                SELECT o.user_id, CASE WHEN p.bundle_id = ANY(\(apps)::text[]) THEN p.bundle_id END AS app,
                       bool_or(o.status = 'paid') AS paid, max(o.created_at) AS newest
                FROM \(src).iap_orders o
                LEFT JOIN (SELECT DISTINCT ON (product_id) product_id, bundle_id FROM \(src).iap_products
                           ORDER BY product_id, bundle_id) p ON p.product_id = o.product_id
                WHERE o.transaction_id IS NULL AND o.status IS DISTINCT FROM 'delivered' AND o.user_id IS NOT NULL
                  AND o.created_at >= to_timestamp(\(settings.windowStart)::bigint / 1000.0) AND o.created_at <= to_timestamp(\(settings.asOf)::bigint / 1000.0)
                GROUP BY 1, 2
            ), known AS (
                SELECT DISTINCT ON (x.user_id, x.app) x.user_id, x.app, x.transaction_id
                FROM (
                    SELECT r.user_id, coalesce(t.bundle_id, \(first)) AS app, rt.transaction_id, r.submitted_at
                    FROM \(src).iap_receipts r
                    JOIN (SELECT DISTINCT user_id FROM cand) c ON c.user_id = r.user_id
                    JOIN \(S).receipt_transactions rt ON rt.receipt_id = r.receipt_id AND rt.environment = 'production'
                    LEFT JOIN \(S).apple_transactions t ON t.transaction_id = rt.transaction_id AND t.environment = 'production'
                ) x
                WHERE x.app = ANY(\(apps)::text[])
                ORDER BY x.user_id, x.app, x.submitted_at DESC, x.transaction_id
            ), pairs AS (
                SELECT k.user_id, k.app, k.transaction_id, bool_or(c.paid) AS paid, max(c.newest) AS newest
                FROM known k JOIN cand c ON c.user_id = k.user_id AND (c.app IS NULL OR c.app = k.app)
                GROUP BY k.user_id, k.app, k.transaction_id
            )
            SELECT pr.user_id, pr.app, coalesce(h.transaction_id, pr.transaction_id), h.revision, count(*) OVER ()
            FROM pairs pr
            LEFT JOIN \(S).history_customers h ON h.user_id = pr.user_id AND h.bundle_id = pr.app
            ORDER BY pr.paid DESC, pr.newest DESC, pr.user_id, pr.app
            LIMIT \(settings.historyLimit)
            """)
        var list: [(String, String, String, String?)] = []
        var total = 0
        for i in 0..<result.rowCount {
            guard let user = result.value(i, 0), let app = result.value(i, 1), let tid = result.value(i, 2),
                ServerAPI.isPathSafe(tid)
            else { continue }
            list.append((user, app, tid, result.value(i, 3)))
            total = Int(result.value(i, 4) ?? "0") ?? 0
        }
        return (list, max(total, list.count))
    }
}

/// One notification history sweep: a type, an environment, a window.
final class NotificationSweep: Conversation {
    let sweeps: ServerAPISweeps
    let db: PGConnection
    /// The app asked (the token's `bid`); only its notifications are believed.
    let app: String
    let type: String
    let environment: AppStoreEnvironment
    let start, end: Int64
    private var token: String?
    /// Notifications read, stored for the first time, rejected by a check.
    private(set) var seen = 0, stored = 0, rejected = 0
    private(set) var finished = false

    init(
        sweeps: ServerAPISweeps, db: PGConnection, app: String, type: String, environment: AppStoreEnvironment,
        start: Int64, end: Int64
    ) {
        (self.sweeps, self.db, self.app, self.type, self.environment, self.start, self.end) = (
            sweeps, db, app, type, environment, start, end
        )
    }

    var request: AppStoreRequest {
        AppStoreEndpoints.notificationHistory.request(
            in: environment, query: [("paginationToken", token)],
            body: ServerAPI.notificationHistoryBody(startMs: start, endMs: end, type: type),
            bundleID: app)
    }

    func page(_ body: [UInt8]) throws -> Bool {
        let page = try AppStoreEndpoints.notificationHistory.reader(body)
        var rows: [(uuid: String, type: String, subtype: String?, tid: String?, signed: Int64)] = []
        var items: [LearnTransactions.Item] = []
        for payload in page.signedPayloads {
            seen += 1
            switch sweeps.settings.signedData.verifyNotification(payload, bundleIDs: [app]) {
            case .failure(let rejection):
                rejected += 1
                sweeps.logger.warning(
                    "a notification failed a check and is not believed",
                    metadata: ["type": "\(type)", "reason": "\(rejection)"])
            case .success(let n):
                guard n.type == type, n.transaction.map({ $0.transaction.environment == environment }) ?? true else {
                    rejected += 1
                    sweeps.logger.warning(
                        "notification history answered with another type or environment",
                        metadata: ["asked": "\(type)", "got": "\(n.type)"])
                    continue
                }
                rows.append((n.uuid, n.type, n.subtype, n.transaction?.transaction.transactionID, n.signedDate))
                if let t = n.transaction {
                    items.append(
                        LearnTransactions.Item(
                            t, source: .notification,
                            reversedAt: n.type == "REFUND_REVERSED" ? n.signedDate : nil))
                }
            }
        }
        let last = !page.hasMore
        let S = sweeps.S
        try db.transaction {
            for r in rows {
                let inserted = try db.query(
                    """
                    INSERT INTO \(S).notifications (notification_uuid, notification_type, subtype, environment,
                        transaction_id, signed_date_ms, run_id, bundle_id)
                    VALUES (\(r.uuid), \(r.type), \(r.subtype), \(environment.rawValue), \(r.tid), \(r.signed), \(sweeps.runID),
                        \(app)) ON CONFLICT (notification_uuid) DO NOTHING
                    """)
                if inserted.affectedRows > 0 { stored += 1 }
            }
            try LearnTransactions.store(items, db: db, schema: sweeps.settings.jobSchema)
            if last {
                // The position advances only with what was stored, in the same transaction.
                try db.query(
                    """
                    INSERT INTO \(S).notification_sweeps (bundle_id, notification_type, environment, reached_ms, run_id)
                    VALUES (\(app), \(type), \(environment.rawValue), \(end), \(sweeps.runID))
                    ON CONFLICT (bundle_id, notification_type, environment) DO UPDATE
                    SET reached_ms = greatest(notification_sweeps.reached_ms, EXCLUDED.reached_ms),
                        run_id = EXCLUDED.run_id, updated_at = now()
                    """)
            }
        }
        if last { finished = true } else { token = page.paginationToken }
        return last
    }

    func abandon(_ problem: String) {
        sweeps.logger.warning(
            "a notification sweep stopped; it starts again from the same point next run",
            metadata: [
                "app": "\(app)", "type": "\(type)", "environment": "\(environment.rawValue)",
                "problem": "\(problem)",
            ])
    }
}

/// One customer's transaction history: sort ASCENDING, no dates, from the stored revision.
final class HistoryCustomer: Conversation {
    let sweeps: ServerAPISweeps
    let db: PGConnection
    let userID: String
    /// The app asked (the token's `bid`; the transaction id is one of its transactions).
    let app: String
    let transactionID: String
    private var revision: String?
    private(set) var learned = 0, rejected = 0

    init(sweeps: ServerAPISweeps, db: PGConnection, userID: String, app: String, transactionID: String, revision: String?) {
        (self.sweeps, self.db, self.userID, self.app, self.transactionID, self.revision) = (
            sweeps, db, userID, app, transactionID, revision
        )
    }

    /// Fixed parameters (ASCENDING, no dates) so that a stored `revision` stays valid for the next
    /// night; the job filters dates itself.
    var request: AppStoreRequest {
        AppStoreEndpoints.transactionHistory.request(
            in: .production, id: transactionID,
            query: [("sort", "ASCENDING"), ("revision", revision)], bundleID: app)
    }

    func page(_ body: [UInt8]) throws -> Bool {
        let page = try AppStoreEndpoints.transactionHistory.reader(body)
        var items: [LearnTransactions.Item] = []
        for jws in page.signedTransactions {
            switch sweeps.settings.signedData.verifyTransaction(jws, bundleIDs: [app]) {
            case .failure(let rejection):
                rejected += 1
                sweeps.logger.warning(
                    "a transaction of transaction history failed a check and is not believed",
                    metadata: ["reason": "\(rejection)"])
            case .success(let t):
                items.append(LearnTransactions.Item(t, source: .transactionHistory, historyUser: userID))
            }
        }
        let S = sweeps.S
        try db.transaction {
            try LearnTransactions.store(items, db: db, schema: sweeps.settings.jobSchema)
            // The revision of each page stored with its transactions: a rerun continues from here.
            try db.query(
                """
                INSERT INTO \(S).history_customers (user_id, bundle_id, transaction_id, environment, revision, run_id)
                VALUES (\(userID), \(app), \(transactionID), 'production', \(page.revision), \(sweeps.runID))
                ON CONFLICT (user_id, bundle_id) DO UPDATE SET revision = EXCLUDED.revision, run_id = EXCLUDED.run_id, asked_at = now()
                """)
        }
        learned += items.count
        revision = page.revision
        return !page.hasMore
    }

    func abandon(_ problem: String) {
        sweeps.logger.warning(
            "transaction history of a customer not read; asked again next run",
            metadata: ["user_id": "\(userID)", "app": "\(app)", "problem": "\(problem)"])
    }
}
