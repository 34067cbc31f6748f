import AppStore
import Crypto
import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import StoreIO

/// Where `respond` finds Apple's refund requests: Get Notification History
/// (`notificationType` CONSUMPTION_REQUEST, production and sandbox) from its stored position, and
/// the shop's own `iap_notifications(signed_payload, received_at)` when it has one. Every payload
/// is verified like every other signed object; one that fails a check is kept in
/// `respond_rejects` with its reason and never believed. A request is stored once per
/// notificationUUID (Apple repeats notifications; the two sources overlap).
struct RequestSources {
    let settings: JobSettings
    let logger: Logger
    /// respond's clock (`--now`).
    let now: EpochMillis
    var S: SQL { settings.jobSchema.sql }
    /// Where the shop's own relations are: in a two-store shop, the schema of its rows
    /// (`storeRows`), not the App Store's views.
    var shopSchema: String { settings.storeRows ?? settings.sourceSchema }
    var src: SQL { "\(ident: shopSchema)" }

    /// `respond_positions.source` of an app's notification history: `notification_history` for
    /// the first app of IAP_BUNDLE_IDS (and when none is given), `notification_history:<bundle>`
    /// for each other.
    static func historySource(app: String?, first: String?) -> String {
        guard let app, app != first else { return "notification_history" }
        return "notification_history:" + app
    }

    /// A first run looks this far back; later runs from their position, less `overlapMs`
    /// (Apple lists a notification at its send time, a retried one again an hour later; the
    /// UUID makes a second reading harmless).
    static let firstLookBackMs: EpochMillis = 14 * 86_400_000
    static let overlapMs: EpochMillis = 3_600_000

    struct Counts: Sendable, Equatable {
        var read = 0
        var stored = 0
        var rejected = 0
    }

    /// One verified CONSUMPTION_REQUEST, as stored.
    struct Request {
        var uuid: String
        var requestedMs: EpochMillis
        var reason: String?
        var transaction: SignedTransaction
        var signedTransaction: String
    }

    /// Stores the CONSUMPTION_REQUEST among `payloads` (others are skipped), in one transaction
    /// with the position `reached` when given. Returns how many were new.
    static func store(
        _ requests: [Request], source: String, db: PGConnection, schema: JobSchema,
        position: (environment: String, reachedMs: EpochMillis)?, positionSource: String? = nil
    ) throws -> Int {
        let S = schema.sql
        var stored = 0
        try db.transaction {
            for r in requests {
                let t = r.transaction.transaction
                let inserted = try db.query(
                    """
                    INSERT INTO \(S).consumption_requests (notification_uuid, environment, transaction_id,
                        original_transaction_id, product_id, apple_type, quantity, price_milli, currency, reason,
                        requested_ms, source, signed_transaction)
                    VALUES (\(r.uuid), \(t.environment.rawValue), \(t.transactionID), \(t.originalTransactionID), \(t.productID),
                        \(r.transaction.type), \(t.quantity), \(r.transaction.price), \(r.transaction.currency), \(r.reason),
                        \(r.requestedMs), \(source), \(r.signedTransaction))
                    ON CONFLICT (notification_uuid) DO NOTHING
                    """)
                stored += inserted.affectedRows
            }
            if let position {
                try db.query(
                    """
                    INSERT INTO \(S).respond_positions (source, environment, reached_ms)
                    VALUES (\(positionSource ?? source), \(position.environment), \(position.reachedMs))
                    ON CONFLICT (source, environment) DO UPDATE SET reached_ms = greatest(respond_positions.reached_ms, EXCLUDED.reached_ms)
                    """)
            }
        }
        return stored
    }

    /// Keeps a payload that failed a check, once per payload (its SHA-256), with the reason.
    static func reject(
        _ payload: String, reason: String, receivedMs: EpochMillis?, source: String, db: PGConnection,
        schema: JobSchema
    ) throws {
        let digest = SHA256.hash(data: Array(payload.utf8)).map { String(format: "%02x", $0) }.joined()
        try db.query(
            """
            INSERT INTO \(schema.sql).respond_rejects (source, payload_sha256, received_ms, reason)
            VALUES (\(source), \(digest), \(receivedMs), \(reason)) ON CONFLICT (source, payload_sha256) DO NOTHING
            """)
    }

    /// What one signed payload is to `respond`: a request, something else (another type: not
    /// ours to read), or a rejection with its reason.
    enum Reading {
        case request(Request)
        case other
        case rejected(String)
    }

    static func read(_ payload: String, verifier: SignedDataVerifier, bundles: Set<String>?) -> Reading {
        switch verifier.verifyNotification(payload, bundleIDs: bundles) {
        case .failure(let rejection):
            return .rejected("\(rejection)")
        case .success(let n):
            guard n.type == "CONSUMPTION_REQUEST" else { return .other }
            guard let t = n.transaction, let signed = n.signedTransactionInfo else {
                return .rejected("a CONSUMPTION_REQUEST without data.signedTransactionInfo")
            }
            return .request(
                Request(
                    uuid: n.uuid, requestedMs: n.signedDate, reason: n.consumptionRequestReason,
                    transaction: t, signedTransaction: signed))
        }
    }

    /// Get Notification History for CONSUMPTION_REQUEST in both environments, from each stored
    /// position (less the overlap) to `now`.
    func sweepHistory(
        db: PGConnection, api: ServerAPISettings, share: Double, counts: inout Counts,
        pager: inout Pager.Counts
    ) throws {
        var transport = AppStoreTransport(settings: settings, service: "the App Store Server API")
        transport.serverAPI = api
        transport.rates = [:]
        transport.share = share
        let bundles: Set<String>? = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        var sweeps: [RequestSweep] = []
        // Apple keeps a notification history per app (the token's `bid`): each app of
        // IAP_BUNDLE_IDS is read, each from its own position.
        let apps: [String?] = settings.bundleIDList.isEmpty ? [nil] : settings.bundleIDList
        for app in apps {
            let source = Self.historySource(app: app, first: settings.bundleIDList.first)
            for environment in AppStoreEnvironment.allCases {
                // Apple keeps 180 days in production, 30 in the sandbox (an hour's margin for clocks).
                let maxDays: Int64 = environment == .production ? 180 : 30
                let earliest = max(now, RespondRun.wallClock()) - maxDays * 86_400_000 + 3_600_000
                let position = try db.query(
                    """
                    SELECT reached_ms FROM \(S).respond_positions
                    WHERE source = \(source) AND environment = \(environment.rawValue)
                    """)
                let stored = position.rowCount > 0 ? position.value(0, 0).flatMap { Int64($0) } : nil
                let start = max(stored.map { $0 - Self.overlapMs } ?? now - Self.firstLookBackMs, earliest)
                guard start < now else { continue }
                sweeps.append(
                    RequestSweep(
                        sources: self, db: db, environment: environment, start: start, end: now, bundles: bundles,
                        app: app, source: source))
            }
        }
        let progress = StageProgress(stage: "requests", enabled: settings.progress)
        defer { progress.finish() }
        progress.setTotal(sweeps.count)
        try Pager(transport: transport).run(sweeps, progress: progress, counts: &pager)
        for s in sweeps {
            counts.read += s.read
            counts.stored += s.stored
            counts.rejected += s.rejected
        }
    }

    /// The shop's `iap_notifications(signed_payload text, received_at timestamptz)`, when it has
    /// one: the rows received since the stored position (less the overlap), in batches.
    /// `source`: where the source relations are read (`db` without SOURCE_DATABASE_URL).
    func readShopNotifications(db: PGConnection, source: PGConnection, counts: inout Counts) throws {
        let shape = try source.query(
            """
            SELECT column_name, data_type FROM information_schema.columns
            WHERE table_schema = \(shopSchema) AND table_name = 'iap_notifications'
            """)
        guard shape.rowCount > 0 else { return }
        var columns: [String: String] = [:]
        for i in 0..<shape.rowCount { columns[shape.value(i, 0) ?? ""] = shape.value(i, 1) }
        guard columns["signed_payload"] == "text", columns["received_at"] == "timestamp with time zone" else {
            throw JobError(
                .configuration,
                "\(shopSchema).iap_notifications must have signed_payload text and "
                    + "received_at timestamptz (it has: \(columns.keys.sorted().joined(separator: ", "))); fix the relation or drop it")
        }
        let position = try db.query(
            """
            SELECT reached_ms FROM \(S).respond_positions WHERE source = 'iap_notifications' AND environment = 'any'
            """)
        var after =
            (position.rowCount > 0 ? position.value(0, 0).flatMap { Int64($0) } : nil).map { $0 - Self.overlapMs }
            ?? now - Self.firstLookBackMs
        let bundles: Set<String>? = settings.bundleIDs.isEmpty ? nil : settings.bundleIDs
        let batch = 2000
        while true {
            let rows = try source.query(
                """
                SELECT signed_payload, (extract(epoch FROM received_at) * 1000)::bigint AS ms
                FROM \(src).iap_notifications
                WHERE received_at > to_timestamp(\(after)::bigint / 1000.0) AND received_at <= to_timestamp(\(now)::bigint / 1000.0)
                ORDER BY received_at LIMIT \(batch)
                """)
            guard rows.rowCount > 0 else { break }
            var requests: [Request] = []
            var reached = after
            for i in 0..<rows.rowCount {
                let ms = rows.value(i, 1).flatMap { Int64($0) } ?? after
                reached = max(reached, ms)
                counts.read += 1
                guard let payload = rows.value(i, 0), !payload.isEmpty else {
                    try Self.reject(
                        "null-at-\(ms)", reason: "signed_payload is null or empty", receivedMs: ms, source: "iap_notifications",
                        db: db, schema: settings.jobSchema)
                    counts.rejected += 1
                    continue
                }
                switch Self.read(payload, verifier: settings.signedData, bundles: bundles) {
                case .request(let r): requests.append(r)
                case .other: break
                case .rejected(let reason):
                    counts.rejected += 1
                    logger.warning(
                        "a notification of iap_notifications failed a check and is not believed",
                        metadata: ["received_ms": "\(ms)", "reason": "\(reason)"])
                    try Self.reject(
                        payload, reason: reason, receivedMs: ms, source: "iap_notifications", db: db,
                        schema: settings.jobSchema)
                }
            }
            counts.stored += try Self.store(
                requests, source: "iap_notifications", db: db, schema: settings.jobSchema,
                position: ("any", reached))
            // A batch that ends inside a run of equal received_at: the next starts at it (the UUID
            // makes the overlap harmless). A batch that cannot advance (more rows in one
            // millisecond than a batch holds) stops the reading with a warning: those rows past
            // the batch are not read until received_at tells them apart.
            let next = reached - 1
            if rows.rowCount < batch { break }
            guard next > after else {
                logger.warning(
                    "iap_notifications: more rows share one received_at millisecond than a batch holds; rows past the batch are not read: store received_at with clock_timestamp()",
                    metadata: ["received_ms": "\(reached)", "batch": "\(batch)"])
                break
            }
            after = next
        }
    }
}

/// Get Notification History for CONSUMPTION_REQUEST in one environment and window.
final class RequestSweep: Conversation {
    let sources: RequestSources
    let db: PGConnection
    let environment: AppStoreEnvironment
    let start, end: Int64
    let bundles: Set<String>?
    /// The app whose history this is (the token's `bid`; nil: the key's first app).
    let app: String?
    /// Its `respond_positions.source`.
    let source: String
    private var token: String?
    private(set) var read = 0, stored = 0, rejected = 0

    init(
        sources: RequestSources, db: PGConnection, environment: AppStoreEnvironment, start: Int64, end: Int64,
        bundles: Set<String>?, app: String?, source: String
    ) {
        (self.sources, self.db, self.environment, self.start, self.end, self.bundles) = (sources, db, environment, start, end, bundles)
        (self.app, self.source) = (app, source)
    }

    var request: AppStoreRequest {
        AppStoreEndpoints.notificationHistory.request(
            in: environment, query: [("paginationToken", token)],
            body: ServerAPI.notificationHistoryBody(startMs: start, endMs: end, type: "CONSUMPTION_REQUEST"), bundleID: app)
    }

    func page(_ body: [UInt8]) throws -> Bool {
        let page = try AppStoreEndpoints.notificationHistory.reader(body)
        var requests: [RequestSources.Request] = []
        for payload in page.signedPayloads {
            read += 1
            switch RequestSources.read(payload, verifier: sources.settings.signedData, bundles: bundles) {
            case .request(let r) where r.transaction.transaction.environment == environment:
                requests.append(r)
            case .request, .other:
                rejected += 1
                try RequestSources.reject(
                    payload, reason: "notification history answered with another type or environment",
                    receivedMs: nil, source: "notification_history", db: db, schema: sources.settings.jobSchema)
            case .rejected(let reason):
                rejected += 1
                sources.logger.warning(
                    "a notification failed a check and is not believed",
                    metadata: ["environment": "\(environment.rawValue)", "reason": "\(reason)"])
                try RequestSources.reject(
                    payload, reason: reason, receivedMs: nil, source: "notification_history", db: db,
                    schema: sources.settings.jobSchema)
            }
        }
        let last = !page.hasMore
        // The position advances only with what was stored, in the same transaction.
        stored += try RequestSources.store(
            requests, source: "notification_history", db: db, schema: sources.settings.jobSchema,
            position: last ? (environment.rawValue, end) : nil, positionSource: source)
        if !last { token = page.paginationToken }
        return last
    }

    func abandon(_ problem: String) {
        sources.logger.warning(
            "the consumption request sweep stopped; it starts again from the same point next run",
            metadata: ["environment": "\(environment.rawValue)", "problem": "\(problem)"])
    }
}
