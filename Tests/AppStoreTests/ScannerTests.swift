import AppStore
import Foundation
import Reconciliation
import Testing

@Suite("JSON scanning and large answers")
struct ScannerAndSpeedTests {
    @Test func fieldsOfEveryShapeAreSkipped() {
        let body = #"""
        {"extra":{"a":[1,-0.5e+10,2E-3,0,-0,true,false,null,"x",{},[],{"b":[[{}]]}]},
         "status":0, "exception":"", "environment":"Sandbox",
         "receipt":{"bundle_id":"b","nested":{"transaction_id":"not-me"},"in_app":[{"transaction_id":"1",
           "unknown":[{"transaction_id":"nor-me"}],"product_id":"p"}]},
         "pending_renewal_info":[{"original_transaction_id":"1","product_id":"p","auto_renew_status":"1"}],
         "latest_receipt":"MIIT\/+=="}
        """#
        let answer = classify(body, environment: .sandbox)
        #expect(answer.answerClass == .ok)
        #expect(answer.transactions.map(\.transactionID) == ["1"])
        #expect(answer.transactions.first?.environment == .sandbox)
    }

    @Test(arguments: ["-", "1.", ".5", "1e", "+1", "tru", "nul", "\"\\u12G4\"", "\"\\u12\"", "\"a\u{01}b\"",
                      "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{1:2}", "\"abc"])
    func malformedValuesAreRefused(_ value: String) {
        let answer = classify(#"{"status":0,"receipt":{"bid":"b","transaction_id":"1"},"x":\#(value)}"#)
        #expect(answer.answerClass == .retry)
        #expect(answer.problem?.hasPrefix("body is not JSON") == true)
    }

    @Test func aRepeatedKeyIsRefused() {
        let answer = classify(#"{"status":21007,"status":0,"receipt":{"bid":"b","transaction_id":"1"}}"#)
        #expect(answer.answerClass == .retry)
        #expect(answer.problem == "duplicate key status")
    }

    /// Speed is measured by `make bench-verify`, not here: these only check that a typical and a
    /// very large answer (300 renewals twice over) come through whole.
    @Test func typicalAnswerRepeatedly() throws {
        let body = try Fixture.bytes("ios7_auto_renewable")
        var count = 0
        for _ in 0..<300 {
            count += classify(body, allowedBundles: ["com.renxuetang.student.2c.test"]).transactions.count
        }
        #expect(count == 4 * 300)
    }

    @Test func largeReceiptComesThroughWhole() {
        let entries = (0..<1600).map {
            #"{"transaction_id":"\#(1_000_000_590_000_000 + $0)","product_id":"s","purchase_date_ms":"\#($0)","original_transaction_id":"1"}"#
        }.joined(separator: ",")
        let large = Array(#"{"status":0,"receipt":{"bundle_id":"b","in_app":[\#(entries)]},"latest_receipt_info":[\#(entries)]}"#.utf8)
        let answer = classify(large)
        #expect(answer.transactions.count == 1600)
        #expect(answer.transactions.last?.transactionID == String(1_000_000_590_000_000 + 1599))
    }
}
