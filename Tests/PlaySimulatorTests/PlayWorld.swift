// Google Play's simulator behind the real server (AppStoreSimulator's, its extra routes bridged to
// `PlayService`) on an ephemeral port, a clock the tests move, and a tiny blocking HTTP client
// over a plain socket (one request per connection, copied from AppStoreTests), so the tests see
// exactly what the job's transport gets: status, headers, body.

import AppStoreSimulator
import Foundation
import PlaySimulator
import PlayStore
import Synchronization
import Testing
import _CryptoExtras

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct RawResponse {
    var status: Int
    /// Header names in lower case.
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
}

struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

enum RawHTTP {
    static func request(
        port: Int, method: String, path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws -> RawResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw RawHTTPError(description: "connect to \(port)") }
        var head =
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        let out = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw RawHTTPError(description: "send") }
            sent += n
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        guard
            let split = (0..<max(0, data.count - 3)).first(where: {
                data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10
            })
        else { throw RawHTTPError(description: "no answer (\(data.count) bytes)") }
        let lines = String(decoding: data[0..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: "status line \(lines[0])")
        }
        var headerMap: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headerMap[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        return RawResponse(status: status, headers: headerMap, body: Array(data[(split + 4)...]))
    }
}

/// A clock the tests move (Unix ms).
final class TestClock: Sendable {
    private let ms: Mutex<Int64>
    init(_ start: Int64) { ms = Mutex(start) }
    var now: Int64 { ms.withLock { $0 } }
    var seconds: Int64 { now / 1000 }
    func advance(ms delta: Int64) { ms.withLock { $0 += delta } }
}

/// The suite's service account (making an RSA key is the slow part: once).
enum PlayKeys {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let other = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let keyFile = PlayKeyFile.json(key: key, keyID: "0123456789abcdef0123456789abcdef01234567")
    static let account = try! ServiceAccount(keyFile: keyFile)
    /// Another key under the same e-mail: a forged assertion.
    static let forger = try! ServiceAccount(keyFile: PlayKeyFile.json(key: other, keyID: "feedface"))
}

/// A running server with Google Play's simulator, and the calls a test makes to it.
final class PlayWorld {
    static let game = "com.example.game"
    static let otherApp = "com.example.other"
    /// 2026-11-18T...Z: an arbitrary fixed now.
    static let start: Int64 = 1_795_000_000_000

    let clock: TestClock
    let service: PlayService
    let sim: Simulator

    init(truth: PlayTruth = PlayWorld.truth, configure: (inout PlaySimulatorConfig) -> Void = { _ in }) throws {
        var config = try PlaySimulatorConfig(keyFile: PlayKeys.keyFile, truth: truth)
        let clock = TestClock(PlayWorld.start)
        self.clock = clock
        config.now = { clock.now }
        configure(&config)
        let service = PlayService(config: config)
        self.service = service
        let bridge: @Sendable (SimRouteRequest) -> SimRouteAnswer? = { r in
            service.answer(
                PlayRequest(method: r.method, path: r.path, query: r.query, headers: r.headers, body: r.body)
            )
            .map { SimRouteAnswer(status: $0.status, contentType: $0.contentType, body: $0.body, headers: $0.headers) }
        }
        sim = try Simulator.start(SimulatorConfig(threads: 1, extraRoutes: bridge))
    }

    deinit { try? sim.shutdown() }

    /// POST /token with this form.
    func tokenCall(form: String) throws -> RawResponse {
        try RawHTTP.request(
            port: sim.port, method: "POST", path: "/token",
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
    }

    /// A good assertion of the suite's account, at the simulator's now.
    func assertion(
        scopes: [String] = [GoogleOAuth.androidPublisherScope], account: ServiceAccount = PlayKeys.account,
        at seconds: Int64? = nil, audience: String? = nil
    ) -> String {
        account.assertion(scopes: scopes, now: seconds ?? clock.seconds, audience: audience)
    }

    /// An access token from /token (the call must succeed).
    func accessToken(scopes: [String] = [GoogleOAuth.androidPublisherScope]) throws -> String {
        let r = try tokenCall(form: GoogleOAuth.form(assertion: assertion(scopes: scopes)))
        guard case .token(let token, _) = GoogleOAuth.answer(status: r.status, body: r.body) else {
            throw RawHTTPError(description: "no token: \(r.status) \(r.text)")
        }
        return token
    }

    /// GET `path` with `authorization` (default: a fresh token's bearer).
    func get(_ path: String, authorization: String? = nil) throws -> RawResponse {
        let auth = try authorization ?? ("Bearer " + accessToken())
        return try RawHTTP.request(
            port: sim.port, method: "GET", path: path, headers: auth.isEmpty ? [] : [("Authorization", auth)])
    }

    /// POST `body` to `path` with `authorization` (empty: no Authorization header).
    func post(_ path: String, _ body: String, authorization: String) throws -> RawResponse {
        try post(path, bytes: Array(body.utf8), authorization: authorization)
    }

    /// POST these bytes to `path` with `authorization` (empty: no Authorization header).
    func post(_ path: String, bytes: [UInt8], authorization: String) throws -> RawResponse {
        var headers = [("Content-Type", "application/json")]
        if !authorization.isEmpty { headers.append(("Authorization", authorization)) }
        return try RawHTTP.request(port: sim.port, method: "POST", path: path, headers: headers, body: bytes)
    }

    /// The subscription the Pub/Sub tests pull from.
    static let subscription = "projects/iap-sim/subscriptions/play-rtdn"

    /// `/v1/{subscription}:{method}` (`pull`, `acknowledge`).
    static func pubsubPath(_ method: String, subscription: String = PlayWorld.subscription) -> String {
        "/v1/\(subscription):\(method)"
    }

    static func reviewRefundPath(_ orderID: String, package: String = game) -> String {
        "/androidpublisher/v3/applications/\(package)/orders/\(orderID):reviewrefund"
    }

    static func purchasePath(_ token: String, package: String = game) -> String {
        "/androidpublisher/v3/applications/\(package)/purchases/productsv2/tokens/\(token)"
    }

    static func ordersPath(_ ids: [String], package: String = game) -> String {
        "/androidpublisher/v3/applications/\(package)/orders:batchGet?"
            + ids.map { "orderIds=\($0)" }.joined(separator: "&")
    }

    static func voidedPath(_ query: String, package: String = game) -> String {
        "/androidpublisher/v3/applications/\(package)/purchases/voidedpurchases" + (query.isEmpty ? "" : "?" + query)
    }

    /// The purchases most tests read.
    static let bought = PlayTruth.Purchase(
        packageName: game, purchaseToken: "tok-bought-1", orderID: "GPA.1111-2222-3333-44444", productID: "coins_100",
        completionTimeMs: start - 86_400_000, regionCode: "US", obfuscatedAccountID: "acct-1",
        total: .init(currency: "USD", units: 0, nanos: 990_000_000),
        tax: .init(currency: "USD", units: 0, nanos: 80_000_000),
        developerRevenue: .init(currency: "USD", units: 0, nanos: 690_000_000))
    static let pendingTest = PlayTruth.Purchase(
        packageName: game, purchaseToken: "tok-pending-test", orderID: nil, productID: "gems.big", quantity: 2,
        state: .pending, acknowledged: false, completionTimeMs: nil, isTest: true,
        total: .init(currency: "EUR", units: 0), tax: .init(currency: "EUR", units: 0),
        developerRevenue: .init(currency: "EUR", units: 0))
    static let several = PlayTruth.Purchase(
        packageName: game, purchaseToken: "tok-several", orderID: "GPA.1111-2222-3333-55555", productID: "coins_500",
        quantity: 3, completionTimeMs: start - 2 * 86_400_000, regionCode: "DE", refundableQuantity: 1,
        total: .init(currency: "EUR", units: 12, nanos: 990_000_000),
        tax: .init(currency: "EUR", units: 2, nanos: 70_000_000),
        developerRevenue: .init(currency: "EUR", units: 9, nanos: 50_000_000), orderState: "PARTIALLY_REFUNDED")
    static let otherAppPurchase = PlayTruth.Purchase(
        packageName: otherApp, purchaseToken: "tok-other-app", orderID: "GPA.9999-8888-7777-66666",
        productID: "coins_100",
        completionTimeMs: start - 86_400_000, total: .init(currency: "USD", units: 1),
        tax: .init(currency: "USD", units: 0), developerRevenue: .init(currency: "USD", units: 0, nanos: 700_000_000))
    static let truth = PlayTruth(purchases: [bought, pendingTest, several, otherAppPurchase])
}
