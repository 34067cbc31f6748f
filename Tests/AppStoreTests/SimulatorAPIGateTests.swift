// What every simulated Server API request goes through: the bearer JWT (401 for any flaw), the
// per-endpoint rate limit (429 with Retry-After in UNIX ms), the seeded faults, and the call
// log naming the endpoint.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

@Suite("simulated Server API: tokens, rate limits, faults")
struct SimulatorAPIGateTests {
    static let info = "/inApps/v1/transactions/1000000000000110"

    @Test("a token with any flaw is a 401; a good one is answered")
    func tokens() throws {
        let w = try SimulatorAPITests.world()
        #expect(try w.call(Self.info).status == 200)
        let now = Int64(Date().timeIntervalSince1970)
        let good = try APIWorld.token()
        let parts = good.split(separator: ".").map(String.init)
        let otherKey = APICredentials.newPrivateKeyPEM()
        let bad: [(String, String)] = [
            ("wrong signature", "Bearer " + (try APIWorld.token(keyPEM: otherKey))),
            ("wrong kid", "Bearer " + (try APIWorld.token(kid: "AAAAAAAAAA"))),
            ("wrong typ", "Bearer " + (try APIWorld.token(typ: "JWS"))),
            ("wrong iss", "Bearer " + (try APIWorld.token(iss: "someone-else"))),
            ("wrong aud", "Bearer " + (try APIWorld.token(aud: "appstoreconnect-v2"))),
            ("wrong bid", "Bearer " + (try APIWorld.token(bid: "com.other.app"))),
            ("exp - iat > 3600", "Bearer " + (try APIWorld.token(lifetime: 3601))),
            ("expired", "Bearer " + (try APIWorld.token(iat: now - 400))),
            ("payload of another token", "Bearer " + parts[0] + "." + (try APIWorld.token(lifetime: 200)).split(separator: ".")[1] + "." + parts[2]),
            ("alg none", "Bearer " + Self.b64(#"{"alg":"none","kid":"\#(APIWorld.keyID)","typ":"JWT"}"#) + "." + parts[1] + "."),
            ("DER-sized signature", "Bearer " + parts[0] + "." + parts[1] + "." + Self.b64(String(repeating: "x", count: 71))),
            ("padding", "Bearer " + good + "="),
            ("no scheme", good),
            ("basic", "Basic dXNlcjpwYXNz"),
            ("garbage", "Bearer garbage"),
            ("four parts", "Bearer " + good + ".e30"),
            ("empty", ""),
            ("not JSON header", "Bearer " + Self.b64("{alg:ES256}") + "." + parts[1] + "." + parts[2]),
            ("iat as string", "Bearer " + (try ES256Signer(pkcs8PEM: APIWorld.keyPEM, keyID: APIWorld.keyID, type: "JWT").sign(json:
                #"{"iss":"\#(APIWorld.issuer)","iat":"\#(now)","exp":\#(now + 60),"aud":"appstoreconnect-v1","bid":"\#(APIWorld.bundle)"}"#))),
            ("not ASCII", "Bearer ü.ö.ä"),
        ]
        for (name, authorization) in bad {
            let r = try w.call(Self.info, authorization: authorization)
            #expect(r.status == 401, "\(name): \(r.status)")
            #expect(!r.text.contains(parts[1]), "\(name): the answer quotes the token")
        }
        let logged = w.sim.calls.filter { $0.outcome.hasPrefix("401") }.map(\.outcome)
        #expect(logged.count == bad.count && logged.contains("401:kid") && logged.contains("401:signature")
                && logged.contains("401:lifetime") && logged.contains("401:bid"))
        #expect(try w.call(Self.info).status == 200, "the server still answers")
    }

    static func b64(_ s: String) -> String {
        Data(s.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test("over the rate: 429 4290000 with Retry-After in UNIX ms ahead; per endpoint; the sandbox gets a tenth")
    func rateLimits() throws {
        let w = try SimulatorAPITests.world(rates: [.orderLookup: 2, .transactionInfo: 20])
        var statuses: [Int] = []
        var limited: RawResponse?
        for _ in 0..<6 {
            let r = try w.call("/inApps/v1/lookup/ZZZZZZZZZZ")
            statuses.append(r.status)
            if r.status == 429 { limited = r; break }
        }
        #expect(statuses.prefix(2) == [200, 200], "\(statuses)")
        let answer = try #require(limited, "no 429 after \(statuses)")
        #expect(answer.errorCode == 4_290_000)
        let sentAt = Int64(Date().timeIntervalSince1970 * 1000)
        let retryAt = try #require(answer.headers["retry-after"].flatMap { Int64($0) }, "Retry-After: \(answer.headers)")
        #expect(retryAt > sentAt - 50 && retryAt <= sentAt + 1000, "Retry-After \(retryAt) is not a UNIX ms time within the second")
        // Another endpoint is not limited by this one.
        #expect(try w.call(Self.info).status == 200)
        // After Retry-After the endpoint answers again.
        let wait = retryAt - Int64(Date().timeIntervalSince1970 * 1000)
        if wait > 0 { usleep(useconds_t(wait * 1000 + 5000)) }
        #expect(try w.call("/inApps/v1/lookup/ZZZZZZZZZZ").status == 200)
        // The sandbox: a tenth of 20 = 2 a second for transaction info.
        var sandbox: [Int] = []
        for _ in 0..<4 { sandbox.append(try w.call("/inApps/v1/transactions/3000000000000001", env: "sandbox").status) }
        #expect(sandbox.prefix(2) == [200, 200] && sandbox.contains(429), "\(sandbox)")
        // Every request is logged with its endpoint and time; a 429 names Apple's code.
        let calls = w.sim.calls
        #expect(calls.allSatisfy { $0.endpoint != nil && $0.receiptID == nil })
        #expect(calls.contains { $0.endpoint == "order_lookup" && $0.outcome.hasPrefix("429:4290000:until=") && $0.pathID == "ZZZZZZZZZZ" })
        #expect(calls.contains { $0.endpoint == "transaction_info" && $0.outcome == "200" })
    }

    @Test("seeded faults reach the Server API: Apple's retryable codes, 429 bursts with Retry-After in ms, 5xx")
    func faults() throws {
        let w = try SimulatorAPITests.world(rates: [.transactionInfo: 0],
                                            faults: FaultPlan(seed: 3, rate: 1, kinds: [.s211xx, .s21005, .s21009]))
        var codes = Set<Int>()
        for i in 0..<40 {
            let r = try w.call("/inApps/v1/transactions/10000000000001\(10 + i % 26)")
            #expect([404, 500].contains(r.status), "\(r.status)")
            if let code = r.errorCode { codes.insert(code) }
        }
        #expect(codes == [4_040_002, 4_040_004, 4_040_006, 5_000_001])
        w.sim.setFaults(FaultPlan(seed: 3, rate: 1, kinds: [.http429]))
        let burst = try w.call(Self.info)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(burst.status == 429 && burst.errorCode == 4_290_000)
        #expect(burst.headers["retry-after"].flatMap { Int64($0) }.map { $0 > now && $0 <= now + 1100 } == true)
        w.sim.setFaults(FaultPlan(seed: 3, rate: 1, kinds: [.http5xx]))
        #expect(try w.call("/inApps/v2/history/1000000000000110").status == 503)
        w.sim.setFaults(FaultPlan(seed: 3, rate: 1, kinds: [.reset]))
        #expect(throws: RawHTTPError.self) { try w.call(Self.info) }
        w.sim.setFaults(FaultPlan(seed: 3, rate: 1, kinds: [.truncated]))
        let cut = try w.call(Self.info)
        #expect(cut.status == 200 && cut.json == nil && cut.body.count < Int(cut.headers["content-length"] ?? "0")!)
        // Faults are drawn per endpoint and id, like verifyReceipt's per receipt: reproducible.
        let outcomes = w.sim.calls.map(\.outcome)
        #expect(outcomes.contains("s211xx:4040002") || outcomes.contains { $0.hasPrefix("s21") })
        #expect(outcomes.contains("http429") && outcomes.contains("reset") && outcomes.contains("truncated"))
        w.sim.setFaults(FaultPlan())
        #expect(try w.call(Self.info).status == 200)
    }
}
