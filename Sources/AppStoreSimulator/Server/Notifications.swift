// Get Notification History of the simulated Server API: the
// version 2 notifications Apple sent for the truth: ONE_TIME_CHARGE for every consumable,
// non-consumable and non-renewing purchase (a few seconds after it), REFUND for every refund
// (REVOKE for a FAMILY_REVOKE), REFUND_REVERSED for every reversed refund (each a few seconds
// after the event). Each shows the transaction as it was when sent: a REFUND its revocation
// (type, prorated percentage), a REFUND_REVERSED none. A notification's UUID, send time and send
// attempts are functions of its type and transaction id: the same data always gives the same
// history. About one in twenty never reached the app's server (timed out, then no response an
// hour later): those are what `onlyFailures` returns. About one in ten timed out and was
// delivered by the retry an hour later, and the history lists it twice, at the send and at the
// retry, with the same UUID and payload: Apple repeats notifications, so a client must be
// idempotent on `notificationUUID` (the two listings fall on different pages, or in the windows
// of two nights).
//
// CONSUMPTION_REQUEST for every transaction the truth has a consumption request for, listed at
// exactly its `consumption_request_ms` (the payload's signedDate) with its
// `consumptionRequestReason` and the transaction as it was then; and its outcome, REFUND or
// REFUND_DECLINED, listed at the outcome's time (ConsumptionOutcomes.swift) and decided when a
// request first lists it. Both follow the same UUID and retry model.
//
// Each app has its own history: a request lists the notifications of its token's app only.
//
// A pagination token is `<listed ms>_<uuid hex>_<request hash>`: it only continues the request
// (same body, same environment) that returned it; anything else is 400 4000014.

import Reconciliation

/// One listing of a notification Apple sent (a retried one is listed twice).
package struct SimNotification {
    var type: String
    var row: Int
    /// When Apple sent it first: the payload's `signedDate`.
    package var sentMs: Int64
    /// Where the history lists this entry: the send, or for the second listing of a retried
    /// notification, the retry.
    var listedMs: Int64
    /// 32 hex digits (the UUID without dashes): the tie-break of the order and the token.
    var uuidHex: String
    var undelivered: Bool
    /// The first send timed out and the retry an hour later succeeded.
    var retried: Bool
    /// The refund the transaction showed when it was sent.
    var refund: SimRefund?

    static let retryDelayMs: Int64 = 3_600_000
    /// The entry of a consumption request's outcome: REFUND or REFUND_DECLINED, decided when first
    /// listed (its UUID and times do not depend on which).
    static let outcomeType = "CONSUMPTION_OUTCOME"

    /// The notification's UUID, as the history lists it.
    package var uuid: String {
        let h = Array(uuidHex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-"
            + String(h[20..<32])
    }

    func comesBefore(_ ms: Int64, _ hex: String) -> Bool { listedMs != ms ? listedMs < ms : uuidHex < hex }

    /// The `index`th notification of `type` for the truth row `row`, sent at `eventMs`.
    package init(type: String, row: AppleTruthRow, index: Int, at eventMs: Int64, refund: SimRefund?) {
        self.type = type
        self.row = index
        self.refund = refund
        let h1 = SimHash.combine(SimHash.fnv(type), SimHash.fnv(row.transactionID), 1)
        let h2 = SimHash.combine(SimHash.fnv(type), SimHash.fnv(row.transactionID), 2)
        sentMs = eventMs + 1000 + Int64(h1 % 29_000)
        listedMs = sentMs
        let fate = SimHash.unit(SimHash.mix(h2 ^ 0xFA11))
        undelivered = fate < 0.05
        retried = !undelivered && fate < 0.15
        // Version 4 and the RFC 4122 variant, as Apple's UUIDs.
        let hi = (h1 & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let lo = (h2 & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        uuidHex = Self.hex(hi) + Self.hex(lo)
    }

    /// The history's entries for one notification: one, or two for a retried one.
    static func listings(type: String, row: AppleTruthRow, index: Int, at eventMs: Int64,
                         refund: SimRefund?) -> [SimNotification] {
        let first = SimNotification(type: type, row: row, index: index, at: eventMs, refund: refund)
        guard first.retried else { return [first] }
        var again = first
        again.listedMs = first.sentMs + retryDelayMs
        return [first, again]
    }

    /// A listing sent at exactly `ms` (its signedDate): a consumption request or its outcome.
    static func listings(type: String, row: AppleTruthRow, index: Int, exactly ms: Int64) -> [SimNotification] {
        var first = SimNotification(type: type, row: row, index: index, at: ms, refund: nil)
        first.sentMs = ms
        first.listedMs = ms
        guard first.retried else { return [first] }
        var again = first
        again.listedMs = ms + retryDelayMs
        return [first, again]
    }

    /// 16 lower-case hex digits.
    package static func hex(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }
}

/// The checked body of a notification history request.
struct NotificationQuery {
    var start: Int64
    var end: Int64
    var type: String?
    var subtype: String?
    var transactionID: String?
    var onlyFailures = false

    static let types: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW",
        "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "METADATA_UPDATE", "MIGRATION", "OFFER_REDEEMED",
        "ONE_TIME_CHARGE", "PRICE_CHANGE", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "RESCIND_CONSENT", "REVOKE", "SUBSCRIBED", "TEST",
    ]
    static let subtypes: Set<String> = [
        "INITIAL_BUY", "RESUBSCRIBE", "DOWNGRADE", "UPGRADE", "AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED", "VOLUNTARY",
        "BILLING_RETRY", "PRICE_INCREASE", "GRACE_PERIOD", "PENDING", "ACCEPTED", "BILLING_RECOVERY", "PRODUCT_NOT_FOR_SALE",
        "SUMMARY", "FAILURE", "UNREPORTED", "CREATED", "ACTIVE_TOKEN_REMINDER",
    ]

    /// The body's query, or the 400 Apple gives for it. `earliest`: the oldest start allowed.
    static func parse(_ body: [UInt8], earliest: Int64) -> Result<NotificationQuery, APIAnswer> {
        guard let doc = MiniJSON.parse(body), case .object = doc else { return .failure(.error(400, 4_000_000, "Bad request.")) }
        guard let start = doc["startDate"]?.int, start >= 0 else { return .failure(.error(400, 4_000_015, "Invalid start date.")) }
        guard let end = doc["endDate"]?.int, end >= 0 else { return .failure(.error(400, 4_000_016, "Invalid end date.")) }
        guard start < end else { return .failure(.error(400, 4_000_013, "Start date after end date.")) }
        guard start >= earliest else { return .failure(.error(400, 4_000_012, "Start date too far in past.")) }
        var q = NotificationQuery(start: start, end: end)
        let invalidType = APIAnswer.error(400, 4_000_018, "Invalid notification type.")
        if let t = doc["notificationType"] {
            guard let s = t.string, types.contains(s) else { return .failure(invalidType) }
            q.type = s
        }
        if let t = doc["notificationSubtype"] {
            guard let s = t.string, subtypes.contains(s), let type = q.type, type != "ONE_TIME_CHARGE", type != "REFUND" else {
                return .failure(invalidType)
            }
            q.subtype = s
        }
        if let t = doc["transactionId"] {
            guard let s = t.string, TransactionIDForm.isWellFormed(Substring(s)) else { return .failure(.invalidTransactionID) }
            guard q.type == nil else { return .failure(.error(400, 4_000_019, "Multiple filters supplied.")) }
            q.transactionID = s
        }
        if let f = doc["onlyFailures"] {
            guard let b = f.bool else { return .failure(.error(400, 4_000_000, "Bad request.")) }
            q.onlyFailures = b
        }
        return .success(q)
    }

    /// Binds a pagination token to this request and environment.
    func hash(_ env: AppStoreEnvironment) -> String {
        let text = "\(start)|\(end)|\(type ?? "")|\(subtype ?? "")|\(transactionID ?? "")|\(onlyFailures)|\(env.rawValue)"
        return SimNotification.hex(SimHash.combine(SimHash.fnv(text), 0x70CE))
    }
}

extension ServerAPIService {
    /// Every notification of one app's transactions, oldest first: each app has its own history
    /// (the lists are rebuilt when the refund list changes).
    func notifications(_ refunds: RefundView, bundle: String) -> [SimNotification] {
        if let cached = lock.locked({ notificationCache }), cached.version == refunds.version {
            return cached.lists[bundle] ?? []
        }
        var lists: [String: [SimNotification]] = [:]
        // A purchase the shop never saw (`notifications` none) had no notification at all.
        for (i, row) in truth.rows.enumerated() where row.notified {
            var list: [SimNotification] = []
            if row.productType != .autoRenewable {
                list += SimNotification.listings(type: "ONE_TIME_CHARGE", row: row, index: i, at: row.purchaseDateMs,
                                                 refund: nil)
            }
            if let refund = refunds.baseRefund(row) {
                list += SimNotification.listings(type: refund.type == "FAMILY_REVOKE" ? "REVOKE" : "REFUND", row: row,
                                                 index: i, at: refund.cancellationDateMs, refund: refund)
                if let back = refund.reversedMs {
                    list += SimNotification.listings(type: "REFUND_REVERSED", row: row, index: i, at: back, refund: nil)
                }
            }
            if let request = row.consumptionRequest {
                list += SimNotification.listings(type: "CONSUMPTION_REQUEST", row: row, index: i, exactly: request.signedDateMs)
                if refunds.baseRefund(row) == nil {
                    list += SimNotification.listings(
                        type: SimNotification.outcomeType, row: row, index: i,
                        exactly: ConsumptionOutcomeModel.outcomeMs(transactionID: row.transactionID, request: request))
                }
            }
            if !list.isEmpty { lists[row.bundleID, default: []] += list }
        }
        for bundle in Array(lists.keys) { lists[bundle]!.sort { $0.comesBefore($1.listedMs, $1.uuidHex) } }
        lock.locked { notificationCache = (refunds.version, lists) }
        return lists[bundle] ?? []
    }

    func notificationHistory(_ request: APIRequest, refunds: RefundView, nowMs: Int64) -> APIAnswer {
        let env = request.environment
        let days: Int64 = env == .production ? 180 : 30
        let query: NotificationQuery
        switch NotificationQuery.parse(request.body, earliest: nowMs - days * 86_400_000) {
        case .failure(let answer): return answer
        case .success(let q): query = q
        }
        let bundle = request.bundle
        let hash = query.hash(env)
        var after: (Int64, String)?
        let tokens = request.values("paginationToken")
        if !tokens.isEmpty {
            let parts = tokens[0].split(separator: "_", omittingEmptySubsequences: false)
            guard tokens.count == 1, parts.count == 3, let ms = Int64(parts[0]), parts[1].utf8.count == 32,
                  parts[1].utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }), parts[2] == hash else {
                return .error(400, 4_000_014, "Invalid pagination token.")
            }
            after = (ms, String(parts[1]))
        }
        var customer: String?
        if let tid = query.transactionID {
            guard let i = truth.row(forAnyID: tid, environment: env, bundle: bundle) else {
                return .json(.object([("hasMore", .bool(false)), ("notificationHistory", .array([]))]))
            }
            customer = truth.rows[i].customer
        }
        let list = notifications(refunds, bundle: bundle)
        // The first notification sent at or after the start (or after the token's), by bisection.
        var lo = 0, hi = list.count
        while lo < hi {
            let mid = (lo + hi) / 2
            let before = after.map { list[mid].comesBefore($0.0, $0.1) || (list[mid].listedMs == $0.0 && list[mid].uuidHex == $0.1) }
                ?? false
            if before || list[mid].listedMs < query.start { lo = mid + 1 } else { hi = mid }
        }
        var page: [SimNotification] = []
        var hasMore = false
        var k = lo
        while k < list.count, list[k].listedMs < query.end {
            var n = list[k]
            k += 1
            let row = truth.rows[n.row]
            guard row.environment == env, row.bundleID == bundle else { continue }
            if n.type == SimNotification.outcomeType, let request = row.consumptionRequest {
                n.type = consumption.decide(row, request: request).rawValue
                if n.type == SimConsumptionOutcome.refund.rawValue { n.refund = consumption.outcomeRefunds[row.transactionID] }
            }
            guard query.type == nil || query.type == n.type,
                  query.subtype == nil, customer == nil || customer == row.customer,
                  !query.onlyFailures || n.undelivered else { continue }
            if page.count == Self.pageSize {
                hasMore = true
                break
            }
            page.append(n)
        }
        var members: [(String, JSONValue)] = []
        if hasMore, let last = page.last {
            members.append(("paginationToken", .string("\(last.listedMs)_\(last.uuidHex)_\(hash)")))
        }
        members.append(("hasMore", .bool(hasMore)))
        members.append(("notificationHistory", .array(page.map { item($0) })))
        return .json(.object(members))
    }

    /// One history item: the signed notification and its send attempts.
    private func item(_ n: SimNotification) -> JSONValue {
        let row = truth.rows[n.row]
        let transaction = config.pki.signTransaction(row.payload(signedDate: n.sentMs, refund: n.refund))
        var data: [(String, JSONValue)] = []
        if row.environment == .production { data.append(("appAppleId", .int(config.appAppleID(of: row.bundleID)))) }
        data += [("bundleId", .string(row.bundleID)), ("bundleVersion", .string("1")),
                 ("environment", .string(row.appleEnvironment)), ("signedTransactionInfo", .string(transaction))]
        if n.type == "CONSUMPTION_REQUEST", let request = row.consumptionRequest {
            data.append(("consumptionRequestReason", .string(request.reason)))
        }
        let payload: JSONValue = .object([
            ("notificationType", .string(n.type)), ("notificationUUID", .string(n.uuid)), ("data", .object(data)),
            ("version", .string("2.0")), ("signedDate", .int(n.sentMs)),
        ])
        func attempt(_ ms: Int64, _ result: String) -> JSONValue {
            .object([("attemptDate", .int(ms)), ("sendAttemptResult", .string(result))])
        }
        let retry = n.sentMs + SimNotification.retryDelayMs
        let attempts: [JSONValue] = n.undelivered ? [attempt(n.sentMs, "TIMED_OUT"), attempt(retry, "NO_RESPONSE")]
            : n.retried ? [attempt(n.sentMs, "TIMED_OUT"), attempt(retry, "SUCCESS")]
            : [attempt(n.sentMs, "SUCCESS")]
        return .object([("signedPayload", .string(config.pki.sign(payload: payload.bytes))),
                        ("sendAttempts", .array(attempts))])
    }
}
