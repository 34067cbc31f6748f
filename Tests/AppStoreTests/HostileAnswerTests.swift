import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import SimulatorData
import Testing

/// "Right to the row": a body that is not what Apple sends is `retry` with a short problem naming
/// what is wrong — never `ok`, never `reject`, never a crash. The built-in list is the one the
/// simulator's garbage mode serves (`HostileAnswers.all`); the extras below are too big for it or
/// need the fixtures.
@Suite("hostile answers")
struct HostileAnswerTests {
    /// Retry, never ok; the problem mentions `mentions`, is one printable line of at most 120
    /// characters, and no status is claimed unless the body had a valid one.
    static func expectGarbage(_ body: [UInt8], mentions: String, _ label: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        for (environment, bundles) in [(AppStoreEnvironment.production, Set<String>()),
                                       (.sandbox, ["com.example.game"])] {
            let answer = classify(body, environment: environment, allowedBundles: bundles)
            #expect(answer.answerClass == .retry, "\(label): \(answer.answerClass) \(answer.problem ?? "")",
                    sourceLocation: sourceLocation)
            #expect(answer.transactions.isEmpty, sourceLocation: sourceLocation)
            #expect(answer.rejection == nil, sourceLocation: sourceLocation)
            let problem = answer.problem ?? ""
            #expect(problem.contains(mentions), "\(label): '\(problem)' does not mention '\(mentions)'",
                    sourceLocation: sourceLocation)
            #expect(problem.count <= 120 && !problem.isEmpty, "\(label): \(problem)", sourceLocation: sourceLocation)
            #expect(problem.unicodeScalars.allSatisfy { ($0.value >= 0x20 && $0.value < 0x7F) || $0 == "…" },
                    "\(label): \(problem)", sourceLocation: sourceLocation)
        }
    }

    static func expectGarbage(_ body: String, mentions: String, sourceLocation: SourceLocation = #_sourceLocation) {
        expectGarbage(Array(body.utf8), mentions: mentions, body, sourceLocation: sourceLocation)
    }

    // MARK: The simulator's list

    @Test(arguments: HostileAnswers.all)
    func builtInGarbageIsRetried(_ body: HostileAnswers.Body) {
        Self.expectGarbage(body.bytes, mentions: body.mentions, body.name)
    }

    @Test func theListIsBigAndItsNamesAreUnique() {
        #expect(HostileAnswers.all.count >= 150)
        #expect(Set(HostileAnswers.all.map(\.name)).count == HostileAnswers.all.count)
        #expect(HostileAnswers.all.allSatisfy { $0.bytes.count < 1 << 20 })
    }

    @Test func theBuildingBlocksAreValid() {
        // The garbage is garbage because of its one change, not because the base is broken.
        #expect(classify(HostileAnswers.ios7()).answerClass == .ok)
        #expect(classify(HostileAnswers.ios7(latest: "[\(HostileAnswers.transaction())]")).answerClass == .ok)
        let ios6 = classify(HostileAnswers.ios6(latest: HostileAnswers.transaction(set: [("transaction_id", "1000000590409999")])))
        #expect(ios6.answerClass == .ok)
        #expect(ios6.transactions.map(\.transactionID) == ["1000000590401900", "1000000590409999"])
        #expect(classify(HostileAnswers.ios6(status: "21006", expired: HostileAnswers.transaction())).answerClass == .ok)
    }

    // MARK: Scanner errors say what and where

    @Test(arguments: [
        ([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D], "body is not valid UTF-8 (byte 0xFF at offset 6)"),
        (Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8), "body is not valid UTF-8 (byte 0xC0 at offset 6)"),
        (Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8), "body is not valid UTF-8 (byte 0xED at offset 6)"),
        (Array(#"{"a":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8), "body is not valid UTF-8 (byte 0xE2 at offset 6)"),
        (Array(#"{"a":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#""}"#.utf8), "body is not valid UTF-8 (byte 0xF4 at offset 6)"),
        (Array(#"{"a":""#.utf8) + [0xE2, 0x82], "body is not valid UTF-8 (byte 0xE2 at offset 6)"),
        (Array(#"{"a":1,"#.utf8) + [0xFF], "body is not valid UTF-8 (byte 0xFF at offset 7)"),
        (Array(#"{"a":1}"#.utf8) + [0xFF], "body is not valid UTF-8 (byte 0xFF at offset 7)"),
        (Array(#"{"a":1,"#.utf8) + [0xC3, 0xA9], "body is not JSON: unexpected 0xC3 at offset 7"),
        (Array(#"{"a":"\ud800"}"#.utf8), "body is not valid UTF-8 (escaped lone surrogate at offset 6)"),
        (Array(#"{"a":"x\udfff"}"#.utf8), "body is not valid UTF-8 (escaped lone surrogate at offset 7)"),
        (Array(#"{"a":"\ud800\n"}"#.utf8), "body is not valid UTF-8 (escaped lone surrogate at offset 6)"),
        (Array(#"{"a":"\ud800\u0041"}"#.utf8), "body is not valid UTF-8 (escaped lone surrogate at offset 6)"),
        (Array(#"{"a":"a"#.utf8) + [0x00] + Array(#""}"#.utf8), "body is not JSON: raw control byte 0x00 in a string at offset 7"),
        (Array(#"{"#.utf8) + [0x00] + Array(#""a":1}"#.utf8), "body is not JSON: unexpected 0x00 at offset 1"),
        (Array(#"{"a":1,"b":{"c":2,"\u0063":3}}"#.utf8), "duplicate key c"),
        (Array(#"{"status":0,"\u0073tatus":21010}"#.utf8), "duplicate key status"),
        (Array(#"{"a":tru}"#.utf8), "body is not JSON: unexpected '}' at offset 8"),
        (Array(#"{"a":1"#.utf8), "body is not JSON: unexpected end at offset 6"),
    ] as [([UInt8], String)])
    func scannerProblems(_ body: [UInt8], _ problem: String) {
        let answer = classify(body)
        #expect(answer.answerClass == .retry)
        #expect(answer.problem == problem)
    }

    @Test func validUTF8IsKeptAtEveryAlignment() {
        // Multi-byte characters before, across and after the 8-byte fast path's words.
        for pad in 0..<17 {
            let name = String(repeating: "a", count: pad) + "café ✓ 😀 Ω" + String(repeating: "b", count: 16 - pad)
            let body = HostileAnswers.ios7(inApp: "[\(HostileAnswers.transaction(set: [("product_id", "\"\(name)\"")]))]")
            let answer = classify(body)
            #expect(answer.answerClass == .ok, "\(pad): \(answer.problem ?? "")")
            #expect(answer.transactions.first?.productID == name)
        }
    }

    @Test func tenThousandLevelsDoNotOverflowTheStack() {
        for (open, close) in [("[", "]"), (#"{"a":"#, "}"), (#"{"a":["#, "]}")] {
            let body = String(repeating: open, count: 10_000) + "1" + String(repeating: close, count: 10_000)
            let answer = classify(body)
            #expect(answer.answerClass == .retry)
            #expect(answer.problem?.hasPrefix("nesting deeper than 64 levels") == true, "\(answer.problem ?? "")")
        }
        // Unclosed: refused at the same depth, not at the end.
        #expect(classify(String(repeating: "[", count: 100_000)).problem?.hasPrefix("nesting deeper than 64") == true)
    }

    // MARK: Number forms

    @Test(arguments: ["0", "-0", "0.0", "0e0", "1E3", "+1", "01", "99999999999999999999999", #""1e3""#, #""0x10""#,
                      #"" 0""#, #""0 ""#, #""0""#, #""000""#])
    func statusForms(_ raw: String) {
        let answer = classify(HostileAnswers.ios7(status: raw))
        if raw == "0" || raw == #""0""# || raw == #""000""# {
            #expect(answer.answerClass == .ok, "\(answer.problem ?? "")")
            #expect(answer.status == 0)
        } else {
            #expect(answer.answerClass == .retry)
            #expect(answer.status == nil)
            let problem = answer.problem ?? ""
            #expect(problem.hasPrefix("status ") || problem.hasPrefix("body is not JSON"), "\(problem)")
        }
    }

    @Test(arguments: ["0", "-0", "0.0", "0e0", "1E3", "+1", "01", "99999999999999999999999", #""1e3""#, #""0x10""#,
                      #"" 0""#, #""0 ""#, #""0""#])
    func transactionIDForms(_ raw: String) {
        let answer = classify(HostileAnswers.ios7(inApp: "[\(HostileAnswers.transaction(set: [("transaction_id", raw)]))]"))
        if raw == "0" || raw == #""0""# {
            #expect(answer.answerClass == .ok, "\(answer.problem ?? "")")
            #expect(answer.transactions.map(\.transactionID) == ["0"])
        } else {
            #expect(answer.answerClass == .retry)
            let problem = answer.problem ?? ""
            #expect(problem.hasPrefix("in_app[0].transaction_id ") || problem.hasPrefix("body is not JSON"), "\(problem)")
        }
    }

    @Test func twentyDigitIDsSurviveExactly() {
        let ids = ["99999999999999999999", "18446744073709551616", "00000000000000000001", "12345678901234567890"]
        let elements = ids.enumerated().map { i, id in
            let raw = i < 2 ? id : "\"\(id)\""  // two bare numbers, two strings
            return HostileAnswers.transaction(set: [("transaction_id", raw), ("original_transaction_id", raw),
                                                    ("web_order_line_item_id", raw)])
        }
        let answer = classify(HostileAnswers.ios7(inApp: "[\(elements.joined(separator: ","))]"))
        #expect(answer.answerClass == .ok, "\(answer.problem ?? "")")
        #expect(answer.transactions.map(\.transactionID) == ids)
        #expect(answer.transactions.map(\.originalTransactionID) == ids)
        #expect(answer.transactions.map(\.webOrderLineItemID) == ids)
        // Also bare numbers in an iOS 6 answer.
        let ios6 = classify(HostileAnswers.ios6(receipt: HostileAnswers.transaction(set: [
            ("transaction_id", "99999999999999999999"), ("original_transaction_id", "10000000000000000001"),
            ("bid", #""com.example.game""#)])))
        #expect(ios6.transactions.map(\.transactionID) == ["99999999999999999999"])
        #expect(ios6.transactions.map(\.originalTransactionID) == ["10000000000000000001"])
    }

    @Test(arguments: [("2", 2), (#""2""#, 2), ("10000", 10_000), (#""1""#, 1)] as [(String, Int)])
    func quantityInRange(_ raw: String, _ quantity: Int) {
        let answer = classify(HostileAnswers.ios7(inApp: "[\(HostileAnswers.transaction(set: [("quantity", raw)]))]"))
        #expect(answer.transactions.first?.quantity == quantity)
    }

    @Test(arguments: [("purchase_date_ms", "0", 0), ("purchase_date_ms", "253402300799999", 253_402_300_799_999),
                      ("purchase_date", #""1573452000000""#, 1_573_452_000_000),
                      ("purchase_date", #""2019-11-11 06:00:00 Etc/GMT""#, 1_573_452_000_000)] as [(String, String, Int64)])
    func datesInRange(_ field: String, _ raw: String, _ ms: Int64) {
        let tx = HostileAnswers.transaction(set: [(field, raw)], remove: field == "purchase_date" ? ["purchase_date_ms"] : [])
        let answer = classify(HostileAnswers.ios7(inApp: "[\(tx)]"))
        #expect(answer.answerClass == .ok, "\(answer.problem ?? "")")
        #expect(answer.transactions.first?.purchaseDate == ms)
    }

    /// Apple's date text is read by a fast path that must agree with `UTC.parse` exactly.
    @Test(arguments: ["2019-11-11 06:00:00 Etc/GMT", "2020-02-29 23:59:59 Etc/GMT", "2019-02-29 00:00:00 Etc/GMT",
                      "2000-02-29 12:00:00 Etc/GMT", "1900-02-29 12:00:00 Etc/GMT", "2019-04-31 00:00:00 Etc/GMT",
                      "2019-11-11 24:00:00 Etc/GMT", "2019-11-11 23:60:00 Etc/GMT", "2019-11-11 23:59:60 Etc/GMT",
                      "2019-13-01 00:00:00 Etc/GMT", "2019-00-01 00:00:00 Etc/GMT", "2019-11-00 00:00:00 Etc/GMT",
                      "9999-12-31 23:59:59 Etc/GMT", "1969-12-31 23:59:59 Etc/GMT", "2019-11-11 06:00:00 Etc/GMX",
                      "2019-11-11T06:00:00 Etc/GMT", "2019-11-11 06:00:00 GMT", "2019-11-11T06:00:00Z",
                      "2019-1a-11 06:00:00 Etc/GMT", "2019-11-11 06:00:00 Etc/GMT "])
    func appleDateTextAgreesWithUTCParse(_ text: String) {
        let tx = HostileAnswers.transaction(set: [("purchase_date", "\"\(text)\"")], remove: ["purchase_date_ms"])
        let answer = classify(HostileAnswers.ios7(inApp: "[\(tx)]"))
        if let ms = UTC.parse(text), ms >= 0, ms <= 253_402_300_799_999 {
            #expect(answer.transactions.first?.purchaseDate == ms, "\(answer.problem ?? "")")
        } else {
            #expect(answer.answerClass == .retry)
            #expect(answer.problem?.hasPrefix("in_app[0].purchase_date ") == true, "\(answer.problem ?? "")")
        }
    }

    // MARK: Styles

    @Test func ios6LatestReceiptInfoIsOneObject() {
        let one = classify(HostileAnswers.ios6(latest: HostileAnswers.transaction()))
        #expect(one.answerClass == .ok, "\(one.problem ?? "")")
        Self.expectGarbage(HostileAnswers.ios6(latest: "[\(HostileAnswers.transaction())]"),
                           mentions: "latest_receipt_info is an array")
        Self.expectGarbage(#"{"status":0}"#, mentions: "receipt is missing")
        Self.expectGarbage(#"{"status":21006,"latest_receipt_info":[]}"#, mentions: "receipt is missing")
    }

    // MARK: Fixtures cut short

    @Test(arguments: Fixture.all)
    func truncatedFixturesAreNeverOk(_ name: String) throws {
        let whole = try Fixture.bytes(name)
        #expect(classify(whole).answerClass == .ok)
        // Every cut up to the last non-space byte (a cut in the trailing newline is still whole).
        let end = (whole.lastIndex { $0 != 0x0A && $0 != 0x20 } ?? 0) + 1
        for cut in Array(stride(from: 0, to: end, by: 13)) + [end - 1, end / 2] {
            let answer = classify(Array(whole[0..<cut]))
            #expect(answer.answerClass == .retry, "\(name) cut at \(cut): \(answer.problem ?? "")")
            #expect(answer.problem?.hasPrefix("body is") == true, "\(name) cut at \(cut): \(answer.problem ?? "")")
        }
    }

    // MARK: Big bodies

    /// 5 MB of `latest_receipt`: valid, so ok (the job's HTTP layer caps answers at 4 MiB, but the
    /// parser itself has no size limit).
    @Test func fiveMegabyteLatestReceiptIsValid() {
        let token = String(repeating: "MIIUHwYJKoZIhvcNAQcCoIIUEDCCFAwCAQExCzAJBgUrDgMC", count: 5_000_000 / 48)
        let body = HostileAnswers.ios7(top: [("x", "\"\(token)\"")])
        #expect(body.utf8.count > 5_000_000)
        #expect(classify(body).answerClass == .ok)
    }

    @Test func fiveMegabytesOfGarbageAreRetried() {
        var rng = SeededRandom(seed: 7)
        let random = (0..<5_000_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        Self.expectGarbage(random, mentions: "body is", "5 MB of random bytes")
        Self.expectGarbage([UInt8](repeating: UInt8(ascii: "x"), count: 5_000_000), mentions: "unexpected 'x'", "5 MB of x")
        // A valid start, then 5 MB inside a string that never ends.
        Self.expectGarbage(Array(#"{"status":0,"latest_receipt":""#.utf8) + [UInt8](repeating: 0x41, count: 5_000_000),
                           mentions: "unexpected end", "unterminated 5 MB string")
        // 5 MB of base64 with one bad byte near the end.
        var bytes = Array(HostileAnswers.ios7(top: [("x", "\"" + String(repeating: "QUJD", count: 1_250_000) + "\"")]).utf8)
        let at = bytes.count - 200
        bytes[at] = 0xFE
        Self.expectGarbage(bytes, mentions: "byte 0xFE at offset \(at)", "5 MB with one bad byte")
    }

    @Test func hundredThousandTransactionsParseFast() {
        let elements = (0..<100_000).map {
            HostileAnswers.transaction(set: [("transaction_id", "\"\(1_000_000_000_000_000 + $0)\"")])
        }
        let body = Array(HostileAnswers.ios7(inApp: "[\(elements.joined(separator: ","))]").utf8)
        #expect(body.count > 5_000_000)
        let clock = ContinuousClock()
        var answer: Answer?
        let elapsed = clock.measure { answer = classify(body) }
        #expect(answer?.answerClass == .ok, "\(answer?.problem ?? "")")
        #expect(answer?.transactions.count == 100_000)
        #expect(answer?.transactions.last?.transactionID == "1000000000099999")
        #expect(elapsed < .seconds(30), "100k transactions took \(elapsed)")
    }

    @Test func hundredThousandKeysAreNotQuadratic() {
        let members = (0..<100_000).map { #""k\#($0)":\#($0)"# }
        let distinct = HostileAnswers.ios7(top: [("x", "{\(members.joined(separator: ","))}")])
        let clock = ContinuousClock()
        var answer: Answer?
        let elapsed = clock.measure { answer = classify(distinct) }
        #expect(answer?.answerClass == .ok, "\(answer?.problem ?? "")")
        #expect(elapsed < .seconds(10), "100k distinct keys took \(elapsed)")
        let repeated = HostileAnswers.ios7(top: [("x", "{\(members.joined(separator: ",")),\"k5\":0}")])
        Self.expectGarbage(repeated, mentions: "duplicate key k5")
        // Escaped spellings of the same key are found in big objects too.
        let escaped = HostileAnswers.ios7(top: [("x", "{\(members.joined(separator: ",")),\"\\u006b7\":0}")])
        Self.expectGarbage(escaped, mentions: "duplicate key k7")
    }

    // MARK: The simulator's file format

    @Test func garbageFileFormat() {
        let text = "# comment\n\n{\"status\":0}\\xFF\r\n\\x00\\x0a\\u0073 \\xZZ \\x4\n"
        let bodies = HostileAnswers.parseFile(Array(text.utf8))
        #expect(bodies.map(\.name) == ["line3", "line4"])
        #expect(bodies.first?.bytes == Array("{\"status\":0}".utf8) + [0xFF])
        #expect(bodies.last?.bytes == [0x00, 0x0A] + Array("\\u0073 \\xZZ \\x4".utf8))
    }

    @Test func pickIsDeterministicAndSpreads() {
        let list = HostileAnswers.all
        let a = (0..<50).map { HostileAnswers.pick(list, seed: 3, receiptID: "R1", callIndex: $0)?.name }
        let b = (0..<50).map { HostileAnswers.pick(list, seed: 3, receiptID: "R1", callIndex: $0)?.name }
        #expect(a == b)
        #expect(Set(a).count > 20)
        #expect(HostileAnswers.pick([], seed: 0, receiptID: nil, callIndex: 0) == nil)
    }
}

extension HostileAnswers.Body: CustomTestStringConvertible {
    public var testDescription: String { name }
}
