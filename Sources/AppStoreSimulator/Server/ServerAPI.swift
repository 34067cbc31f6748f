// The simulated App Store Server API, as Apple documents it, served beside
// verifyReceipt under the same prefixes: `/production/inApps/…` and `/sandbox/inApps/…`.
//
//   GET  /inApps/v1/transactions/{transactionId}     transaction_info
//   GET  /inApps/v2/history/{transactionId}          transaction_history  (History.swift)
//   GET  /inApps/v2/refund/lookup/{transactionId}    refund_history       (History.swift)
//   POST /inApps/v1/notifications/history            notification_history (Notifications.swift)
//   GET  /inApps/v1/lookup/{orderId}                 order_lookup (production only)
//   PUT  /inApps/v2/transactions/consumption/{transactionId}
//                                                     consumption (Consumption.swift)
//
// Every request: the route, the bearer JWT (401), the endpoint's rate (429 with Retry-After in
// ms), a seeded fault, then the answer from the Apple truth, with every transaction signed by
// the test PKI at the time of the answer.
//
// Several apps: the simulator serves every app of `APICredentials.bundleIDs`, and
// each answer is scoped to the app of the request's token (its `bid`), as Apple's are: another
// app's transaction is one Apple does not know here (404 4040010 from Get Transaction Info, the
// histories, Send Consumption Information; status 1 from Look Up Order ID), the notification
// history lists that app's notifications only, and the rate windows are counted per app.

import Foundation
import Reconciliation

/// How the Server API is served.
public struct ServerAPIConfig: Sendable {
    /// The keys, key ids, issuer id and apps a bearer token must match.
    public var credentials: APICredentials
    /// What Apple knows.
    public var truth: AppleTruth
    /// Signs every transaction and notification.
    public var pki: TestPKI
    /// Production requests per second per endpoint (0 = unlimited); the sandbox gets a tenth.
    /// Missing endpoints get Apple's numbers.
    public var rates: [SimAPIEndpoint: Int]
    /// `appAppleId` of the first app's production answers and notifications; the n-th app served
    /// (0-based) has `appAppleID + n`.
    public var appAppleID: Int64
    /// Send Consumption Information's production requests per second (0 = unlimited; the sandbox
    /// gets a tenth, at least 1); nil: Apple's 50.
    public var consumptionRate: Int?
    /// Appends one JSON line per accepted consumption answer (`SimConsumptionAnswer.jsonLine`).
    public var consumptionLogPath: String?
    /// `iap-sim serve --stray-401 N`: the N-th request (1-based) that reaches the token check,
    /// counted over every endpoint, app and environment since the start, gets one 401 although
    /// its token is good (Apple's occasional stray 401); the next request with the same token is
    /// answered. nil: never.
    public var stray401: Int?

    public init(credentials: APICredentials, truth: AppleTruth, pki: TestPKI, rates: [SimAPIEndpoint: Int] = [:],
                appAppleID: Int64 = 1_258_428_153, consumptionRate: Int? = nil, consumptionLogPath: String? = nil,
                stray401: Int? = nil) {
        self.credentials = credentials
        self.truth = truth
        self.pki = pki
        self.rates = rates
        self.appAppleID = appAppleID
        self.consumptionRate = consumptionRate
        self.consumptionLogPath = consumptionLogPath
        self.stray401 = stray401
    }

    /// `appAppleId` of an app served.
    func appAppleID(of bundle: String) -> Int64 {
        appAppleID + Int64(credentials.bundleIDs.firstIndex(of: bundle) ?? 0)
    }
}

/// One Server API request, as the HTTP layer hands it over.
struct APIRequest {
    var method: String
    var environment: AppStoreEnvironment
    /// The path after the environment prefix, without the query (`/inApps/v1/…`).
    var path: Substring
    /// Percent-decoded query parameters in order (repeated names repeat).
    var query: [(String, String)]
    var authorization: [String]
    var body: [UInt8]
    /// The app the request's token is for (its `bid`), set once the token is checked: every answer
    /// is scoped to it.
    var bundle = ""

    func values(_ name: String) -> [String] { query.filter { $0.0 == name }.map(\.1) }

    /// Splits `?a=1&b=2`; nil when a value is not valid percent-encoding.
    static func parseQuery(_ text: Substring) -> [(String, String)]? {
        var out: [(String, String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let k = String(kv[0]).removingPercentEncoding,
                  let v = (kv.count > 1 ? String(kv[1]) : "").removingPercentEncoding else { return nil }
            out.append((k, v))
        }
        return out
    }
}

/// A Server API answer (status, extra headers, body).
struct APIAnswer: Error {
    var status: Int
    var contentType = "application/json"
    var headers: [(String, String)] = []
    var body: [UInt8]
    /// The call log's outcome: `200`, `404:4040010`, `401:kid`…
    var outcome: String

    static func json(_ value: JSONValue) -> APIAnswer { APIAnswer(status: 200, body: value.bytes, outcome: "200") }

    /// Apple's error body `{"errorCode":N,"errorMessage":"…"}`.
    static func error(_ status: Int, _ code: Int, _ message: String) -> APIAnswer {
        APIAnswer(status: status,
                  body: JSONValue.object([("errorCode", .int(Int64(code))), ("errorMessage", .string(message))]).bytes,
                  outcome: "\(status):\(code)")
    }

    static func text(_ status: Int, _ text: String, outcome: String? = nil) -> APIAnswer {
        APIAnswer(status: status, contentType: "text/plain", body: Array(text.utf8), outcome: outcome ?? String(status))
    }

    static let transactionNotFound = error(404, 4_040_010, "Transaction id not found.")
    static let invalidTransactionID = error(400, 4_000_006, "Invalid transaction id.")
    static let invalidRevision = error(400, 4_000_005, "Invalid request revision.")
}

/// The Server API's state: rate windows, fault counters, the notification list, the consumption
/// answers and the outcomes decided.
final class ServerAPIService: @unchecked Sendable {
    let config: ServerAPIConfig
    let limiter: RateLimiter
    let lock = NSLock()
    private var faultCounts: [String: Int] = [:]
    /// Requests that reached the token check since the start (`ServerAPIConfig.stray401`).
    private var requestsChecked = 0
    /// Each app's notifications by refund-list version (rebuilt when the refund list changes).
    var notificationCache: (version: Int, lists: [String: [SimNotification]])?
    /// What Send Consumption Information was told, and the outcomes (ConsumptionOutcomes.swift).
    let consumption: ConsumptionLedger

    init(config: ServerAPIConfig) throws {
        self.config = config
        limiter = RateLimiter(production: config.rates, consumption: config.consumptionRate)
        consumption = try ConsumptionLedger(logPath: config.consumptionLogPath)
    }

    var truth: AppleTruth { config.truth }

    func resetCounts() { lock.locked { faultCounts = [:] } }

    /// The number (1-based) of a request reaching the token check.
    func nextRequestNumber() -> Int {
        lock.locked {
            requestsChecked += 1
            return requestsChecked
        }
    }

    /// The n-th call (0-based) for a fault key.
    func nextCallIndex(_ key: String) -> Int {
        lock.locked {
            let n = faultCounts[key] ?? 0
            faultCounts[key] = n + 1
            return n
        }
    }

    /// The endpoint and the id a path names; nil for a path the API does not have.
    static func route(_ path: Substring) -> (SimRoute, Substring?)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "inApps", version, …
        guard parts.count >= 4, parts[0].isEmpty, parts[1] == "inApps" else { return nil }
        switch (parts[2], parts[3], parts.count) {
        case ("v1", "transactions", 5): return (.api(.transactionInfo), parts[4])
        case ("v2", "history", 5): return (.api(.transactionHistory), parts[4])
        case ("v2", "refund", 6) where parts[4] == "lookup": return (.api(.refundHistory), parts[5])
        case ("v1", "notifications", 5) where parts[4] == "history": return (.api(.notificationHistory), nil)
        case ("v1", "lookup", 5): return (.api(.orderLookup), parts[4])
        case ("v2", "transactions", 6) where parts[4] == "consumption": return (.consumption, parts[5])
        default: return nil
        }
    }

    /// The answer to an authorized, admitted, unfaulted request.
    func answer(_ route: SimRoute, id: Substring?, _ request: APIRequest, refunds: RefundView,
                nowMs: Int64) -> APIAnswer {
        let endpoint: SimAPIEndpoint
        switch route {
        case .consumption: return sendConsumption(id ?? "", request, nowMs: nowMs)
        case .api(let e): endpoint = e
        }
        switch endpoint {
        case .transactionInfo: return transactionInfo(id ?? "", request, refunds: refunds, nowMs: nowMs)
        case .transactionHistory: return transactionHistory(id ?? "", request, refunds: refunds, nowMs: nowMs)
        case .refundHistory: return refundHistory(id ?? "", request, refunds: refunds, nowMs: nowMs)
        case .notificationHistory: return notificationHistory(request, refunds: refunds, nowMs: nowMs)
        case .orderLookup: return orderLookup(id ?? "", request, refunds: refunds, nowMs: nowMs)
        }
    }

    // MARK: Get Transaction Info

    private func transactionInfo(_ id: Substring, _ request: APIRequest, refunds: RefundView, nowMs: Int64) -> APIAnswer {
        guard TransactionIDForm.isWellFormed(id) else { return .invalidTransactionID }
        guard let i = truth.row(forAnyID: String(id), environment: request.environment, bundle: request.bundle) else {
            return .transactionNotFound
        }
        return .json(.object([("signedTransactionInfo", .string(signed(i, refunds: refunds, nowMs: nowMs)))]))
    }

    // MARK: Look Up Order ID

    private func orderLookup(_ id: Substring, _ request: APIRequest, refunds: RefundView, nowMs: Int64) -> APIAnswer {
        let env = request.environment
        guard env == .production else { return .text(404, "Not Found") }
        guard AppleOrderID.isWellFormed(id) else { return .error(400, 4_000_000, "Bad request.") }
        let found = (truth.byOrder[String(id)] ?? []).filter {
            truth.rows[$0].environment == env && truth.rows[$0].bundleID == request.bundle
        }
        guard !found.isEmpty else { return .json(.object([("status", .int(1))])) }
        return .json(.object([("status", .int(0)),
                              ("signedTransactions", .array(found.map { .string(signed($0, refunds: refunds, nowMs: nowMs)) }))]))
    }

    // MARK: Signing

    /// Row `i` as a signed transaction (JWS, x5c leaf/intermediate/root) signed at `nowMs`.
    func signed(_ i: Int, refunds: RefundView, nowMs: Int64) -> String {
        let row = truth.rows[i]
        return config.pki.signTransaction(row.payload(signedDate: nowMs, refund: refunds.refund(row)))
    }
}

/// The refunds Apple shows: the refund list being served (`--refunds`, `Simulator.setRefunds`)
/// first, else the truth's own, else a refund a consumption request's outcome granted
/// (ConsumptionOutcomes.swift).
struct RefundView {
    var list: [String: SimRefund]
    var version: Int
    /// Refunds granted by consumption outcomes decided so far, by transaction id.
    var outcomes: [String: SimRefund] = [:]

    /// The revocation the transaction shows now: none once its refund was reversed (the truth's
    /// reversal is in its past).
    func refund(_ row: AppleTruthRow) -> SimRefund? {
        guard let r = everRefund(row), r.reversedMs == nil else { return nil }
        return r
    }

    /// Its refund, reversed or not: what the notification history tells the story of.
    func everRefund(_ row: AppleTruthRow) -> SimRefund? { baseRefund(row) ?? outcomes[row.transactionID] }

    /// The refund list's or the truth's refund: the ones the notification list is built from
    /// (outcomes have their own entries there).
    func baseRefund(_ row: AppleTruthRow) -> SimRefund? { list[row.transactionID] ?? row.refund }
}
