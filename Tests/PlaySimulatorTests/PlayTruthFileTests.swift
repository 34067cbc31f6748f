// The Play truth's TSV file (what `iap-sim serve --play-truth` reads and the data generator will
// write) and the service-account key file `iap-sim play-key` writes.

import Foundation
import PlaySimulator
import PlayStore
import Testing

@Suite("Google Play simulator: truth file and key file")
struct PlayTruthFileTests {
    static let truth = PlayTruth(
        purchases: PlayWorld.truth.purchases + [
            PlayTruth.Purchase(
                packageName: PlayWorld.game, purchaseToken: "tok-refunded", orderID: "GPA.2222-3333-4444-55555",
                productID: "no_ads", state: .cancelled, acknowledged: true, completionTimeMs: PlayWorld.start,
                regionCode: "JP", obfuscatedAccountID: "a/b+c=", refundableQuantity: 0, consumptionState: "CONSUMED",
                total: .init(currency: "JPY", units: 1200),
                tax: .init(currency: "JPY", units: -109, nanos: -90_000_001),
                developerRevenue: .init(currency: "JPY", units: 0, nanos: -500_000_000), orderState: "REFUNDED")
        ],
        voided: [
            PlayTruth.Voided(
                packageName: PlayWorld.game, purchaseToken: "tok-refunded", orderID: "GPA.2222-3333-4444-55555",
                purchaseTimeMs: PlayWorld.start - 1000, voidedTimeMs: PlayWorld.start, source: 2, reason: 7),
            PlayTruth.Voided(
                packageName: PlayWorld.game, purchaseToken: "tok-several", orderID: nil,
                purchaseTimeMs: PlayWorld.start - 5000,
                voidedTimeMs: PlayWorld.start - 10, source: 1, reason: 3, voidedQuantity: 2),
        ],
        notifications: [
            PlayTruth.Notification(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start - 100, publishTimeMs: PlayWorld.start + 4000,
                kind: .voidedPurchase(
                    purchaseToken: "tok-refunded", orderID: "GPA.2222-3333-4444-55555", productType: 2, refundType: 1)),
            PlayTruth.Notification(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start - 200,
                kind: .oneTimeProduct(notificationType: 2, purchaseToken: "tok-pending-test", sku: "gems.big")),
            PlayTruth.Notification(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-1", orderID: "GPA.1111-2222-3333-44444", refundReason: 7,
                    obfuscatedAccountID: "a/b+c=")),
            PlayTruth.Notification(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start + 1,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-2", orderID: "GPA.1111-2222-3333-55555", refundReason: 0,
                    obfuscatedAccountID: nil)),
            PlayTruth.Notification(packageName: PlayWorld.otherApp, eventTimeMs: PlayWorld.start, kind: .test),
        ])

    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("play-truth-\(UUID().uuidString).tsv").path
    }

    @Test("write then read gives the same truth, every field, absent ones and negative money too")
    func roundTrip() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.truth.write(to: path)
        let read = try PlayTruth.read(path: path)
        #expect(read == Self.truth)
        #expect(read.notifications.count == 5)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(
            text.hasPrefix(
                PlayTruth.purchaseHeader + "\n" + PlayTruth.voidedHeader + "\n" + PlayTruth.notificationHeader + "\n"))
        #expect(
            text.contains(
                "\nnotification\tcom.example.game\t1794999999900\t1795000004000\tvoided_purchase\ttok-refunded"
                    + "\tGPA.2222-3333-4444-55555\t-\t-\t2\t1\t-\t-\n"))
        let test = "\nnotification\tcom.example.other\t1795000000000\t1795000000000\ttest"
        #expect(text.contains(test + String(repeating: "\t-", count: 8) + "\n"))
        #expect(text.contains("\tJPY:-109.090000001\t"))
        #expect(text.contains("\tJPY:-0.5\t"))
        #expect(text.contains("\tEUR:12.99\t"))
        let pendingLine = try #require(text.split(separator: "\n").first { $0.contains("tok-pending-test") })
        #expect(pendingLine.split(separator: "\t")[3] == "-")
    }

    @Test("a file written before notifications (two header lines) still reads; the third header is optional")
    func olderFile() throws {
        let rows = Self.truth.fileText().split(separator: "\n").filter { !$0.hasPrefix("#notification") }
        let old = try PlayTruth.parse(rows.joined(separator: "\n"))
        #expect(old == Self.truth)
        let purchasesOnly = PlayTruth(purchases: Self.truth.purchases, voided: Self.truth.voided)
        let lines = purchasesOnly.fileText().split(separator: "\n").filter { !$0.hasPrefix("#notification") }
        #expect(try PlayTruth.parse(lines.joined(separator: "\n") + "\n") == purchasesOnly)
    }

    @Test(
        "a bad line is refused with its number and what is wrong",
        arguments: [
            ("a kind nobody knows", "refund\tx", "not purchase, voided or notification"),
            ("too few columns", "voided\tcom.example.game\ttok", "3 columns, not 9"),
            (
                "a state Google has not",
                "purchase\tcom.example.game\ttok\t-\tp\t1\tDONE\ttrue\t1795000000000\t-\t-\tfalse"
                    + "\t1\tX\tUSD:1\tUSD:0\tUSD:0.7\tPROCESSED", "state \"DONE\""
            ),
            (
                "money without a currency",
                "purchase\tcom.example.game\ttok\t-\tp\t1\tPURCHASED\ttrue\t1795000000000\t-\t-"
                    + "\tfalse\t1\tX\t1.99\tUSD:0\tUSD:0.7\tPROCESSED", "total \"1.99\" is not CUR:amount"
            ),
            (
                "PURCHASED without a completion time",
                "purchase\tcom.example.game\ttok\t-\tp\t1\tPURCHASED\ttrue\t-\t-\t-"
                    + "\tfalse\t1\tX\tUSD:1\tUSD:0\tUSD:0.7\tPROCESSED", "needs a completion time"
            ),
            ("a reason past 8", "voided\tcom.example.game\ttok\t-\t1795000000000\t1795000000001\t0\t9\t-", "reason 9"),
            (
                "a boolean spelt yes", "voided\tcom.example.game\ttok\t-\t1795000000000\t1795000000001\tyes\t0\t-",
                "source \"yes\" is not a whole number"
            ),
            ("too few notification columns", "notification\tcom.example.game\t1795000000000", "3 columns, not 13"),
            (
                "a notification kind nobody knows",
                "notification\tcom.example.game\t1795000000000\t-\trefund\t-\t-\t-\t-\t-\t-\t-\t-", "kind \"refund\""
            ),
            (
                "a test notification with a token",
                "notification\tcom.example.game\t1795000000000\t-\ttest\ttok\t-\t-\t-\t-\t-\t-\t-", "has no token"
            ),
            (
                "a voided notification without its order",
                "notification\tcom.example.game\t1795000000000\t-\tvoided_purchase\ttok\t-\t-\t-\t2\t1\t-\t-",
                "needs order"
            ),
            (
                "a refund type Google has not",
                "notification\tcom.example.game\t1795000000000\t-\tvoided_purchase\ttok\tGPA.1-2\t-\t-\t2\t3\t-\t-",
                "refund type 3"
            ),
            (
                "a one-time notification type 3",
                "notification\tcom.example.game\t1795000000000\t-\tone_time_product\ttok\t-\tcoins\t3\t-\t-\t-\t-",
                "notification type 3"
            ),
            (
                "a one-time notification with a refund reason",
                "notification\tcom.example.game\t1795000000000\t-\tone_time_product\ttok\t-\tcoins\t1\t-\t-\t7\t-",
                "has no refund_reason"
            ),
            (
                "published before its event",
                "notification\tcom.example.game\t1795000000000\t1794999999999\ttest\t-\t-\t-\t-\t-\t-\t-\t-",
                "published before its event"
            ),
            (
                "an event time that is no number",
                "notification\tcom.example.game\tyesterday\t-\ttest\t-\t-\t-\t-\t-\t-\t-\t-",
                "event_ms \"yesterday\" is not a whole number"
            ),
        ])
    func badLine(_ args: (String, String, String)) throws {
        let (what, line, problem) = args
        let text = PlayTruth.purchaseHeader + "\n" + PlayTruth.voidedHeader + "\n\n" + line + "\n"
        do {
            _ = try PlayTruth.parse(text, path: "truth.tsv")
            Issue.record("\(what): read")
        } catch {
            #expect(error.line == 4, "\(what)")
            #expect(error.description.hasPrefix("truth.tsv:4: "), "\(what)")
            #expect(error.problem.contains(problem), "\(what): \(error.problem)")
        }
    }

    @Test("a file without the headers, or naming a token twice, is refused")
    func badFile() throws {
        #expect(throws: PlayTruthFileError.self) { try PlayTruth.parse("purchase\tx\n") }
        var twice = Self.truth
        twice.purchases.append(twice.purchases[0])
        do {
            _ = try PlayTruth.parse(twice.fileText())
            Issue.record("a token named twice was read")
        } catch {
            #expect(error.problem.contains("named twice"))
        }
        #expect(throws: PlayTruthFileError.self) { try twice.write(to: temporaryPath()) }
        var crossed = Self.truth
        crossed.notifications.append(
            PlayTruth.Notification(
                packageName: PlayWorld.game, eventTimeMs: PlayWorld.start,
                kind: .pendingRefundReview(
                    pendingRefundToken: "prt-1", orderID: "GPA.1111-2222-3333-55555", refundReason: 7,
                    obfuscatedAccountID: nil)))
        do {
            _ = try PlayTruth.parse(crossed.fileText())
            Issue.record("a pending refund token announced for two orders was read")
        } catch {
            #expect(error.line == 0)
            #expect(error.problem == "notification 6: its pending refund token is announced for two orders")
        }
    }

    @Test("play-key's file is a service-account key the job reads; a new key each time")
    func keyFile() throws {
        let file = try PlayKeyFile.new(email: "batch@studio.iam.gserviceaccount.com")
        let account = try ServiceAccount(keyFile: file)
        #expect(account.clientEmail == "batch@studio.iam.gserviceaccount.com")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.keyID?.count == 40)
        let json = try #require(jsonObject(file))
        #expect(json["type"] as? String == "service_account")
        #expect((json["private_key"] as? String)?.hasPrefix("-----BEGIN PRIVATE KEY-----\n") == true)
        #expect(json["project_id"] as? String == "studio")
        let config = try PlaySimulatorConfig(keyFile: file)
        let claims = AssertionCheck.verify(
            account.assertion(scopes: [GoogleOAuth.androidPublisherScope], now: 1_800_000_000), key: config.publicKey,
            issuer: config.clientEmail, audience: config.tokenAudience, now: 1_800_000_000)
        #expect((try? claims.get())?.issuer == "batch@studio.iam.gserviceaccount.com")
        let other = try ServiceAccount(keyFile: try PlayKeyFile.new())
        #expect(other.clientEmail == PlayKeyFile.defaultEmail)
        let crossed = AssertionCheck.verify(
            other.assertion(scopes: ["x"], now: 1_800_000_000), key: config.publicKey, issuer: other.clientEmail,
            audience: config.tokenAudience, now: 1_800_000_000)
        #expect((try? crossed.get()) == nil)
    }
}
