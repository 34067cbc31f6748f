import AppStore
import Foundation
import HTTP
import JobStore
import TransportCore

/// Turns the state machine's `Send` into a libcurl request: the URL of its service and environment,
/// its headers, and the bearer token of its credential, signed once per key and app and reused
/// while valid (signed afresh when the machine doubts it). Owned by one transport run.
struct RequestSigner {
    let verifyReceiptURL: (production: String, sandbox: String)
    let serverAPI: ServerAPISettings?
    let connect: AppStoreConnectSettings?
    let timeoutMs: Int
    var iapTokens: BearerTokens?
    var teamTokens: BearerTokens?
    let play: PlaySettings?

    init(transport: AppStoreTransport) {
        verifyReceiptURL = transport.verifyReceiptURL
        serverAPI = transport.serverAPI
        connect = transport.connect
        timeoutMs = transport.timeoutMs
        iapTokens = serverAPI.map { BearerTokens(key: $0.jwt, appKeys: $0.appKeys) }
        teamTokens = connect.map { BearerTokens(key: $0.teamKey) }
        play = transport.play
    }

    func url(_ request: AppStoreRequest) -> String {
        switch request.service {
        case .verifyReceipt:
            return request.environment == .production ? verifyReceiptURL.production : verifyReceiptURL.sandbox
        case .serverAPI:
            return (serverAPI?.baseURL(request.environment) ?? "") + request.path
        case .connect:
            return (connect?.trimmedBaseURL ?? "") + request.path
        case .googlePlay:
            return (play?.apiBaseURL ?? "") + request.path
        case .googlePubSub:
            return (play?.pubsubBaseURL ?? "") + request.path
        }
    }

    /// The call for `send`; throws (exit 78) when its service has no key configured, and
    /// `GoogleTokens.Unavailable` when Google gives no access token (Play is skipped for the run).
    mutating func httpRequest<E>(_ send: TransportMachine<E>.Send) throws -> HTTPRequest {
        let request = send.request
        var headers = request.method == .get ? [] : ["Content-Type: application/json"]
        var wanted: [String] = []
        let now = Int64(Date().timeIntervalSince1970)
        switch request.service {
        case .verifyReceipt:
            break
        case .serverAPI:
            if send.renewToken { iapTokens?.forget(app: request.bundleID) }
            guard let token = iapTokens?.token(app: request.bundleID, now: now) else {
                throw JobError(.configuration, "\(request.name) asks the App Store Server API, which is not configured")
            }
            headers.append("Authorization: Bearer " + token)
            wanted = ["Retry-After"]
        case .connect:
            if send.renewToken { teamTokens?.forget(app: nil) }
            guard let token = teamTokens?.token(app: nil, now: now) else {
                throw JobError(.configuration, "\(request.name) asks the App Store Connect API: no team key is configured")
            }
            headers.append("Authorization: Bearer " + token)
            // Apple's reports come as a gzip file (`application/a-gzip`): asked for so.
            headers.append("Accept: application/a-gzip")
            wanted = ["Retry-After", "X-Rate-Limit"]
        case .googlePlay, .googlePubSub:
            guard let play else {
                throw JobError(.configuration, "\(request.name) asks Google Play, which is not configured (PLAY_SERVICE_ACCOUNT_FILE)")
            }
            let token = try play.tokens.token(
                nowMs: Int64(Date().timeIntervalSince1970 * 1000), fresh: send.renewToken, timeoutMs: timeoutMs)
            headers.append("Authorization: Bearer " + token)
            wanted = ["Retry-After"]
        }
        let method: HTTPRequest.Method
        switch request.method {
        case .get: method = .get
        case .post: method = .post
        case .put: method = .put
        }
        return HTTPRequest(
            tag: send.tag, method: method, url: url(request), body: request.body, headers: headers,
            timeoutMs: timeoutMs, wantedHeaders: wanted)
    }
}

extension ExchangeCompletion {
    /// The event of a libcurl call's end.
    init(_ completion: HTTPCompletion) {
        let outcome: Outcome
        switch completion.outcome {
        case .response(let status, let body): outcome = .response(status: status, body: body)
        case .failure(_, let message, let timedOut): outcome = .failure(message: message, timedOut: timedOut)
        }
        self.init(tag: completion.tag, outcome: outcome, elapsedMs: completion.elapsedMs, headers: completion.headers)
    }
}
