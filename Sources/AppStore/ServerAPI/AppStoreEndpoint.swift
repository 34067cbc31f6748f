// Every App Store endpoint the job calls, as data: its method, where it lives, its path, the
// rate budget it counts against and how its 2xx body is read. One transport
// (StoreIO's `AppStoreTransport`) sends them all: a new endpoint is a new row here, never a
// new request loop. No I/O.

import Reconciliation

/// The HTTP methods Apple's endpoints use.
public enum AppStoreMethod: String, Sendable {
    case get = "GET", post = "POST", put = "PUT"
}

/// Which of Apple's services an endpoint belongs to: it says the base URL, the bearer token and
/// how an answer is classified.
public enum AppStoreService: Sendable, Equatable {
    /// The legacy verifyReceipt (contract §3): no token, the shared secret in the body; every
    /// HTTP answer is read by its body's `status`.
    case verifyReceipt
    /// The App Store Server API (contract §3b): an In-App Purchase key's token with a `bid`.
    case serverAPI
    /// The App Store Connect API (sales and finance reports): a team key's token without a
    /// `bid`; its hourly allowance comes back in `X-Rate-Limit`.
    case connect
    /// Not Apple's: Google's Play Developer API, carried by the same transport. A
    /// service account's access token; its answers are classified by PlayStore's `PlayAPI`
    /// (TransportCore's `PlayRows`), never by `AppStoreReply.classify`.
    case googlePlay
    /// Not Apple's either: Google Cloud Pub/Sub, the job's own subscription on Play's notification
    /// topic (the Play service account's token, with the Pub/Sub scope).
    case googlePubSub

    /// Google's (Play or Pub/Sub): classified by PlayStore, signed with the Play service account.
    public var isGoogle: Bool { self == .googlePlay || self == .googlePubSub }
}

/// A rate budget of Apple's: what options and counts call it, and Apple's published production
/// limit in requests per second (the sandbox allows a tenth). The Server API's five endpoints
/// are `ServerAPIEndpoint`s (`--api-rate` names them); the endpoints later issues add have their own.
public struct AppStoreBudget: Hashable, Sendable {
    public let name: String
    public let appleRate: Double
    public init(name: String, appleRate: Double) { (self.name, self.appleRate) = (name, appleRate) }

    /// Send Consumption Information: 50 a second, as Get Transaction Info.
    public static let consumption = AppStoreBudget(name: "consumption", appleRate: 50)
    /// App Store Connect's sales reports: Apple publishes no per-second limit for them, only the
    /// key's allowance over a rolling hour (`X-Rate-Limit`, Apple's example 3,500), which the
    /// budget follows (`RateBudget.report`) and which is the real limit. A night asks at most 365
    /// days (a first night, or after a long gap), about a tenth of that allowance: at one a second
    /// that first night took six minutes; five a second (4 with the 90% share) keeps the step well
    /// inside the time the decide stage runs beside it, without a burst a proxy could mistake.
    public static let salesReports = AppStoreBudget(name: "sales_reports", appleRate: 5)
}

/// One endpoint. `Value` is what its reader makes of a 2xx body.
public struct AppStoreEndpoint<Value>: Sendable {
    /// How options (`--api-rate`), logs and counts name it.
    public let name: String
    public let method: AppStoreMethod
    public let service: AppStoreService
    /// The path after the service's base URL; `{id}` stands for the one id it takes.
    public let pathTemplate: String
    /// The rate budget it counts against (nil: none; verifyReceipt has none).
    public let budget: AppStoreBudget?
    /// How a 2xx body is read; throws for a body that is not what Apple sends (never believed,
    /// retried like a timeout).
    public let reader: @Sendable ([UInt8]) throws(ServerAPIGarbage) -> Value

    public init(name: String, method: AppStoreMethod, service: AppStoreService, pathTemplate: String,
                budget: AppStoreBudget?, reader: @escaping @Sendable ([UInt8]) throws(ServerAPIGarbage) -> Value) {
        (self.name, self.method, self.service, self.pathTemplate, self.budget, self.reader)
            = (name, method, service, pathTemplate, budget, reader)
    }

    /// The request for this endpoint in `environment`: `id` replaces `{id}` (only a path-safe id,
    /// `ServerAPI.isPathSafe`, ever reaches a path: anything else becomes `0`, which Apple refuses),
    /// query values percent-encoded (nil values left out).
    public func request(in environment: AppStoreEnvironment, id: String? = nil, query: [(String, String?)] = [],
                        body: [UInt8] = [], bundleID: String? = nil) -> AppStoreRequest {
        var path = pathTemplate
        if let range = path.range(of: "{id}") {
            path.replaceSubrange(range, with: id.flatMap { ServerAPI.isPathSafe($0) ? $0 : nil } ?? "0")
        }
        var separator = "?"
        for (name, value) in query {
            guard let value else { continue }
            path += separator + ServerAPI.queryEscaped(name) + "=" + ServerAPI.queryEscaped(value)
            separator = "&"
        }
        return AppStoreRequest(name: name, method: method, service: service, environment: environment, path: path,
                               body: body, budget: budget, bundleID: bundleID)
    }
}

/// One request ready to send, whatever its endpoint: what the transport needs and nothing else.
public struct AppStoreRequest: Sendable, Equatable {
    public var name: String
    public var method: AppStoreMethod
    public var service: AppStoreService
    public var environment: AppStoreEnvironment
    /// Appended to the service's base URL in `environment` (verifyReceipt's URL is whole: empty).
    public var path: String
    public var body: [UInt8]
    public var budget: AppStoreBudget?
    /// The app the token's `bid` names (Server API); nil: the key's own app. A Google Play
    /// request: its package.
    public var bundleID: String?

    /// A request ready to send (the endpoints' rows make them; Google Play's are made in TransportCore).
    public init(name: String, method: AppStoreMethod, service: AppStoreService, environment: AppStoreEnvironment, path: String,
                body: [UInt8], budget: AppStoreBudget?, bundleID: String?) {
        (self.name, self.method, self.service, self.environment, self.path) = (name, method, service, environment, path)
        (self.body, self.budget, self.bundleID) = (body, budget, bundleID)
    }
}

/// The endpoints, one row each, as Apple documents them.
public enum AppStoreEndpoints {
    /// verifyReceipt: the body is read with the receipt's context (`VerifyReceipt.classify`),
    /// so the reader hands it over as it came.
    public static let verifyReceipt = AppStoreEndpoint<[UInt8]>(
        name: "verify_receipt", method: .post, service: .verifyReceipt, pathTemplate: "", budget: nil) { $0 }

    /// Get Transaction Info: `{"signedTransactionInfo": "<JWS>"}`.
    public static let transactionInfo = serverAPI(.transactionInfo, .get, "/inApps/v1/transactions/{id}") {
        body throws(ServerAPIGarbage) in try ServerAPI.signedTransactionInfo(body)
    }
    /// Get Transaction History v2, ASCENDING, from a stored `revision` (query `revision`).
    public static let transactionHistory = serverAPI(.transactionHistory, .get, "/inApps/v2/history/{id}") {
        body throws(ServerAPIGarbage) in try ServerAPI.transactionPage(body)
    }
    /// Get Refund History v2 (query `revision`).
    public static let refundHistory = serverAPI(.refundHistory, .get, "/inApps/v2/refund/lookup/{id}") {
        body throws(ServerAPIGarbage) in try ServerAPI.transactionPage(body)
    }
    /// Get Notification History: a JSON body (`ServerAPI.notificationHistoryBody`), the page's
    /// token in the query (`paginationToken`).
    public static let notificationHistory = serverAPI(.notificationHistory, .post, "/inApps/v1/notifications/history") {
        body throws(ServerAPIGarbage) in try ServerAPI.notificationPage(body)
    }
    /// Look Up Order ID (production only).
    public static let orderLookup = serverAPI(.orderLookup, .get, "/inApps/v1/lookup/{id}") {
        body throws(ServerAPIGarbage) in try ServerAPI.orderLookup(body)
    }

    /// A row of the Server API's five: named and budgeted as `--api-rate` names it.
    static func serverAPI<Value>(_ endpoint: ServerAPIEndpoint, _ method: AppStoreMethod, _ pathTemplate: String,
                                 reader: @escaping @Sendable ([UInt8]) throws(ServerAPIGarbage) -> Value) -> AppStoreEndpoint<Value> {
        AppStoreEndpoint(name: endpoint.rawValue, method: method, service: .serverAPI, pathTemplate: pathTemplate,
                         budget: endpoint.budget, reader: reader)
    }

    /// Send Consumption Information v2 (refund defense): a JSON `ConsumptionRequest` body;
    /// Apple answers 202 Accepted with no body to read.
    public static let consumption = AppStoreEndpoint<Void>(
        name: AppStoreBudget.consumption.name, method: .put, service: .serverAPI,
        pathTemplate: "/inApps/v2/transactions/consumption/{id}", budget: .consumption) { _ throws(ServerAPIGarbage) in }

    /// App Store Connect sales reports (a team key): the body is the gzip file as it came; its
    /// reading belongs to the reports that use it. Filters go in the query (`filter[reportType]`…).
    public static let salesReports = AppStoreEndpoint<[UInt8]>(
        name: AppStoreBudget.salesReports.name, method: .get, service: .connect,
        pathTemplate: "/v1/salesReports", budget: .salesReports) { $0 }
}

/// App Store Connect's `X-Rate-Limit: user-hour-lim:3500;user-hour-rem:500;`: the key's
/// allowance over a rolling hour and what is left of it.
public struct HourlyAllowance: Sendable, Equatable {
    public var limit: Int
    public var remaining: Int

    public init(limit: Int, remaining: Int) { (self.limit, self.remaining) = (limit, remaining) }

    /// nil for a header without both numbers (Apple says "actual limits can vary": the names are
    /// matched, their order is not assumed).
    public static func parse(_ header: String) -> HourlyAllowance? {
        var limit: Int?, remaining: Int?
        for part in header.split(separator: ";") {
            let kv = part.split(separator: ":", maxSplits: 1)
            guard kv.count == 2, let n = Int(trimmed(kv[1])), n >= 0 else { continue }
            switch trimmed(kv[0]) {
            case "user-hour-lim": limit = n
            case "user-hour-rem": remaining = n
            default: break
            }
        }
        guard let limit, let remaining, limit > 0 else { return nil }
        return HourlyAllowance(limit: limit, remaining: min(remaining, limit))
    }

    private static func trimmed(_ s: Substring) -> Substring {
        var s = s
        while s.first == " " { s.removeFirst() }
        while s.last == " " { s.removeLast() }
        return s
    }
}

/// What one answer means to the transport, whatever the service: read by the endpoint's reader
/// (`answer`), or one of the classes every service shares.
public enum AppStoreReply: Sendable, Equatable {
    /// A body to read: a 2xx of the Server API or App Store Connect; any HTTP answer of
    /// verifyReceipt (its `status` is in the body).
    case answer(httpStatus: Int, body: [UInt8])
    /// 401: our token was refused. Exit 78.
    case unauthorized
    /// 404 4040010: Apple knows no such transaction in this environment.
    case notFound
    /// Any other 4xx: Apple will not answer this request (its `errorCode` when the body has one).
    case refused(String, errorCode: Int? = nil)
    /// 429: nothing to the endpoint before `untilMs` (UNIX ms; nil: no readable Retry-After).
    case rateLimited(untilMs: Int64?)
    /// Retryable: 5xx, Apple's retryable codes, a transport failure.
    case retry(String)

    /// Classifies an HTTP answer of `service`. `retryAfter` is the `Retry-After` header.
    public static func classify(_ service: AppStoreService, httpStatus: Int, body: [UInt8], retryAfter: String?) -> AppStoreReply {
        if service == .verifyReceipt { return .answer(httpStatus: httpStatus, body: body) }
        switch ServerAPI.classify(httpStatus: httpStatus, body: body, retryAfter: retryAfter) {
        case .ok(let body): return .answer(httpStatus: httpStatus, body: body)
        case .unauthorized: return .unauthorized
        case .transactionNotFound: return .notFound
        case .rateLimited(let until): return .rateLimited(untilMs: until)
        case .retry(let problem): return .retry(problem)
        case .refused(let code, let problem): return .refused(problem, errorCode: code)
        }
    }
}
