// Google Play on loopback, without the socket: a request in, Google's answer out. Every API call
// goes through the gate in Google's order: the route, the bearer token `/token` issued (401) and
// its scope, the package's rights (403), the quotas (429), a fault on demand, then the method's
// answer. Pub/Sub's pull and acknowledge (`/v1/projects/…`, served when a subscription is set)
// pass the same gate but for the package and the Play quotas. State (tokens, quota windows, fault
// rules, leases, refund reviews, the calls) sits behind one lock: the server calls `answer` from
// several event loops.

import PlayStore
import Synchronization

/// One call the simulator answered, for the tests.
public struct PlayCall: Sendable, Equatable {
    /// Unix ms when it was decided (the config's clock).
    public var timeMs: Int64
    /// nil: a path under `/androidpublisher/` or `/v1/projects/` the simulator does not serve.
    public var endpoint: PlayEndpoint?
    /// The package in the path (nil for `/token` and Pub/Sub).
    public var packageName: String?
    /// The purchase token, the order ids, the page token asked for, or the order reviewed (empty
    /// for Pub/Sub).
    public var ids: [String]
    /// The HTTP status sent.
    public var status: Int
    /// Why: `ok`, `401:expired token`, `429:quota Orders`, `fault:503`, `400:startTime is too old`…
    public var note: String
}

/// Google Play's simulated token endpoint, Play Developer API and Pub/Sub subscription. Thread-safe.
public final class PlayService: Sendable {
    private let index: PlayIndex
    private let clock: @Sendable () -> Int64
    private let state: Mutex<PlayState>

    /// A simulator answering from `config` (the truth indexed once).
    public init(config: PlaySimulatorConfig) {
        index = PlayIndex(config.truth)
        clock = config.now
        state = Mutex(PlayState(config: config))
    }

    /// Google's answer to `request`; nil when the path is not one of Google's (`/token`, everything
    /// under `/androidpublisher/` and under `/v1/projects/`), so that the server routes it elsewhere.
    public func answer(_ request: PlayRequest) -> PlayAnswer? {
        guard let route = PlayRoute(path: request.path) else { return nil }
        return state.withLock { state in
            let now = clock()
            let (answer, note) = state.decide(route, request, index: index, now: now)
            state.record(route, request, answer: answer, note: note, now: now)
            return answer
        }
    }

    /// Every call so far, in order (empty when `recordCalls` is off).
    public var calls: [PlayCall] { state.withLock { $0.calls } }
    /// The counts a benchmark reads: calls per endpoint and minute, the busiest 60 s, the 429s.
    public var stats: PlayStats { state.withLock { $0.counters.summary } }
    /// Replaces the fault plan (its `next` rules start afresh).
    public func setFaults(_ plan: PlayFaultPlan) { state.withLock { $0.faults = PlayFaultState(plan) } }
    /// Turns the refusal of every assertion on or off.
    public func setRefuseAssertions(_ refuse: Bool) { state.withLock { $0.config.refuseAssertions = refuse } }
    /// Replaces the tokens answered 410.
    public func setGoneTokens(_ tokens: Set<String>) { state.withLock { $0.config.goneTokens = tokens } }
    /// What the Pub/Sub subscription has delivered and had acknowledged.
    public var pubsub: PlayPubSubSummary { state.withLock { $0.pubsubState.summary } }
    /// The first answer to each pending refund, in the order received, with its ignored repeats.
    public var refundReviews: [PlayRefundReview] { state.withLock { $0.refundReviews } }
}

/// Where a request goes.
enum PlayRoute: Equatable {
    case token
    case productPurchase(package: String, token: String)
    case batchGetOrders(package: String)
    case voidedPurchases(package: String)
    case reviewRefund(package: String, orderID: String)
    /// `/v1/{subscription}:pull` or `:acknowledge`, the subscription's full name.
    case pubsub(subscription: String, endpoint: PlayEndpoint)
    /// Under `/androidpublisher/` or `/v1/projects/` but not served: 404.
    case unknown

    static let prefix = "/androidpublisher/v3/applications/"
    static let pubsubPrefix = "/v1/projects/"

    init?(path: String) {
        if path == "/token" {
            self = .token
            return
        }
        if path.hasPrefix(Self.pubsubPrefix) {
            self = Self.pubsub(path)
            return
        }
        guard path.hasPrefix("/androidpublisher/") else { return nil }
        guard path.hasPrefix(Self.prefix) else {
            self = .unknown
            return
        }
        let parts = path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false).map(
            String.init)
        switch parts.count {
        case 5 where parts[1] == "purchases" && parts[2] == "productsv2" && parts[3] == "tokens":
            self = .productPurchase(package: parts[0], token: parts[4])
        case 2 where parts[1] == "orders:batchGet": self = .batchGetOrders(package: parts[0])
        case 3 where parts[1] == "purchases" && parts[2] == "voidedpurchases":
            self = .voidedPurchases(package: parts[0])
        case 3 where parts[1] == "orders" && parts[2].hasSuffix(":reviewrefund") && parts[2].count > 13:
            self = .reviewRefund(package: parts[0], orderID: String(parts[2].dropLast(13)))
        default: self = .unknown
        }
    }

    /// `/v1/projects/{project}/subscriptions/{id}:{pull|acknowledge}`.
    private static func pubsub(_ path: String) -> PlayRoute {
        let name = path.dropFirst(4)
        guard let colon = name.lastIndex(of: ":") else { return .unknown }
        let subscription = String(name[..<colon])
        let parts = subscription.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[2] == "subscriptions", !parts[1].isEmpty, !parts[3].isEmpty else {
            return .unknown
        }
        switch name[name.index(after: colon)...] {
        case "pull": return .pubsub(subscription: subscription, endpoint: .pubsubPull)
        case "acknowledge": return .pubsub(subscription: subscription, endpoint: .pubsubAcknowledge)
        default: return .unknown
        }
    }

    var endpoint: PlayEndpoint? {
        switch self {
        case .token: return .token
        case .productPurchase: return .productPurchase
        case .batchGetOrders: return .batchGetOrders
        case .voidedPurchases: return .voidedPurchases
        case .reviewRefund: return .reviewRefund
        case .pubsub(_, let endpoint): return endpoint
        case .unknown: return nil
        }
    }

    var package: String? {
        switch self {
        case .productPurchase(let p, _), .batchGetOrders(let p), .voidedPurchases(let p), .reviewRefund(let p, _):
            return p
        case .token, .pubsub, .unknown: return nil
        }
    }
}

/// The truth, indexed once.
struct PlayIndex: Sendable {
    /// By purchase token.
    let purchases: [String: PlayTruth.Purchase]
    /// By order id.
    let orders: [String: PlayTruth.Purchase]
    /// By package, oldest voided first.
    let voided: [String: [PlayTruth.Voided]]
    /// The pending refunds the notifications announce, by pending refund token (the earliest
    /// announcement of each).
    let pendingRefunds: [String: (packageName: String, orderID: String, eventTimeMs: Int64)]
    let packages: Set<String>

    init(_ truth: PlayTruth) {
        purchases = Dictionary(truth.purchases.map { ($0.purchaseToken, $0) }, uniquingKeysWith: { a, _ in a })
        orders = Dictionary(
            truth.purchases.compactMap { p in p.orderID.map { ($0, p) } }, uniquingKeysWith: { a, _ in a })
        voided = Dictionary(grouping: truth.voided, by: \.packageName).mapValues { list in
            list.enumerated().sorted { a, b in
                (a.element.voidedTimeMs, a.offset) < (b.element.voidedTimeMs, b.offset)
            }.map(\.element)
        }
        var refunds: [String: (packageName: String, orderID: String, eventTimeMs: Int64)] = [:]
        for note in truth.notifications {
            guard case .pendingRefundReview(let token, let order, _, _) = note.kind else { continue }
            if let known = refunds[token], known.eventTimeMs <= note.eventTimeMs { continue }
            refunds[token] = (note.packageName, order, note.eventTimeMs)
        }
        pendingRefunds = refunds
        packages = Set(truth.packages)
    }
}

/// Everything that changes, behind the service's lock.
struct PlayState {
    /// An answer and the call's note.
    typealias Decided = (answer: PlayAnswer, note: String)

    var config: PlaySimulatorConfig
    var faults: PlayFaultState
    /// Access tokens issued: expiry (Unix ms) and scopes.
    var tokens: [String: (expiresMs: Int64, scopes: [String])] = [:]
    var quotas = PlayQuotas()
    var counters = PlayCounters()
    var calls: [PlayCall] = []
    var pubsubState: PlayPubSub
    /// First answers to pending refunds, and where each token's is.
    var refundReviews: [PlayRefundReview] = []
    var refundReviewIndex: [String: Int] = [:]

    init(config: PlaySimulatorConfig) {
        self.config = config
        faults = PlayFaultState(config.faults)
        pubsubState = PlayPubSub(config.truth.notifications)
    }

    /// The answer and the call's note.
    mutating func decide(_ route: PlayRoute, _ request: PlayRequest, index: PlayIndex, now: Int64) -> Decided {
        guard let endpoint = route.endpoint else {
            return (GoogleError.notFound("Method not found."), "404:not served")
        }
        if case .pubsub(let subscription, _) = route, config.subscription == nil {
            let id = subscription.split(separator: "/").last.map(String.init) ?? subscription
            return (GoogleError.resourceNotFound(id), "404:Pub/Sub not served")
        }
        guard request.method == endpoint.method else {
            return (GoogleError.notFound("Method not found."), "404:method \(request.method)")
        }
        let number = counters.number(endpoint)
        if let scope = endpoint.scope {
            switch authenticate(request, scope: scope, now: now) {
            case .none: break
            case .some(.unauthenticated(let why)): return (GoogleError.unauthenticated, "401:" + why)
            case .some(.scope):
                // Google's APIs refuse a token without the scope 403 "insufficient authentication
                // scopes", as reviewrefund and Pub/Sub do here; the three reads keep their 401, which
                // PlayStore's transport and the tests of the reads already expect.
                if endpoint.method == "GET" { return (GoogleError.unauthenticated, "401:no androidpublisher scope") }
                return (GoogleError.insufficientScopes, "403:insufficient scopes")
            }
        }
        if let package = route.package {
            guard (config.allowedPackages ?? index.packages).contains(package) else {
                return (GoogleError.permissionDenied, "403:package not allowed")
            }
            if let bucket = endpoint.bucket,
                !quotas.admit(bucket, limit: config.quotaPerMinute, windowMs: 60_000, now: now)
            {
                return (GoogleError.rateLimited, "429:quota " + bucket)
            }
            if endpoint == .voidedPurchases, !quotas.admitVoided(package: package, config: config, now: now) {
                return (GoogleError.rateLimited, "429:quota voided purchases")
            }
        }
        let fault = faults.draw(endpoint, number: number)
        // A Google error on demand refuses the call before the method runs (no lease taken, no
        // acknowledgement, no review kept); a timeout or a garbage body comes after it ran.
        if let fault, !fault.reachesMethod {
            return (fault.answer(instead: GoogleError.internalError, endpoint: endpoint), "fault:" + fault.rawValue)
        }
        let (real, note) = respond(route, request, index: index, now: now)
        guard let fault else { return (real, note) }
        return (fault.answer(instead: real, endpoint: endpoint), "fault:" + fault.rawValue)
    }

    private mutating func respond(_ route: PlayRoute, _ request: PlayRequest, index: PlayIndex, now: Int64) -> Decided {
        switch route {
        case .token: return token(request, now: now)
        case .productPurchase(let package, let token):
            if config.goneTokens.contains(token) { return (GoogleError.tokenGone, "410:gone") }
            guard let p = index.purchases[token], p.packageName == package else {
                return (GoogleError.tokenNotFound, "404:unknown token")
            }
            return (.json(200, PlayBodies.productPurchase(p)), "ok")
        case .batchGetOrders(let package):
            guard let query = FormData.parse(request.query) else {
                return (GoogleError.invalidArgument("Invalid query."), "400:query")
            }
            let ids = query.filter { $0.0 == "orderIds" }.map(\.1)
            guard (1...1000).contains(ids.count), Set(ids).count == ids.count else {
                return (GoogleError.invalidArgument("orderIds must name 1 to 1000 distinct orders."), "400:order ids")
            }
            var found: [PlayTruth.Purchase] = []
            for id in ids {
                // "If any order ID is not found or does not match the provided package, the entire
                // request will fail with an error."
                guard let p = index.orders[id], p.packageName == package else {
                    return (GoogleError.notFound("The order was not found."), "404:unknown order")
                }
                found.append(p)
            }
            return (.json(200, PlayBodies.orders(found)), "ok")
        case .voidedPurchases(let package):
            return voidedList(package: package, query: request.query, index: index, now: now)
        case .reviewRefund(let package, let orderID):
            return reviewRefund(package: package, orderID: orderID, request, index: index, now: now)
        case .pubsub(let subscription, let endpoint):
            return pubsub(endpoint, subscription: subscription, request, now: now)
        case .unknown:
            return (GoogleError.notFound("Method not found."), "404:not served")
        }
    }

    /// Why a bearer token is refused.
    enum Refusal: Equatable {
        /// No token, or not one `/token` issued, or expired: why.
        case unauthenticated(String)
        /// A good token without the method's scope.
        case scope
    }

    /// Why the call's bearer token is refused for a method needing `scope`, or nil.
    private func authenticate(_ request: PlayRequest, scope: String, now: Int64) -> Refusal? {
        guard let authorization = request.header("authorization") else {
            return .unauthenticated("no Authorization header")
        }
        guard authorization.hasPrefix("Bearer ") else { return .unauthenticated("not a bearer token") }
        guard let token = tokens[String(authorization.dropFirst(7))] else { return .unauthenticated("unknown token") }
        guard now < token.expiresMs else { return .unauthenticated("expired token") }
        guard token.scopes.contains(scope) else { return .scope }
        return nil
    }

    mutating func record(_ route: PlayRoute, _ request: PlayRequest, answer: PlayAnswer, note: String, now: Int64) {
        counters.count(route.endpoint, status: answer.status, now: now)
        guard config.recordCalls else { return }
        var ids: [String] = []
        switch route {
        case .productPurchase(_, let token): ids = [token]
        case .batchGetOrders, .voidedPurchases:
            let key = route.endpoint == .batchGetOrders ? "orderIds" : "token"
            ids = (FormData.parse(request.query) ?? []).filter { $0.0 == key }.map(\.1)
        case .reviewRefund(_, let orderID): ids = [orderID]
        case .token, .pubsub, .unknown: break
        }
        calls.append(
            PlayCall(
                timeMs: now, endpoint: route.endpoint, packageName: route.package, ids: ids, status: answer.status,
                note: note))
    }
}
