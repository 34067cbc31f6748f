// The answer records are written as JSON by hand (`AnswerRecord.jsonArray`); `record_answers`
// must read the same document `JSONEncoder` gave before. No database, no network.

import Foundation
import Testing

@testable import AppStore
@testable import ReconcileJob
@testable import Reconciliation

@Suite("Answer records as JSON")
struct AnswerRecordJSONTests {
    /// Text a receipt id, a problem or a product id could hold: quotes, backslashes, control
    /// characters, a slash, non-ASCII.
    static let hostile = "a\"b\\c\nd\re\tf\u{01}g\u{1F}h/i é 漏单 🙂 \u{7F}"

    static func job(_ id: String, environment: AppStoreEnvironment = .production) -> VerifyJob {
        VerifyJob(receiptID: id, receiptData: "MIIT", priorAttempts: 3, sweep: true, environment: environment,
                  sends: 1, retry: RetryPolicy.State(failedRuns: 2, runs21002: 1, switched: false),
                  startEnvironment: .sandbox)
    }

    static var records: [AnswerRecord] {
        let full = AppleTransaction(
            transactionID: "1000000000000001", originalTransactionID: "1000000000000000", productID: hostile,
            quantity: 2, purchaseDate: 1_763_000_000_123, originalPurchaseDate: -1, expiresDate: Int64.max,
            cancellationDate: Int64.min, cancellationReason: "0", isTrialPeriod: false,
            webOrderLineItemID: "42", environment: .production, bundleID: "com.example.game")
        let bare = AppleTransaction(transactionID: "2", originalTransactionID: "2", productID: "coins100", quantity: 1,
                                    purchaseDate: 0, environment: .production)
        let signed = SignedTransaction(
            transaction: full, environmentName: "Production", signedDate: 1_763_000_000_999, type: "Consumable",
            price: 6_990, currency: "CNY", storefront: "CHN", appAccountToken: "5c0d9e6c-0000-4000-8000-000000000001",
            inAppOwnershipType: "PURCHASED", transactionReason: "PURCHASE", revocationDate: 1_763_000_100_000,
            revocationReason: 1, revocationType: "REFUND_FULL", revocationPercentage: 100_000)
        let ok = Answer(status: 0, answerClass: .ok, transactions: [full, bare], bundleID: "com.example.game")
        let rejected = Answer(status: 21003, answerClass: .reject, rejection: .invalidReceipt, problem: hostile)
        let retry = Answer(status: nil, answerClass: .retry, problem: "HTTP 503")
        return [
            AnswerRecord(job: job(hostile), asked: .production, runID: 7, httpStatus: 200, answer: ok,
                         decision: .definitive, elapsedMs: 51, now: 1_763_000_000_000),
            AnswerRecord(job: job("r2"), asked: .sandbox, runID: 7, httpStatus: 200, answer: rejected,
                         decision: .definitive, elapsedMs: 0, now: 1_763_000_000_001),
            AnswerRecord(job: job("r3"), asked: .production, runID: 7, httpStatus: 503, answer: retry,
                         decision: .leaveForNextRun(eligibleAt: 1_763_003_600_000), elapsedMs: 3, now: 1_763_000_000_002),
            AnswerRecord(job: job("r4"), asked: .production, runID: 7, httpStatus: nil, answer: retry,
                         decision: .sendAgain(afterMs: 20), elapsedMs: 10_000, now: 1_763_000_000_003),
            AnswerRecord(signed: job("r5"), result: .success(signed), runID: -7, elapsedMs: 1, now: 1_763_000_000_004),
            AnswerRecord(signed: job("r6"), result: .failure(.malformed(hostile)), runID: 7, elapsedMs: 1,
                         now: 1_763_000_000_005),
        ]
    }

    @Test("the same document as JSONEncoder's: every key and value, absent fields left out")
    func sameDocumentAsJSONEncoder() throws {
        let records = Self.records
        let ours = AnswerRecord.jsonArray(records)
        let theirs = try JSONEncoder().encode(records)
        let a = try JSONSerialization.jsonObject(with: Data(ours)) as? NSArray
        let b = try JSONSerialization.jsonObject(with: theirs) as? NSArray
        #expect(a != nil)
        #expect(a == b)
        // And back through Decodable to the very same records.
        #expect(try JSONDecoder().decode([AnswerRecord].self, from: Data(ours)) == records)
        // A slice (what the writer hands over) and an empty group.
        #expect(try JSONDecoder().decode([AnswerRecord].self, from: Data(AnswerRecord.jsonArray(records[2...])))
            == Array(records[2...]))
        #expect(AnswerRecord.jsonArray([AnswerRecord]()) == Array("[]".utf8))
    }

    @Test("strings escaped as JSON requires, the rest as UTF-8; integers at their limits")
    func writerEscapes() throws {
        var json = JSONWriter()
        json.beginObject()
        json.field("s", Self.hostile)
        json.field("min", Int64.min)
        json.field("max", Int64.max)
        json.field("zero", 0)
        json.field("none", String?.none)
        json.field("t", true)
        json.key("empty")
        json.beginArray()
        json.endArray()
        json.endObject()
        let text = String(decoding: json.bytes, as: UTF8.self)
        #expect(text == #"{"s":"a\"b\\c\nd\re\tf\u0001g\u001fh/i é 漏单 🙂 \#u{7F}","min":-9223372036854775808,"#
            + #""max":9223372036854775807,"zero":0,"t":true,"empty":[]}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.bytes)) as? [String: Any])
        #expect(object["s"] as? String == Self.hostile)
    }
}
