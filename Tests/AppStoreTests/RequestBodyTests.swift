import AppStore
import Foundation
import Testing

@Suite("verifyReceipt request body")
struct RequestBodyTests {
    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        let any = try JSONSerialization.jsonObject(with: Data(bytes))
        return try #require(any as? [String: Any])
    }

    @Test func carriesReceiptDataAndPassword() throws {
        let body = VerifyReceipt.requestBody(receiptData: "ewoJInNpZ25h+/dHVyZSI=", password: "s3cr3t")
        let json = try object(body)
        #expect(json.count == 2)
        #expect(json["receipt-data"] as? String == "ewoJInNpZ25h+/dHVyZSI=")
        #expect(json["password"] as? String == "s3cr3t")
    }

    @Test func omitsPasswordWhenNil() throws {
        let body = VerifyReceipt.requestBody(receiptData: "abc=", password: nil)
        #expect(String(decoding: body, as: UTF8.self) == #"{"receipt-data":"abc="}"#)
        #expect(try object(body).keys.sorted() == ["receipt-data"])
    }

    @Test(arguments: ["a\"b", "back\\slash", "line\nbreak\r\t", "\u{01}ctl\u{1F}", "ünïcødé ✓ 😀", ""])
    func escapesEveryString(_ text: String) throws {
        let json = try object(VerifyReceipt.requestBody(receiptData: text, password: text))
        #expect(json["receipt-data"] as? String == text)
        #expect(json["password"] as? String == text)
    }
}
