// The one App Store transport against the simulator over real HTTP (in process, no database):
// every kind of request it must carry (a Server API GET, a PUT with a JSON body, a team-key GET of
// App Store Connect) on one multi handle, and hostile answers (429 bursts with Retry-After,
// bodies that are not JSON, truncated ones, 5xx, Apple's retryable codes) retried to the end.

import AppStore
import AppStoreSimulator
import Foundation
import HTTP
import Reconciliation
import Testing

@testable import JobStore
@testable import StoreIO
@testable import TransportCore

@Suite("The App Store transport", .serialized)
struct AppStoreTransportTests {
    static let bundle = "com.example.game"
    static let keyPEM = APICredentials.newPrivateKeyPEM()
    static let pki = try! TestPKI.create()

    /// A simulator serving the Server API about `count` production transactions (ids 2000…).
    static func simulator(count: Int, faults: FaultPlan = FaultPlan(), rates: [SimAPIEndpoint: Int] = [:]) throws -> Simulator {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let rows = (0..<count).map { i in
            AppleTruthRow(transactionID: String(2_000_000_000 + i), productID: bundle + ".coins100", productType: .consumable,
                          purchaseDateMs: now - 86_400_000, bundleID: bundle, customer: "c\(i)")
        }
        let credentials = APICredentials(keyID: "2X9R4HXF34", issuerID: "57246542-96fe-1a63-e053-0824d011072a",
                                         bundleID: bundle, publicKey: try APICredentials.publicKey(pem: keyPEM))
        let api = ServerAPIConfig(credentials: credentials, truth: AppleTruth(rows: rows), pki: pki, rates: rates)
        return try Simulator.start(SimulatorConfig(faults: faults, threads: 1, serverAPI: api))
    }

    static func transport(_ sim: Simulator, concurrency: Int, maxAttempts: Int = 4) throws -> AppStoreTransport {
        var api = ServerAPISettings(jwt: try AppStoreJWT(privateKeyPEM: keyPEM, keyID: "2X9R4HXF34",
                                                         issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: bundle))
        api.productionURL = sim.productionAPIURL
        api.sandboxURL = sim.sandboxAPIURL
        var connect = AppStoreConnectSettings(
            teamKey: try AppStoreJWT.teamKey(privateKeyPEM: keyPEM, keyID: "TEAMKEY1", issuerID: "57246542-96fe-1a63-e053-0824d011072a"),
            vendorNumber: "85012345")
        connect.baseURL = sim.baseURL
        var transport = AppStoreTransport(policy: RetryPolicy(maxAttempts: maxAttempts, retryBaseMs: 5, retryDelayMinutes: 10),
                                          concurrency: concurrency, timeoutMs: 5000, service: "the App Store Server API")
        transport.serverAPI = api
        transport.connect = connect
        return transport
    }

    /// One request; a 2xx body is good when `accept` says so, else retried like a timeout.
    final class Ask: AppStoreExchange {
        let request: AppStoreRequest
        let accept: ([UInt8]) -> Bool
        var retry = RetryPolicy.State()
        var sends = 0
        var replies: [AppStoreReply] = []
        var decision: RetryPolicy.Decision?
        var answer: Answer?

        init(_ request: AppStoreRequest, accept: @escaping ([UInt8]) -> Bool = { _ in true }) {
            (self.request, self.accept) = (request, accept)
        }

        func read(_ reply: AppStoreReply) -> Answer {
            replies.append(reply)
            if case .answer(_, let body) = reply, !accept(body) {
                return Answer(status: nil, answerClass: .retry, problem: "not the body this endpoint sends")
            }
            return AppStoreTransport.answer(reply)
        }

        func settled(_ answer: Answer, decision: RetryPolicy.Decision, asked: AppStoreRequest, completion: ExchangeCompletion) -> Bool {
            if case .sendAgain = decision { return false }
            (self.answer, self.decision) = (answer, decision)
            return false
        }
    }

    static func readsTransaction(_ body: [UInt8]) -> Bool { (try? AppStoreEndpoints.transactionInfo.reader(body)) != nil }

    /// Get Transaction Info about the first `n` transactions of the simulator.
    static func transactionInfo(_ n: Int) -> [Ask] {
        (0..<n).map {
            Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: String(2_000_000_000 + $0)), accept: readsTransaction)
        }
    }

    /// Runs `asks` to their end with a breaker of the transport's wave.
    static func run(_ asks: [Ask], on transport: AppStoreTransport) throws -> TransportCounts {
        var feed = ListFeed(asks)
        var breaker = OutageBreaker(wave: transport.concurrency)
        var counts = TransportCounts()
        try transport.run(&feed, breaker: &breaker, counts: &counts)
        return counts
    }

    @Test("one handle carries a Server API GET, a PUT with a JSON body, the GET after it, and a team-key GET of App Store Connect")
    func everyKindOfRequest() throws {
        let sim = try Self.simulator(count: 2)
        defer { try? sim.shutdown() }
        let consumption = Array(#"{"customerConsented":true,"deliveryStatus":"DELIVERED","sampleContentProvided":false}"#.utf8)
        let asks = [
            Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: "2000000000"), accept: Self.readsTransaction),
            Ask(AppStoreEndpoints.consumption.request(in: .production, id: "2000000000", body: consumption)),
            // The same easy handle next (one in flight): a GET again, not the PUT it carried before.
            Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: "2000000001"), accept: Self.readsTransaction),
            Ask(AppStoreEndpoints.salesReports.request(in: .production, query: [("filter[frequency]", "DAILY")])),
        ]
        let counts = try Self.run(asks, on: Self.transport(sim, concurrency: 1))
        #expect(asks[0].answer?.answerClass == .ok && asks[2].answer?.answerClass == .ok, "\(asks.map(\.replies))")
        // The PUT reached the simulator's Send Consumption Information as a PUT with its body: 202.
        #expect(asks[1].replies == [.answer(httpStatus: 202, body: [])] && asks[1].answer?.answerClass == .ok, "\(asks[1].replies)")
        #expect(sim.consumptionAnswers.map(\.transactionID) == ["2000000000"])
        // The simulator has no App Store Connect: its 404 came back, read as Apple's refusal of that request.
        #expect(asks[3].replies == [.refused("HTTP 404")])
        #expect(counts.requests == ["transaction_info": 2, "consumption": 1, "sales_reports": 1])
    }

    @Test("hostile answers: 429 bursts (Retry-After honoured), bodies that are not JSON, truncated ones, 5xx, retryable codes: retried to the end")
    func hostileAnswers() throws {
        let sim = try Self.simulator(count: 24, faults: FaultPlan(seed: 11, rate: 0.4, kinds: [.http429, .nonjson, .truncated, .http5xx, .s21005]))
        defer { try? sim.shutdown() }
        let asks = Self.transactionInfo(24)
        let counts = try Self.run(asks, on: Self.transport(sim, concurrency: 4, maxAttempts: 12))
        #expect(asks.allSatisfy { $0.answer?.answerClass == .ok }, "\(asks.filter { $0.answer?.answerClass != .ok }.map(\.replies))")
        #expect(counts.retried > 0 && counts.total == 24 + counts.retried)
    }

    @Test("a 429's Retry-After holds its endpoint: with the job's budget above the simulator's limit, nothing goes before that time")
    func retryAfterHolds() throws {
        let sim = try Self.simulator(count: 30, rates: [.transactionInfo: 10])
        defer { try? sim.shutdown() }
        let asks = Self.transactionInfo(30)
        var transport = try Self.transport(sim, concurrency: 4, maxAttempts: 30)
        transport.rates = [.transactionInfo: 1000]
        let counts = try Self.run(asks, on: transport)
        #expect(asks.allSatisfy { $0.answer?.answerClass == .ok })
        #expect(counts.rateLimited > 0, "the simulator's limit did not bite")
        // Requests already on their way when a 429 came may land after it (100 ms of slack for a
        // loaded machine); none sent after it lands before its Retry-After.
        let calls = sim.calls.filter { $0.endpoint == "transaction_info" }.sorted { $0.timeMs < $1.timeMs }
        for (i, call) in calls.enumerated() {
            guard call.outcome.contains("until="), let until = call.outcome.split(separator: "until=").last.flatMap({ Int64($0) }) else { continue }
            #expect(calls[(i + 1)...].allSatisfy { $0.timeMs >= until - 5 || $0.timeMs <= call.timeMs + 100 },
                    "a request before the Retry-After time \(until)")
        }
    }

    @Test("a 401 stops the run with exit 78's line; a host that never answers, with exit 75's")
    func stops() throws {
        let sim = try Self.simulator(count: 1)
        defer { try? sim.shutdown() }
        var transport = try Self.transport(sim, concurrency: 2)
        transport.serverAPI?.jwt = try AppStoreJWT(privateKeyPEM: APICredentials.newPrivateKeyPEM(), keyID: "2X9R4HXF34",
                                                   issuerID: "57246542-96fe-1a63-e053-0824d011072a", bundleID: Self.bundle)
        var feed = ListFeed([Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: "2000000000"))])
        var breaker = OutageBreaker(wave: 2)
        var counts = TransportCounts()
        let refused = #expect(throws: JobError.self) { try transport.run(&feed, breaker: &breaker, counts: &counts) }
        #expect(refused?.code == .configuration && "\(refused!)".contains("IAP_KEY_ID") && !"\(refused!)".contains("eyJ"))
        // A port nobody listens on.
        transport.serverAPI?.productionURL = "http://127.0.0.1:9"
        var gone = ListFeed([Ask(AppStoreEndpoints.transactionInfo.request(in: .production, id: "2000000000"))])
        var fresh = OutageBreaker(wave: 2)
        let unreachable = #expect(throws: JobError.self) { try transport.run(&gone, breaker: &fresh, counts: &counts) }
        #expect(unreachable?.code == .temporary && "\(unreachable!)".contains("unreachable"))
    }
}
