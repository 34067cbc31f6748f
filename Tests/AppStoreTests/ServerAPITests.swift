// Contract §3b: the App Store Server API's answer classes, Retry-After in milliseconds, the
// strict reading of its bodies (hostile ones included), and the bearer JWT, checked with the
// public key. No network.

import Crypto
import Foundation
import Testing

@testable import AppStore

@Suite("The App Store Server API protocol")
struct ServerAPITests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test("each row of contract §3b's table")
    func classes() {
        #expect(ServerAPI.classify(httpStatus: 200, body: Self.bytes("{}"), retryAfter: nil) == .ok(body: Self.bytes("{}")))
        #expect(ServerAPI.classify(httpStatus: 401, body: [], retryAfter: nil) == .unauthorized)
        #expect(ServerAPI.classify(httpStatus: 404, body: Self.bytes(#"{"errorCode":4040010,"errorMessage":"x"}"#),
                                   retryAfter: nil) == .transactionNotFound)
        for code in [4_040_002, 4_040_004, 4_040_006, 5_000_001] {
            let status = code >= 5_000_000 ? 500 : 404
            guard case .retry = ServerAPI.classify(httpStatus: status, body: Self.bytes(#"{"errorCode":\#(code)}"#),
                                                   retryAfter: nil) else {
                Issue.record("\(code) is not retried")
                continue
            }
        }
        guard case .retry = ServerAPI.classify(httpStatus: 503, body: Self.bytes("<html>"), retryAfter: nil) else {
            Issue.record("HTTP 503 is not retried"); return
        }
        guard case .retry = ServerAPI.classify(httpStatus: 500, body: Self.bytes(#"{"errorCode":5000000}"#),
                                               retryAfter: nil) else {
            Issue.record("HTTP 500 is not retried"); return
        }
        #expect(ServerAPI.classify(httpStatus: 429, body: [], retryAfter: "1763700000123") == .rateLimited(untilMs: 1_763_700_000_123))
        guard case .refused(4_000_006, _) = ServerAPI.classify(httpStatus: 400, body: Self.bytes(#"{"errorCode":4000006}"#),
                                                               retryAfter: nil) else {
            Issue.record("400 InvalidTransactionIdError is not refused"); return
        }
    }

    @Test("Retry-After is a UNIX time in milliseconds; seconds are read as seconds; garbage is unreadable")
    func retryAfter() {
        #expect(ServerAPI.parseRetryAfter("1763700000123") == 1_763_700_000_123)
        #expect(ServerAPI.parseRetryAfter(" 1763700000 ") == 1_763_700_000_000)
        for bad in ["", "-1", "1.5e12", "Wed, 21 Oct 2026 07:28:00 GMT", "99999999999999999999", "12 34", "０１"] {
            #expect(ServerAPI.parseRetryAfter(bad) == nil, "\(bad)")
        }
    }

    @Test("Look Up Order ID: found, unknown (status 1, no transactions), and hostile bodies never believed")
    func orderLookup() throws {
        let found = try ServerAPI.orderLookup(Self.bytes(#"{"status":0,"signedTransactions":["a.b.c","d.e.f"]}"#))
        #expect(found.status == 0 && found.signed == ["a.b.c", "d.e.f"])
        let unknown = try ServerAPI.orderLookup(Self.bytes(#"{"status":1}"#))
        #expect(unknown.status == 1 && unknown.signed.isEmpty)
        let hostile = [
            #"{"status":0}"#, #"{"status":"0","signedTransactions":["a.b.c"]}"#, #"{"status":2}"#, #"{"status":null}"#,
            #"{"status":0,"signedTransactions":"a.b.c"}"#, #"{"status":0,"signedTransactions":[1]}"#,
            #"{"status":0,"status":1}"#, #"[]"#, #"{"status":0,"signedTransactions":["a.b.c"]"#, "",
            #"{"signedTransactions":["a.b.c"]}"#, "{\"status\":0,\"signedTransactions\":[\"\u{FFFD}\"],\"x\":\"\\ud800\"}",
        ]
        for body in hostile {
            #expect(throws: ServerAPIGarbage.self, "\(body)") { try ServerAPI.orderLookup(Self.bytes(body)) }
        }
        #expect(throws: ServerAPIGarbage.self) { try ServerAPI.orderLookup([0x7B, 0xFF, 0x7D]) }
    }

    @Test("Get Transaction Info: the JWS, or garbage")
    func transactionInfo() throws {
        #expect(try ServerAPI.signedTransactionInfo(Self.bytes(#"{"signedTransactionInfo":"a.b.c"}"#)) == "a.b.c")
        for body in [#"{}"#, #"{"signedTransactionInfo":7}"#, #"{"signedTransactionInfo":null}"#,
                     #"{"signedTransactionInfo":"a","signedTransactionInfo":"b"}"#, "nope"] {
            #expect(throws: ServerAPIGarbage.self, "\(body)") { try ServerAPI.signedTransactionInfo(Self.bytes(body)) }
        }
    }

    @Test("ids reach a path only as letters and digits")
    func pathSafety() {
        #expect(ServerAPI.isPathSafe("MK5TTTVWJH") && ServerAPI.isPathSafe("2000000123456789"))
        for bad in ["", "../x", "1/2", "1?a=b", "1%2F", "a b", "ü", String(repeating: "1", count: 65)] {
            #expect(!ServerAPI.isPathSafe(bad), "\(bad)")
        }
    }

    @Test("the bearer JWT: ES256 header with kid and typ, Apple's claims, exp within 60 min, verifiable with the public key")
    func jwt() throws {
        let key = P256.Signing.PrivateKey()
        let jwt = try AppStoreJWT(privateKeyPEM: key.pemRepresentation, keyID: "2X9R4HXF34",
                                  issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: "com.example.game")
        let token = jwt.token(now: 1_763_700_000)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        func decode(_ s: String) throws -> Data {
            var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b.count % 4 != 0 { b += "=" }
            return try #require(Data(base64Encoded: b))
        }
        let header = try #require(try JSONSerialization.jsonObject(with: decode(parts[0])) as? [String: Any])
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "2X9R4HXF34" && header["typ"] as? String == "JWT")
        let claims = try #require(try JSONSerialization.jsonObject(with: decode(parts[1])) as? [String: Any])
        #expect(claims["iss"] as? String == "57246542-96fe-1a63-e053-0824d011072a")
        #expect(claims["aud"] as? String == "appstoreconnect-v1" && claims["bid"] as? String == "com.example.game")
        let iat = try #require(claims["iat"] as? Int), exp = try #require(claims["exp"] as? Int)
        #expect(iat == 1_763_700_000 && exp > iat && exp - iat <= 3600)
        let signature = try decode(parts[2])
        #expect(signature.count == 64, "r‖s, not DER")
        let verified = key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: signature),
                                                      for: Data((parts[0] + "." + parts[1]).utf8))
        #expect(verified)
        // Another key does not verify it: the check above can fail.
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(
            try P256.Signing.ECDSASignature(rawRepresentation: signature), for: Data((parts[0] + "." + parts[1]).utf8)))
        // Two tokens a second apart differ (a fresh one per request).
        #expect(jwt.token(now: 1_763_700_001) != token)
    }

    @Test("a key file that is not a P-256 PKCS#8 key is refused without quoting it")
    func badKey() {
        let secretish = "-----BEGIN PRIVATE KEY-----\nTUlHSEFnRUFNQk1HQnlxR1NNNDlBZ0VHQ0NxR1NNNDlBd0VIQkcwd2F3SUJBUVFn\n-----END PRIVATE KEY-----\n"
        do {
            _ = try AppStoreJWT(privateKeyPEM: secretish, keyID: "K", issuerID: "I", bundleID: "B")
            Issue.record("accepted a broken key")
        } catch {
            #expect(!"\(error)".contains("TUlHSEFn"))
        }
        #expect(throws: (any Error).self) { try AppStoreJWT(privateKeyPEM: "not a key", keyID: "K", issuerID: "I", bundleID: "B") }
    }
}

@Suite("The Server API's paged answers")
struct ServerAPIPageTests {
    static func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    @Test("history and refund pages: transactions, revision, hasMore; hostile pages refused")
    func transactionPages() throws {
        let page = try ServerAPI.transactionPage(Self.bytes(
            #"{"revision":"1_2","hasMore":true,"bundleId":"b","environment":"Production","signedTransactions":["a.b.c"]}"#))
        #expect(page == TransactionPage(signedTransactions: ["a.b.c"], revision: "1_2", hasMore: true))
        let twentyOne = "[" + Array(repeating: "\"a.b.c\"", count: 21).joined(separator: ",") + "]"
        for body in [#"{"revision":"r","hasMore":"true","signedTransactions":[]}"#, #"{"hasMore":false,"signedTransactions":[]}"#,
                     #"{"revision":"r","hasMore":false}"#, #"{"revision":"r","hasMore":false,"signedTransactions":[null]}"#,
                     #"{"revision":"","hasMore":false,"signedTransactions":[]}"#,
                     #"{"revision":"r","hasMore":false,"hasMore":true,"signedTransactions":[]}"#,
                     #"{"revision":"r","hasMore":false,"signedTransactions":\#(twentyOne)}"#] {
            #expect(throws: ServerAPIGarbage.self, "\(body)") { try ServerAPI.transactionPage(Self.bytes(body)) }
        }
    }

    @Test("notification pages: payloads, token, hasMore; a page that says more without a token is refused")
    func notificationPages() throws {
        let page = try ServerAPI.notificationPage(Self.bytes(
            #"{"notificationHistory":[{"signedPayload":"x.y.z","sendAttempts":[]}],"hasMore":true,"paginationToken":"t1"}"#))
        #expect(page == NotificationPage(signedPayloads: ["x.y.z"], paginationToken: "t1", hasMore: true))
        let last = try ServerAPI.notificationPage(Self.bytes(#"{"notificationHistory":[],"hasMore":false}"#))
        #expect(last.paginationToken == nil && !last.hasMore)
        for body in [#"{"notificationHistory":[],"hasMore":true}"#, #"{"notificationHistory":[{}],"hasMore":false}"#,
                     #"{"notificationHistory":[{"signedPayload":1}],"hasMore":false}"#, #"{"hasMore":false}"#,
                     #"{"notificationHistory":{},"hasMore":false}"#] {
            #expect(throws: ServerAPIGarbage.self, "\(body)") { try ServerAPI.notificationPage(Self.bytes(body)) }
        }
    }

    @Test("the endpoint table: paths keep fixed parameters and escape tokens; ids only when path-safe; one notification type per body")
    func paths() {
        let history = AppStoreEndpoints.transactionHistory
        #expect(history.request(in: .production, id: "123", query: [("sort", "ASCENDING"), ("revision", nil)]).path
                == "/inApps/v2/history/123?sort=ASCENDING")
        #expect(history.request(in: .production, id: "123", query: [("sort", "ASCENDING"), ("revision", "a/b+c")]).path
                == "/inApps/v2/history/123?sort=ASCENDING&revision=a%2Fb%2Bc")
        #expect(AppStoreEndpoints.refundHistory.request(in: .production, id: "123", query: [("revision", "r1")]).path
                == "/inApps/v2/refund/lookup/123?revision=r1")
        let notifications = AppStoreEndpoints.notificationHistory.request(in: .sandbox, query: [("paginationToken", "t 1")])
        #expect(notifications.path == "/inApps/v1/notifications/history?paginationToken=t%201")
        #expect(notifications.method == .post && notifications.budget == ServerAPIEndpoint.notificationHistory.budget && notifications.environment == .sandbox)
        #expect(AppStoreEndpoints.transactionInfo.request(in: .production, id: "../../x").path == "/inApps/v1/transactions/0")
        #expect(AppStoreEndpoints.orderLookup.request(in: .production, id: "MK5TTTVWJH").path == "/inApps/v1/lookup/MK5TTTVWJH")
        #expect(String(decoding: ServerAPI.notificationHistoryBody(startMs: 1, endMs: 2, type: "REFUND"), as: UTF8.self)
                == #"{"startDate":1,"endDate":2,"notificationType":"REFUND"}"#)
        // The other endpoints are rows too: a PUT with a JSON body, a team-key GET without a budget of Apple's per second.
        let consumption = AppStoreEndpoints.consumption.request(in: .production, id: "2000000123", body: Self.bytes(#"{"customerConsented":true}"#))
        #expect(consumption.method == .put && consumption.path == "/inApps/v2/transactions/consumption/2000000123")
        #expect(consumption.service == .serverAPI && consumption.budget == .consumption && !consumption.body.isEmpty)
        let sales = AppStoreEndpoints.salesReports.request(in: .production, query: [("filter[frequency]", "DAILY")])
        #expect(sales.service == .connect && sales.method == .get && sales.path == "/v1/salesReports?filter%5Bfrequency%5D=DAILY")
        #expect(AppStoreEndpoints.verifyReceipt.budget == nil && AppStoreEndpoints.verifyReceipt.service == .verifyReceipt)
    }

    @Test("a 2xx is a body to read (202 of Send Consumption Information); verifyReceipt reads every HTTP answer itself")
    func replies() {
        #expect(AppStoreReply.classify(.serverAPI, httpStatus: 202, body: [], retryAfter: nil) == .answer(httpStatus: 202, body: []))
        #expect(AppStoreReply.classify(.serverAPI, httpStatus: 429, body: [], retryAfter: "1763700000123") == .rateLimited(untilMs: 1_763_700_000_123))
        #expect(AppStoreReply.classify(.connect, httpStatus: 429, body: [], retryAfter: nil) == .rateLimited(untilMs: nil))
        #expect(AppStoreReply.classify(.serverAPI, httpStatus: 429, body: [], retryAfter: "-5") == .rateLimited(untilMs: nil))
        #expect(AppStoreReply.classify(.serverAPI, httpStatus: 401, body: [], retryAfter: nil) == .unauthorized)
        #expect(AppStoreReply.classify(.verifyReceipt, httpStatus: 503, body: [1], retryAfter: nil) == .answer(httpStatus: 503, body: [1]))
    }

    @Test("X-Rate-Limit of App Store Connect: the hourly limit and what is left, in any order; anything else unreadable")
    func hourlyAllowance() {
        #expect(HourlyAllowance.parse("user-hour-lim:3500;user-hour-rem:500;") == HourlyAllowance(limit: 3500, remaining: 500))
        #expect(HourlyAllowance.parse(" user-hour-rem:0; user-hour-lim:3600") == HourlyAllowance(limit: 3600, remaining: 0))
        for bad in ["", "user-hour-lim:3500;", "user-hour-lim:x;user-hour-rem:1", "user-hour-lim:0;user-hour-rem:0", "garbage"] {
            #expect(HourlyAllowance.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("tokens: a team key's carry no bid; an In-App Purchase key's carry the app's; reused while valid, renewed before exp")
    func tokens() throws {
        let key = P256.Signing.PrivateKey()
        func claims(_ token: String) throws -> [String: Any] {
            var b = String(token.split(separator: ".")[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while b.count % 4 != 0 { b += "=" }
            let data = try #require(Data(base64Encoded: b))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        let team = try AppStoreJWT.teamKey(privateKeyPEM: key.pemRepresentation, keyID: "K", issuerID: "I")
        let teamClaims = try claims(team.token(now: 1_763_700_000))
        #expect(teamClaims["bid"] == nil && teamClaims["iss"] as? String == "I" && teamClaims["aud"] as? String == "appstoreconnect-v1")
        let iap = try AppStoreJWT(privateKeyPEM: key.pemRepresentation, keyID: "K", issuerID: "I", bundleID: "com.example.a")
        #expect(try claims(iap.token(now: 1_763_700_000))["bid"] as? String == "com.example.a")
        #expect(try claims(iap.token(now: 1_763_700_000, app: "com.example.b"))["bid"] as? String == "com.example.b")
        var tokens = BearerTokens(key: iap)
        let first = tokens.token(app: nil, now: 1_763_700_000)
        #expect(tokens.token(app: nil, now: 1_763_700_000 + BearerTokens.reuseSeconds - 1) == first)
        let other = tokens.token(app: "com.example.b", now: 1_763_700_010)
        #expect(other != first && tokens.signed == 2)
        #expect(tokens.token(app: nil, now: 1_763_700_000 + BearerTokens.reuseSeconds) != first)
        #expect(tokens.signed == 3)
        // A clock that went back gets a fresh token, never one issued in its future.
        #expect(tokens.token(app: "com.example.b", now: 1_763_699_000) != other)
    }
}
