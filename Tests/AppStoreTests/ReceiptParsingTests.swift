@testable import AppStore
import Reconciliation
import Testing

/// The transactions of ok answers, from the seed samples (Fixtures/) and small inline bodies.
@Suite("receipt parsing")
struct ReceiptParsingTests {
    static let renxuetang = "com.renxuetang.student.2c.test"

    // MARK: Seed 000 (Objective-C print style: bare numbers)

    @Test func ios6AutoRenewableWithLatestReceiptInfoObject() throws {
        let answer = try fixture("ios6_auto_renewable", environment: .sandbox)
        #expect(answer.answerClass == .ok)
        #expect(answer.status == 0)
        #expect(answer.bundleID == "com.longtugame.demo")
        // `receipt` and `latest_receipt_info` are the same transaction: one row, the receipt's
        // values on a tie (its dates carry the milliseconds).
        #expect(answer.transactions == [
            AppleTransaction(
                transactionID: "1000000315361723", originalTransactionID: "1000000314663763",
                productID: "com.longtugame.demo.d5", quantity: 1, purchaseDate: 1_500_001_725_503,
                originalPurchaseDate: 1_499_853_264_000, expiresDate: 1_500_001_905_503,
                webOrderLineItemID: "1000000035615774", environment: .sandbox, bundleID: "com.longtugame.demo"),
        ])
    }

    @Test func ios6NonRenewing() throws {
        let answer = try fixture("ios6_non_renewing")
        #expect(answer.answerClass == .ok)
        #expect(answer.transactions == [
            AppleTransaction(
                transactionID: "1000000315361266", originalTransactionID: "1000000315361266",
                productID: "com.longtugame.demo.d6", quantity: 1, purchaseDate: 1_500_001_610_927,
                originalPurchaseDate: 1_500_001_610_927, environment: .production, bundleID: "com.longtugame.demo"),
        ])
    }

    // MARK: Seed 003 (PHP dump style: strings, a bool)

    @Test func ios6NonRenewingRefunded() throws {
        let answer = try fixture("ios6_non_renewing_refunded")
        #expect(answer.bundleID == "com.test")
        #expect(answer.transactions == [
            AppleTransaction(
                transactionID: "1000000590401852", originalTransactionID: "1000000590401852", productID: "10000607",
                quantity: 1, purchaseDate: 1_573_451_730_025, originalPurchaseDate: 1_573_451_730_025,
                cancellationDate: 12_123_123_123, isTrialPeriod: false, environment: .production, bundleID: "com.test"),
        ])
    }

    static func renewal(cancelled: Bool) -> AppleTransaction {
        AppleTransaction(
            transactionID: "1000000590405851", originalTransactionID: "1000000588936659", productID: "10000001",
            quantity: 1, purchaseDate: 1_573_452_848_561, originalPurchaseDate: 1_573_049_528_000,
            expiresDate: 1_573_453_028_561, cancellationDate: cancelled ? 12_123_123_123 : nil,
            isTrialPeriod: false, environment: .production, bundleID: renxuetang)
    }

    static let expiredRenewal = AppleTransaction(
        transactionID: "1000000590411796", originalTransactionID: "1000000588936659", productID: "10000001",
        quantity: 1, purchaseDate: 1_573_453_748_000, originalPurchaseDate: 1_573_049_528_000,
        expiresDate: 1_573_453_928_000, isTrialPeriod: false, webOrderLineItemID: "1000000048147451",
        environment: .production, bundleID: renxuetang)

    @Test func ios6AutoRenewableWithLatestExpiredReceiptInfo() throws {
        let answer = try fixture("ios6_auto_renewable_expired_info")
        #expect(answer.answerClass == .ok)
        #expect(answer.bundleID == Self.renxuetang)
        #expect(answer.transactions == [Self.renewal(cancelled: true), Self.expiredRenewal])
    }

    @Test func status21006KeepsTransactions() throws {
        let answer = try fixture("status_21006_expired")
        #expect(answer.answerClass == .ok)
        #expect(answer.status == 21006)
        #expect(answer.transactions == [Self.renewal(cancelled: false), Self.expiredRenewal])
    }

    // MARK: iOS 7 style

    @Test func ios7InAppAndLatestReceiptInfoArrays() throws {
        let answer = try fixture("ios7_auto_renewable")
        #expect(answer.answerClass == .ok)
        #expect(answer.bundleID == Self.renxuetang)
        // First-seen order; the receipt's own original_purchase_date is not a transaction;
        // pending_renewal_info is not a transaction.
        #expect(answer.transactions.map(\.transactionID)
                == ["1000000590405851", "1000000590401900", "1000000588936659", "1000000590411796"])
        // in_app lacks web_order_line_item_id / is_trial_period for the renewal; the merge fills them.
        let renewal = try #require(answer.transaction("1000000590405851"))
        #expect(renewal.webOrderLineItemID == "1000000048147450")
        #expect(renewal.isTrialPeriod == false)
        #expect(renewal.expiresDate == 1_573_453_028_561)
        let trial = try #require(answer.transaction("1000000588936659"))
        #expect(trial.isTrialPeriod == true)
        #expect(trial.purchaseDate == 1_573_049_528_000)
        #expect(trial.originalTransactionID == "1000000588936659")
        let coins = try #require(answer.transaction("1000000590401900"))
        #expect(coins == AppleTransaction(
            transactionID: "1000000590401900", originalTransactionID: "1000000590401900", productID: "10000607",
            quantity: 5, purchaseDate: 1_573_452_000_000, originalPurchaseDate: 1_573_452_000_000,
            isTrialPeriod: false, environment: .production, bundleID: Self.renxuetang))
        let latest = try #require(answer.transaction("1000000590411796"))
        #expect(latest.purchaseDate == 1_573_453_748_000)
        #expect(latest.expiresDate == 1_573_453_928_000)
        #expect(answer.transactions.allSatisfy { $0.cancellationDate == nil && $0.environment == .production })
    }

    @Test func ios7Refunded() throws {
        let answer = try fixture("ios7_refunded")
        #expect(answer.transactions.count == 2)
        // The cancellation is only in latest_receipt_info: it wins over in_app's clean copy.
        let renewal = try #require(answer.transaction("1000000590405851"))
        #expect(renewal.cancellationDate == 1_574_236_800_000)
        #expect(renewal.cancellationReason == "1")
        #expect(renewal.webOrderLineItemID == "1000000048147450")
        // Text-only cancellation_date, numeric cancellation_reason.
        let coins = try #require(answer.transaction("1000000590401900"))
        #expect(coins.cancellationDate == 1_574_328_615_000)
        #expect(coins.cancellationReason == "0")
    }

    @Test func stringsAndNumbersReadTheSame() throws {
        let strings = try fixture("ios7_all_strings")
        let numbers = try fixture("ios7_all_numbers")
        #expect(strings.status == 0)  // "status": "0"
        #expect(strings.answerClass == .ok)
        #expect(strings == numbers)
        #expect(numbers.transactions == [
            AppleTransaction(
                transactionID: "1000000590401901", originalTransactionID: "1000000590401901", productID: "10000607",
                quantity: 3, purchaseDate: 1_573_452_000_000, originalPurchaseDate: 1_573_452_000_000,
                isTrialPeriod: false, environment: .production, bundleID: Self.renxuetang),
            AppleTransaction(
                transactionID: "1000000590405852", originalTransactionID: "1000000588936659", productID: "10000001",
                quantity: 1, purchaseDate: 1_573_452_848_561, originalPurchaseDate: 1_573_049_528_000,
                expiresDate: 1_573_453_028_561, cancellationDate: 1_573_460_000_000, cancellationReason: "0",
                isTrialPeriod: true, webOrderLineItemID: "1000000048147452", environment: .production,
                bundleID: Self.renxuetang),
        ])
    }

    @Test func emptyInApp() throws {
        let answer = try fixture("ios7_empty_in_app")
        #expect(answer == Answer(status: 0, answerClass: .ok, bundleID: Self.renxuetang))
    }

    @Test func missingOptionalFields() throws {
        let answer = try fixture("ios7_missing_fields", environment: .sandbox)
        #expect(answer.answerClass == .ok)
        #expect(answer.transactions == [
            // No quantity, no original_transaction_id, only the text purchase_date.
            AppleTransaction(transactionID: "1000000600000001", originalTransactionID: "1000000600000001",
                             productID: "10000607", quantity: 1, purchaseDate: 1_575_195_630_000,
                             environment: .sandbox, bundleID: Self.renxuetang),
            // No purchase date at all: the original purchase date stands in.
            AppleTransaction(transactionID: "1000000600000002", originalTransactionID: "1000000600000002",
                             productID: "10000002", quantity: 1, purchaseDate: 1_575_195_630_000,
                             originalPurchaseDate: 1_575_195_630_000, environment: .sandbox,
                             bundleID: Self.renxuetang),
            // No quantity, no dates, no product: defaults.
            AppleTransaction(transactionID: "1000000600000004", originalTransactionID: "1000000600000004",
                             productID: "", quantity: 1, purchaseDate: 0, environment: .sandbox,
                             bundleID: Self.renxuetang),
        ])
    }

    // MARK: Big numbers

    @Test func bigTransactionIDsStayExact() throws {
        let answer = try fixture("big_ids")
        #expect(answer.transactions.map(\.transactionID) == [
            "1000000315361723", "9223372036854775807", "9223372036854775808", "12345678901234567890",
        ])
        #expect(answer.transactions.map(\.originalTransactionID) == [
            "1000000314663763", "9223372036854775806", "18446744073709551615", "12345678901234567890",
        ])
        // 2^53 + 1: a Double would make it ...992.
        #expect(answer.transactions[1].webOrderLineItemID == "9007199254740993")
    }

    @Test(arguments: ["1", "1000000315361723", "9007199254740993", "9223372036854775807",
                      "9223372036854775808", "18446744073709551616", "00012"])
    func idAsNumberKeepsItsDigits(_ digits: String) {
        // Bare numbers as the JSON grammar allows them ("00012" only inside a string).
        let bare = digits.hasPrefix("0") ? "\"\(digits)\"" : digits
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":\#(bare),"original_transaction_id":\#(bare),"web_order_line_item_id":\#(bare)}}"#
        let answer = classify(body)
        #expect(answer.transactions.map(\.transactionID) == [digits])
        #expect(answer.transactions.first?.originalTransactionID == digits)
        #expect(answer.transactions.first?.webOrderLineItemID == digits)
    }

    @Test(arguments: [("1500001725000", 1_500_001_725_000), ("\"1500001725000\"", 1_500_001_725_000),
                      ("0", 0), ("253402300799999", 253_402_300_799_999)]
          as [(String, Int64)])
    func millisecondSpellings(_ raw: String, _ ms: Int64) {
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":"1","purchase_date_ms":\#(raw)}}"#
        #expect(classify(body).transactions.first?.purchaseDate == ms)
    }

    // MARK: Dates

    @Test(arguments: [
        // *_ms wins over the text.
        (#""purchase_date_ms":"1000","purchase_date":"2017-07-14 03:08:45 Etc/GMT""#, 1000),
        (#""purchase_date":"2017-07-14 03:08:45 Etc/GMT","purchase_date_ms":1000"#, 1000),
        // Text when *_ms is missing.
        (#""purchase_date":"2017-07-14 03:08:45 Etc/GMT""#, 1_500_001_725_000),
        (#""purchase_date":"2020-02-29 23:59:59 Etc/GMT""#, 1_583_020_799_000),
        (#""purchase_date":"2000-03-01 00:00:00 Etc/GMT""#, 951_868_800_000),
        // iOS 6 style digits in the plain field.
        (#""purchase_date":"1500001725503""#, 1_500_001_725_503),
        // The PST text alone is not used.
        (#""purchase_date_pst":"2017-07-13 20:08:45 America/Los_Angeles""#, 0),
    ] as [(String, Int64)])
    func purchaseDateSources(_ fields: String, _ ms: Int64) {
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":"1",\#(fields)}}"#
        #expect(classify(body).transactions.first?.purchaseDate == ms)
    }

    @Test(arguments: [
        (#""expires_date":1500001905000,"expires_date_formatted":"2017-07-14 03:11:45 Etc/GMT""#, 1_500_001_905_000),
        (#""expires_date":"1500001905000""#, 1_500_001_905_000),
        (#""expires_date_formatted":"2017-07-14 03:11:45 Etc/GMT""#, 1_500_001_905_000),
        (#""expires_date":"2017-07-14 03:11:45 Etc/GMT","expires_date_ms":"1500001905123""#, 1_500_001_905_123),
        (#""expires_date":"2017-07-14 03:11:45 Etc/GMT""#, 1_500_001_905_000),
    ] as [(String, Int64)])
    func expiresDateStyles(_ fields: String, _ ms: Int64) {
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":"1",\#(fields)}}"#
        #expect(classify(body).transactions.first?.expiresDate == ms)
    }

    @Test(arguments: [("true", true), ("false", false), (#""true""#, true), (#""false""#, false),
                      ("1", true), ("0", false), (#""1""#, true), (#""0""#, false)]
          as [(String, Bool?)])
    func trialPeriodSpellings(_ raw: String, _ flag: Bool?) {
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":"1","is_trial_period":\#(raw)}}"#
        #expect(classify(body).transactions.first?.isTrialPeriod == flag)
    }

    @Test(arguments: [(#""1""#, 1), ("2", 2), (#""10""#, 10), ("10000", 10_000), (#""00003""#, 3)]
          as [(String, Int)])
    func quantitySpellings(_ raw: String, _ quantity: Int) {
        let body = #"{"status":0,"receipt":{"bid":"b","transaction_id":"1","quantity":\#(raw)}}"#
        #expect(classify(body).transactions.first?.quantity == quantity)
    }

    @Test func escapedStringsAreDecoded() {
        let body = #"{"status":0,"receipt":{"bundle_id":"com.\u0065x\/app","in_app":[{"transaction\u005fid":"1\u0030","product_id":"caf\u00e9 \ud83d\ude00 \"q\"","quantity":"\u0032"}]}}"#
        let answer = classify(body)
        #expect(answer.bundleID == "com.ex/app")
        #expect(answer.transactions.map(\.transactionID) == ["10"])
        #expect(answer.transactions.first?.productID == "café 😀 \"q\"")
        #expect(answer.transactions.first?.quantity == 2)
    }

    // MARK: De-duplication

    @Test func duplicatesAcrossInAppAndLatestReceiptInfo() {
        let body = #"""
        {"status":0,
         "receipt":{"bundle_id":"b","in_app":[
            {"transaction_id":"7","product_id":"p","purchase_date_ms":"100","cancellation_date_ms":"500"},
            {"transaction_id":"8","product_id":"p","purchase_date_ms":"100","cancellation_date_ms":"900"},
            {"transaction_id":"7","product_id":"p","purchase_date_ms":"100"}]},
         "latest_receipt_info":[
            {"transaction_id":"7","original_transaction_id":"6","product_id":"p","quantity":"1","purchase_date_ms":"101",
             "original_purchase_date_ms":"50","expires_date_ms":"200","web_order_line_item_id":"77","is_trial_period":"false"},
            {"transaction_id":"8","product_id":"p","purchase_date_ms":"100","cancellation_date_ms":"800","cancellation_reason":"1"}],
         "latest_expired_receipt_info":[{"transaction_id":"7","product_id":"p","purchase_date_ms":"100"}]}
        """#
        let answer = classify(body)
        #expect(answer.transactions == [
            // The most complete copy (latest_receipt_info) is the base; the cancellation from in_app stays.
            AppleTransaction(transactionID: "7", originalTransactionID: "6", productID: "p", quantity: 1,
                             purchaseDate: 101, originalPurchaseDate: 50, expiresDate: 200, cancellationDate: 500,
                             isTrialPeriod: false, webOrderLineItemID: "77", environment: .production, bundleID: "b"),
            // Two cancellation dates: the earliest, and the reason from wherever it is.
            AppleTransaction(transactionID: "8", originalTransactionID: "8", productID: "p", quantity: 1,
                             purchaseDate: 100, cancellationDate: 800, cancellationReason: "1",
                             environment: .production, bundleID: "b"),
        ])
    }

    // MARK: Bundles

    @Test func wrongBundleIsRejected() throws {
        let answer = try fixture("ios7_auto_renewable", allowedBundles: ["com.example.game"])
        #expect(answer == Answer(status: 0, answerClass: .reject, bundleID: Self.renxuetang,
                                 rejection: .wrongBundle,
                                 problem: "bundle com.renxuetang.student.2c.test is not allowed"))
    }

    @Test func allowedBundleOrNoListIsOk() throws {
        let allowed = try fixture("ios7_auto_renewable", allowedBundles: ["com.example.game", Self.renxuetang])
        let open = try fixture("ios7_auto_renewable", allowedBundles: [])
        #expect(allowed.answerClass == .ok)
        #expect(allowed.transactions.count == 4)
        #expect(allowed == open)
    }

    @Test func ios6BidIsTheBundle() throws {
        #expect(try fixture("ios6_non_renewing", allowedBundles: ["com.longtugame.demo"]).answerClass == .ok)
        let other = try fixture("ios6_non_renewing", allowedBundles: ["com.longtugame"])
        #expect(other.answerClass == .reject)
        #expect(other.rejection == .wrongBundle)
        #expect(other.bundleID == "com.longtugame.demo")
        #expect(other.transactions.isEmpty)
    }

    @Test func expiredReceiptOfAnotherAppIsRejectedToo() throws {
        let answer = try fixture("status_21006_expired", allowedBundles: ["com.example.game"])
        #expect(answer.status == 21006)
        #expect(answer.answerClass == .reject)
        #expect(answer.rejection == .wrongBundle)
    }

    @Test func foreignBundleOnATransactionIsRejected() {
        let body = #"{"status":0,"receipt":{"bundle_id":"ours","in_app":[]},"latest_receipt_info":[{"transaction_id":"1","bid":"theirs"}]}"#
        #expect(classify(body).answerClass == .ok)
        let answer = classify(body, allowedBundles: ["ours"])
        #expect(answer.answerClass == .reject)
        #expect(answer.rejection == .wrongBundle)
        #expect(answer.problem == "bundle theirs is not allowed")
        #expect(classify(body, allowedBundles: ["ours", "theirs"]).answerClass == .ok)
    }

    @Test func receiptWithoutBundleIsRejectedOnlyWhenBundlesAreChecked() {
        let body = #"{"status":0,"receipt":{"in_app":[{"transaction_id":"1"}]}}"#
        let open = classify(body)
        #expect(open.answerClass == .ok)
        #expect(open.bundleID == nil)
        #expect(open.transactions.first?.bundleID == nil)
        let checked = classify(body, allowedBundles: ["ours"])
        #expect(checked.answerClass == .reject)
        #expect(checked.rejection == .wrongBundle)
        #expect(checked.problem == "receipt names no bundle id")
    }

    // MARK: Every fixture

    @Test(arguments: Fixture.all)
    func everyFixtureIsOkAndComplete(_ name: String) throws {
        let answer = try fixture(name, environment: .sandbox)
        #expect(answer.answerClass == .ok, "\(name): \(answer.problem ?? "")")
        #expect(answer.problem == nil)
        #expect(answer.bundleID != nil)
        for t in answer.transactions {
            #expect(!t.transactionID.isEmpty && !t.originalTransactionID.isEmpty)
            #expect(t.environment == .sandbox)
            #expect(t.quantity >= 1)
            #expect(t.bundleID == answer.bundleID)
        }
        #expect(Set(answer.transactions.map(\.transactionID)).count == answer.transactions.count)
    }

    @Test("the collector merges repeated transaction ids alike below, at and past the count it scans")
    func collectorMerges() {
        for count in [1, 3, 15, 16, 17, 40] {
            var collector = Collector()
            // Each id twice: first with a quantity, then with a product; merged, each has both.
            for i in 0..<(count * 2) {
                var p = PartialTransaction(transactionID: String(1000 + i % count))
                if i < count { p.quantity = i + 1 } else { p.productID = "p\(i % count)" }
                collector.add(p)
            }
            #expect(collector.partials.map(\.transactionID) == (0..<count).map { String(1000 + $0) }, "\(count)")
            #expect(collector.partials.enumerated().allSatisfy { $1.quantity == $0 + 1 && $1.productID == "p\($0)" }, "\(count)")
        }
    }

    @Test("an app receipt's date read from its bytes is UTC.parse's reading, on every form near it")
    func zuluDatesFromTheBytes() {
        let texts = [
            "2026-11-19T08:00:00Z", "2026-11-19T08:00:00z", "2026-11-19 08:00:00Z", "2024-02-29T23:59:59Z",
            "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
            "2026-11-19T24:00:00Z", "2026-11-19T23:60:00Z", "2026-11-19T23:59:60Z", "2026-11-19T23:59:61Z",
            "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-11-19T08:00:0AZ", "+026-11-19T08:00:00Z",
            "2026-11-19T08:00:00", "2026-11-19T08:00:00.5Z", "2026-11-19X08:00:00Z", "2026/11/19T08:00:00Z",
            "2026-11-19T08:00:00+", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "",
            // With milliseconds (the simulator's form): 24 bytes.
            "2026-11-19T08:00:00.000Z", "2026-11-19T08:00:00.999Z", "2024-02-29T23:59:59.123z",
            "2026-11-19T08:00:00.12Z", "2026-11-19T08:00:00.1234Z", "2026-11-19T08:00:00,123Z",
            "2026-11-19T08:00:00.12AZ", "2026-11-19T08:00:00.-12Z", "2026-02-30T08:00:00.000Z",
            "2026-11-19T08:00:00.123+", "2026-11-19T08:00:00+0000", "2026-11-19T08:00:00.000 ",
        ]
        var read = 0
        for text in texts {
            var copy = text
            let fast = copy.withUTF8 { AppleDate.parseZulu($0) }
            if let fast {
                read += 1
                #expect(fast == UTC.parse(text), "\(text)")
            } else {
                let zulu = [20, 24].contains(text.utf8.count) && (text.hasSuffix("Z") || text.hasSuffix("z"))
                #expect(!zulu || UTC.parse(text) == nil, "declined what UTC.parse reads: \(text)")
            }
        }
        #expect(read == 11)
    }

    @Test(
        "a payload in BER's other forms reads as in Apple's DER: the same fields, the same problems in the same order")
    func payloadFormsReadAlike() throws {
        func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            let n = content.count
            let length: [UInt8] =
                n < 0x80 ? [UInt8(n)] : n < 0x100 ? [0x81, UInt8(n)] : [0x82, UInt8(n >> 8), UInt8(n & 0xFF)]
            return [tag] + length + content
        }
        func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
            let t: [UInt8] = type < 0x80 ? [UInt8(type)] : [UInt8(type >> 8), UInt8(type & 0xFF)]
            return tlv(0x30, tlv(0x02, t) + tlv(0x02, [1]) + tlv(0x04, value))
        }
        func text(_ s: String) -> [UInt8] { tlv(0x0C, Array(s.utf8)) }
        func indefinite(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { [tag | 0x20, 0x80] + content + [0, 0] }
        let date = text("2026-11-20T10:00:00.250Z")
        func purchase(_ id: String, quantity: [UInt8] = tlv(0x02, [3])) -> [UInt8] {
            attribute(1702, text("coins")) + attribute(1701, quantity) + attribute(1703, text(id))
                + attribute(1704, date)
        }
        func payload(_ purchases: [[UInt8]], set: (UInt8, [UInt8]) -> [UInt8] = tlv) -> [UInt8] {
            let top =
                attribute(0, text("ProductionSandbox")) + attribute(2, text("com.example.game")) + attribute(12, date)
            return set(0x31, top + purchases.map { attribute(17, $0) }.joined())
        }
        func read(_ bytes: [UInt8]) -> String {
            switch Result(catching: { () throws(SignedDataRejection) in try ReceiptPayload(bytes[...]) }) {
            case .success(let p):
                let purchases = p.purchases.map {
                    "\($0.transactionID) \($0.productID ?? "-") \($0.quantity ?? 0) \($0.purchaseDate ?? 0)"
                }
                return "\(p.environment ?? "-") \(p.bundleID ?? "-") \(p.creationDate ?? 0) \(purchases)"
            case .failure(let rejection): return "\(rejection)"
            }
        }
        let der = payload([tlv(0x31, purchase("1001")), tlv(0x31, purchase("1002"))])
        let purchases = "[\"1001 coins 3 1795168800250\", \"1002 coins 3 1795168800250\"]"
        #expect(read(der) == "ProductionSandbox com.example.game 1795168800250 \(purchases)")
        // The top SET indefinite; a purchase's SET indefinite; a long-form length under 128.
        let forms = [
            payload([tlv(0x31, purchase("1001")), tlv(0x31, purchase("1002"))], set: indefinite),
            payload([indefinite(0x31, purchase("1001")), tlv(0x31, purchase("1002"))]),
            payload([[0x31, 0x81, UInt8(purchase("1001").count)] + purchase("1001"), tlv(0x31, purchase("1002"))]),
        ]
        for form in forms { #expect(read(form) == read(der), "\(form.prefix(8))") }
        // Problems, in both forms: the transaction id's before the others', then the first other in order.
        for set in [tlv, indefinite] {
            let late = payload([set(0x31, purchase("12x", quantity: tlv(0x02, [0])))])
            #expect(read(late).contains("in-app 1 type 1703 (transaction id) is not 1 to 20 digits"), "\(read(late))")
            let quantity = payload([set(0x31, purchase("1001", quantity: tlv(0x02, [0])) + attribute(1706, text("x")))])
            #expect(read(quantity).contains("in-app 1 type 1701 (quantity) 0 is out of range"), "\(read(quantity))")
            let none = payload([set(0x31, attribute(1702, text("coins")) + attribute(1701, tlv(0x02, [0])))])
            #expect(read(none).contains("in-app 1 has no transaction id"), "\(read(none))")
        }
    }
}
