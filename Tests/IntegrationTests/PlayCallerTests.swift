// Google Play the whole way, over real HTTP: the job's transport (libcurl) signs an assertion, gets
// an access token from the Play simulator's token endpoint, asks productsv2 with it, and reads the
// answer strictly; Google's refusals, faults and garbage end as the contract says.

import AppStoreSimulator
import Foundation
import PlaySimulator
import PlayStore
import Testing
import _CryptoExtras

@testable import JobStore
@testable import StoreIO

@Suite("Google Play through the transport, over HTTP")
struct PlayCallerTests {
    static let game = "com.example.game", other = "com.example.other"
    static let subscription = "projects/studio-night/subscriptions/play-rtdn"
    static let bought = PlayTruth.Purchase(
        packageName: game, purchaseToken: "tok-bought-1", orderID: "GPA.1111-2222-3333-44444", productID: "coins_100",
        completionTimeMs: 1_790_000_000_000, regionCode: "JP", obfuscatedAccountID: "O-1",
        total: .init(currency: "JPY", units: 480), tax: .init(currency: "JPY", units: 44),
        developerRevenue: .init(currency: "JPY", units: 336))
    static let test = PlayTruth.Purchase(
        packageName: other, purchaseToken: "tok-test", orderID: nil, productID: "gems.big", quantity: 2, state: .pending,
        acknowledged: false, completionTimeMs: nil, isTest: true, total: .init(currency: "EUR", units: 0),
        tax: .init(currency: "EUR", units: 0), developerRevenue: .init(currency: "EUR", units: 0))

    /// The simulator serving the two purchases and two notifications (the voided purchase, the
    /// refund review) for the key `simulatorKey`, and a caller with the job's key file.
    final class World {
        let harness: PlayHarness
        var service: PlayService { harness.service }

        init(simulatorKey: _RSA.Signing.PrivateKey = PlayHarness.jobKey, configure: (inout PlaySimulatorConfig) -> Void = { _ in }) throws {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            var truth = PlayTruth(purchases: [bought, test])
            truth.notifications = [
                .init(
                    packageName: game, eventTimeMs: now - 60_000,
                    kind: .voidedPurchase(purchaseToken: "tok-bought-1", orderID: "GPA.1111-2222-3333-44444", productType: 2, refundType: 1)
                ),
                .init(
                    packageName: game, eventTimeMs: now - 30_000,
                    kind: .pendingRefundReview(
                        pendingRefundToken: "prt-1", orderID: "GPA.1111-2222-3333-44444", refundReason: 7,
                        obfuscatedAccountID: "O-1")),
            ]
            harness = try PlayHarness(
                truth: truth, packages: [game, other], subscription: PlayCallerTests.subscription, simulatorKey: simulatorKey,
                configure: configure)
        }

        func caller() -> PlayCaller { PlayCaller(play: harness.settings, settings: PlayHarness.transportSettings) }

        func calls(_ endpoint: PlayEndpoint) -> Int { harness.calls(endpoint) }
    }

    /// The exit line of `body`, which must fail with `code`.
    static func failure(_ code: JobStore.ExitStatus, _ body: () throws -> Void) -> String {
        do {
            try body()
            Issue.record("no error")
        } catch let error as JobError {
            #expect(error.code == code, "\(error.code): \(error.message)")
            for secret in PlayHarness.jobKey.pkcs8PEMRepresentation.split(separator: "\n").dropFirst().prefix(3) {
                #expect(!error.message.contains(secret.prefix(12)))
            }
            return error.message
        } catch {
            Issue.record("not a JobError: \(error)")
        }
        return ""
    }

    @Test("a purchase, a test purchase, an unknown and a gone token; one access token for all of them")
    func answers() throws {
        let world = try World { $0.goneTokens = ["tok-gone"] }
        var caller = world.caller()
        guard case .purchase(let p) = try caller.purchase(package: Self.game, token: "tok-bought-1") else {
            Issue.record("no purchase")
            return
        }
        #expect(p.orderID == "GPA.1111-2222-3333-44444" && p.state == .purchased && !p.isTest && p.storefront == "JPN")
        #expect(p.lineItems.map(\.productID) == ["coins_100"] && p.obfuscatedAccountID == "O-1")
        #expect(p.completionTime == 1_790_000_000_000)
        guard case .purchase(let t) = try caller.purchase(package: Self.other, token: "tok-test") else {
            Issue.record("no test purchase")
            return
        }
        #expect(t.isTest && t.state == .pending && t.orderID == nil && t.lineItems[0].quantity == 2)
        #expect(try caller.purchase(package: Self.game, token: "tok-unknown") == .unknown)
        #expect(try caller.purchase(package: Self.game, token: "tok-gone") == .gone)
        #expect(world.calls(.token) == 1, "the access token is reused: \(world.calls(.token)) exchanges")
        #expect(world.calls(.productPurchase) == 4)
        // A token that is not one never leaves the machine.
        _ = Self.failure(.usage) { _ = try caller.purchase(package: Self.game, token: "../../orders") }
        #expect(world.calls(.productPurchase) == 4)
    }

    @Test("a short-lived access token (two minutes) is still reused, renewed at half its life")
    func shortLivedToken() throws {
        let world = try World { $0.tokenLifetimeSeconds = 120 }
        var caller = world.caller()
        for _ in 0..<3 { _ = try caller.purchase(package: Self.game, token: "tok-bought-1") }
        #expect(world.calls(.token) == 1 && world.calls(.productPurchase) == 3)
    }

    @Test("5xx and garbage are retried, never believed; garbage every time: exit 75")
    func faultsAndGarbage() throws {
        let world = try World()
        var caller = world.caller()
        world.service.setFaults(PlayFaultPlan(rules: [.next(2, [.unavailable, .truncated], endpoint: .productPurchase)]))
        guard case .purchase = try caller.purchase(package: Self.game, token: "tok-bought-1") else {
            Issue.record("not read after the faults")
            return
        }
        #expect(world.calls(.productPurchase) == 3)
        world.service.setFaults(PlayFaultPlan(rules: [.share(1, of: PlayFault.garbage, endpoint: .productPurchase)]))
        let line = Self.failure(.temporary) { _ = try caller.purchase(package: Self.game, token: "tok-bought-1") }
        #expect(line.contains("not its answer"), "\(line)")
    }

    @Test("Google refuses: the assertion (invalid_grant), a key Google does not know, the app's rights (403): exit 78, never the key")
    func refusals() throws {
        let refusing = try World { $0.refuseAssertions = true }
        var caller = refusing.caller()
        let grant = Self.failure(.configuration) { _ = try caller.purchase(package: Self.game, token: "tok-bought-1") }
        #expect(grant.contains("invalid_grant") && grant.contains("PLAY_SERVICE_ACCOUNT_FILE"), "\(grant)")
        #expect(refusing.calls(.productPurchase) == 0)
        // The simulator knows another key: the job's assertion is refused.
        let stranger = try World(simulatorKey: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        var strangerCaller = stranger.caller()
        _ = Self.failure(.configuration) { _ = try strangerCaller.purchase(package: Self.game, token: "tok-bought-1") }
        // No rights to the other app: 403, doubted a second with a fresh token, then believed.
        let rights = try World { $0.allowedPackages = [Self.game] }
        var rightsCaller = rights.caller()
        let started = Date()
        let denied = Self.failure(.configuration) { _ = try rightsCaller.purchase(package: Self.other, token: "tok-test") }
        #expect(denied.contains("refused the service account"), "\(denied)")
        #expect(Date().timeIntervalSince(started) >= 1, "confirmed a second later")
        #expect(rights.calls(.productPurchase) == 2 && rights.calls(.token) == 2, "the second with a fresh token")
    }

    @Test("notifications: pulled, read, acknowledged once stored; a refund review answered once, Google keeping the first")
    func notificationsAndReviews() throws {
        let world = try World()
        var caller = world.caller()
        let messages = try caller.pull(maxMessages: 10)
        #expect(messages.count == 2)
        let said = try messages.map { try PlayNotification.read($0.data).get() }
        guard case .voided(let token, let order, 2, 1) = said[0].kind, case .pendingRefundReview(let review, _, 7, _) = said[1].kind else {
            Issue.record("not the truth's notifications: \(said)")
            return
        }
        #expect(token == "tok-bought-1" && order == Self.bought.orderID && review == "prt-1")
        // Leased, not acknowledged yet: nothing more now.
        #expect(try caller.pull(maxMessages: 10).isEmpty)
        try caller.acknowledge(messages.map(\.ackID))
        #expect(world.service.pubsub.acknowledged == Set(messages.map(\.messageID)))
        // Acknowledging again is no error and changes nothing.
        try caller.acknowledge(messages.map(\.ackID))
        let answer = RefundReview(
            pendingRefundToken: review, sampleContentProvided: true, preference: .decline, consumptionMilliunits: 100_000)
        #expect(try caller.reviewRefund(package: Self.game, orderID: order!, review: answer) == .accepted)
        #expect(try caller.reviewRefund(package: Self.game, orderID: order!, review: answer) == .accepted)
        #expect(world.service.refundReviews.count == 1 && world.service.refundReviews[0].preference.rawValue == "DECLINE")
        #expect(world.service.refundReviews[0].consumptionPercentageMilliunits == 100_000)
        let unknown = try caller.reviewRefund(package: Self.game, orderID: "GPA.0000-0000", review: answer)
        guard case .refused(404?, _) = unknown else {
            Issue.record("an unknown order: \(unknown)")
            return
        }
        // A pending refund token Google never announced for the order: refused, its status kept.
        let stranger = RefundReview(
            pendingRefundToken: "prt-never-announced", sampleContentProvided: false, preference: .neutral, consumptionMilliunits: nil)
        let refused = try caller.reviewRefund(package: Self.game, orderID: order!, review: stranger)
        guard case .refused(let status?, _) = refused, (400..<500).contains(status), status != 404 else {
            Issue.record("a review of a token never announced: \(refused)")
            return
        }
        // One access token, with both scopes, served every question.
        #expect(world.calls(.token) == 1)
        // A garbage pull is retried, never believed.
        world.service.setFaults(PlayFaultPlan(rules: [.next(1, [.repeatedKey], endpoint: .pubsubPull)]))
        #expect(try caller.pull(maxMessages: 10).isEmpty)
        #expect(world.calls(.pubsubPull) == 4)
    }

    @Test("the token endpoint silent or failing: Play is given up with the reason, no question asked")
    func tokenEndpointDown() throws {
        let world = try World()
        world.service.setFaults(PlayFaultPlan(rules: [.share(1, of: [.internalError], endpoint: .token)]))
        var caller = world.caller()
        let line = Self.failure(.temporary) { _ = try caller.purchase(package: Self.game, token: "tok-bought-1") }
        #expect(line.contains("did not give a token") && line.contains("run again later"), "\(line)")
        // The failure is remembered a minute: the next question is told at once, Google not asked again.
        _ = Self.failure(.temporary) { _ = try caller.purchase(package: Self.game, token: "tok-bought-1") }
        #expect(world.calls(.token) == GoogleTokens.attempts)
        #expect(world.calls(.token) == GoogleTokens.attempts && world.calls(.productPurchase) == 0)
    }
}
