// One request to Google's simulator and its answer, as plain values (no socket): the HTTP server
// that carries them (AppStoreSimulator's, through `SimulatorConfig.extraRoutes`) is bridged by the
// caller, so this target depends on no server. Also the endpoints served, and Google's error bodies.

import PlayStore
import StrictJSON

/// A request as the server received it.
public struct PlayRequest: Sendable {
    /// `GET`, `POST`…
    public var method: String
    /// The path without the query.
    public var path: String
    /// The raw query, after `?` (empty when there is none).
    public var query: String
    /// The headers in order, names in lower case.
    public var headers: [(String, String)]
    /// The body as received (at most the server's limit).
    public var body: [UInt8]

    /// A request; the query raw, header names in lower case.
    public init(
        method: String, path: String, query: String = "", headers: [(String, String)] = [], body: [UInt8] = []
    ) {
        (self.method, self.path, self.query, self.headers, self.body) = (method, path, query, headers, body)
    }

    /// The first header of that name (given in lower case).
    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
}

/// What the server sends back.
public struct PlayAnswer: Sendable {
    /// The HTTP status.
    public var status: Int
    /// The Content-Type header.
    public var contentType: String
    /// The body, sent as it is.
    public var body: [UInt8]
    /// Headers added to the answer (Content-Type and Content-Length are the server's).
    public var headers: [(String, String)]

    /// An answer (JSON unless said).
    public init(
        status: Int, contentType: String = "application/json; charset=UTF-8", body: [UInt8],
        headers: [(String, String)] = []
    ) {
        (self.status, self.contentType, self.body, self.headers) = (status, contentType, body, headers)
    }

    /// A JSON answer.
    static func json(_ status: Int, _ body: [UInt8]) -> PlayAnswer { PlayAnswer(status: status, body: body) }
}

/// What the simulator serves: the OAuth token endpoint, four methods of the Play Developer API and
/// Pub/Sub's pull and acknowledge.
public enum PlayEndpoint: String, Sendable, CaseIterable, Hashable {
    /// `POST /token`: an assertion exchanged for an access token.
    case token
    /// `GET …/purchases/productsv2/tokens/{token}`.
    case productPurchase = "productsv2"
    /// `GET …/orders:batchGet?orderIds=…`.
    case batchGetOrders = "orders_batchget"
    /// `GET …/purchases/voidedpurchases`.
    case voidedPurchases = "voidedpurchases"
    /// `POST …/orders/{orderId}:reviewrefund`.
    case reviewRefund = "reviewrefund"
    /// `POST /v1/projects/{project}/subscriptions/{subscription}:pull` (Pub/Sub).
    case pubsubPull = "pubsub_pull"
    /// `POST /v1/projects/{project}/subscriptions/{subscription}:acknowledge` (Pub/Sub).
    case pubsubAcknowledge = "pubsub_acknowledge"

    /// The per-minute quota bucket Google counts it in ("Quotas": 3,000 queries a minute each);
    /// nil: not counted there (the token endpoint; voided purchases have their own quota, and
    /// their bucket is unconfirmed; Pub/Sub is another API).
    public var bucket: String? {
        switch self {
        case .productPurchase: return "One-time Purchases"
        case .batchGetOrders, .reviewRefund: return "Orders"
        case .token, .voidedPurchases, .pubsubPull, .pubsubAcknowledge: return nil
        }
    }

    /// The HTTP method it answers (others: 404).
    var method: String {
        switch self {
        case .productPurchase, .batchGetOrders, .voidedPurchases: return "GET"
        case .token, .reviewRefund, .pubsubPull, .pubsubAcknowledge: return "POST"
        }
    }

    /// The OAuth scope its bearer token needs; nil for the token endpoint.
    var scope: String? {
        switch self {
        case .token: return nil
        case .pubsubPull, .pubsubAcknowledge: return GoogleOAuth.pubsubScope
        case .productPurchase, .batchGetOrders, .voidedPurchases, .reviewRefund:
            return GoogleOAuth.androidPublisherScope
        }
    }
}

/// Google's error bodies (`{"error":{"code","message",…}}`) and the OAuth endpoint's.
enum GoogleError {
    static func body(
        _ code: Int, _ message: String, status: String? = nil, reason: (domain: String, reason: String)? = nil,
        location: String? = nil
    ) -> [UInt8] {
        var w = JSONWriter(capacity: 256)
        w.beginObject()
        w.key("error")
        w.beginObject()
        w.field("code", code)
        w.field("message", message)
        if let reason {
            w.key("errors")
            w.beginArray()
            w.beginObject()
            w.field("message", message)
            w.field("domain", reason.domain)
            w.field("reason", reason.reason)
            if let location {
                w.field("location", location)
                w.field("locationType", "parameter")
            }
            w.endObject()
            w.endArray()
        }
        w.field("status", status)
        w.endObject()
        w.endObject()
        return w.bytes
    }

    static let unauthenticated = PlayAnswer.json(
        401, body(401, "Request had invalid authentication credentials.", status: "UNAUTHENTICATED"))
    static let permissionDenied = PlayAnswer.json(
        403,
        body(
            403, "The current user has insufficient permissions to perform the requested operation.",
            reason: ("androidpublisher", "permissionDenied")))
    static let tokenNotFound = PlayAnswer.json(
        404,
        body(404, "The purchase token was not found.", reason: ("global", "purchaseTokenNotFound"), location: "token"))
    static let tokenGone = PlayAnswer.json(
        410,
        body(
            410, "The purchase token is no longer valid.", reason: ("global", "purchaseTokenNoLongerValid"),
            location: "token"))
    /// A token without the method's scope, as every Google API refuses it.
    static let insufficientScopes = PlayAnswer.json(
        403, body(403, "Request had insufficient authentication scopes.", status: "PERMISSION_DENIED"))
    static let rateLimited = PlayAnswer.json(429, body(429, "Rate limit exceeded", status: "RESOURCE_EXHAUSTED"))
    static let internalError = PlayAnswer.json(500, body(500, "Internal error encountered.", status: "INTERNAL"))
    static let unavailable = PlayAnswer.json(
        503, body(503, "The service is currently unavailable.", status: "UNAVAILABLE"))
    /// A timeout as a proxy in front of Google reports it: HTML, not JSON.
    static let gatewayTimeout = PlayAnswer(
        status: 504, contentType: "text/html; charset=UTF-8",
        body: Array("<html><head><title>504 Gateway Timeout</title></head><body>Gateway Timeout</body></html>".utf8))

    static func notFound(_ message: String) -> PlayAnswer {
        .json(404, body(404, message, status: "NOT_FOUND", reason: ("global", "notFound")))
    }

    /// Pub/Sub's 404 for a subscription it does not have: `Resource not found (resource=ID).`
    static func resourceNotFound(_ name: String) -> PlayAnswer {
        let message = "Resource not found (resource=\(Sanitized.text(name.utf8, limit: 255)))."
        return .json(404, body(404, message, status: "NOT_FOUND"))
    }

    static func invalidArgument(_ message: String) -> PlayAnswer {
        .json(400, body(400, message, status: "INVALID_ARGUMENT"))
    }

    /// The token endpoint's OAuth error: `{"error","error_description"}`.
    static func oauth(_ status: Int, _ error: String, _ description: String) -> PlayAnswer {
        var w = JSONWriter(capacity: 128)
        w.beginObject()
        w.field("error", error)
        w.field("error_description", description)
        w.endObject()
        return .json(status, w.bytes)
    }
}

/// `application/x-www-form-urlencoded` and query strings: `k=v&k=v`, percent escapes and `+`.
enum FormData {
    /// The pairs in order (a key may repeat); nil when an escape is broken or not UTF-8.
    static func parse(_ text: String) -> [(String, String)]? {
        var out: [(String, String)] = []
        for part in text.split(separator: "&") {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = decode(kv[0]), let value = decode(kv.count > 1 ? kv[1] : "") else { return nil }
            out.append((key, value))
        }
        return out
    }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var it = Array(text.utf8)[...]
        while let c = it.popFirst() {
            switch c {
            case UInt8(ascii: "+"): bytes.append(0x20)
            case UInt8(ascii: "%"):
                guard it.count >= 2, let hi = hex(it.removeFirst()), let lo = hex(it.removeFirst()) else { return nil }
                bytes.append(hi << 4 | lo)
            default: bytes.append(c)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: return c - 48
        case 65...70: return c - 55
        case 97...102: return c - 87
        default: return nil
        }
    }
}
