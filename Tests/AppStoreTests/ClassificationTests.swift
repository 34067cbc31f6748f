import AppStore
import Reconciliation
import Testing

/// Contract §3 table, one row per App Store status.
@Suite("answer classes")
struct ClassificationTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var status: Int
        var cls: AnswerClass
        var rejection: RejectionReason?
        var testDescription: String { "\(status) → \(cls.rawValue)" }
    }

    static let table: [Row] = [
        Row(status: 21007, cls: .switchEnvironment), Row(status: 21008, cls: .switchEnvironment),
        Row(status: 21005, cls: .retry), Row(status: 21009, cls: .retry), Row(status: 21002, cls: .retry),
        Row(status: 21100, cls: .retry), Row(status: 21150, cls: .retry), Row(status: 21199, cls: .retry),
        Row(status: 21003, cls: .reject, rejection: .invalidReceipt),
        Row(status: 21010, cls: .reject, rejection: .invalidReceipt),
        Row(status: 21004, cls: .config), Row(status: 21000, cls: .config),
        Row(status: 21001, cls: .retry), Row(status: 21200, cls: .retry), Row(status: 1, cls: .retry),
        // -1 is not a status Apple sends: HostileAnswerTests has it (garbage, no status).
    ]

    @Test(arguments: table)
    func statusWithoutReceipt(_ row: Row) {
        let answer = classify(#"{"status": \#(row.status)}"#)
        #expect(answer.status == row.status)
        #expect(answer.answerClass == row.cls)
        #expect(answer.rejection == row.rejection)
        #expect(answer.transactions.isEmpty)
        #expect(answer.isRetryable == nil)
        #expect(answer.problem?.contains("status \(row.status)") == true)
    }

    @Test(arguments: [21001, 21200, 1, 99999])
    func unknownStatusIsRetriedWithAProblem(_ status: Int) {
        let answer = classify(#"{"status": \#(status)}"#)
        #expect(answer.answerClass == .retry)
        #expect(answer.problem == "unknown status \(status)")
    }

    @Test func statusZeroAndSandbox() {
        let body = #"{"status":0,"receipt":{"bundle_id":"b","in_app":[{"transaction_id":"1","product_id":"p","purchase_date_ms":"5"}]}}"#
        let answer = classify(body, environment: .sandbox)
        #expect(answer == Answer(status: 0, answerClass: .ok, transactions: [
            AppleTransaction(transactionID: "1", originalTransactionID: "1", productID: "p", quantity: 1,
                             purchaseDate: 5, environment: .sandbox, bundleID: "b"),
        ], bundleID: "b"))
    }

    @Test func status21006IsOkWithData() throws {
        let answer = try fixture("status_21006_expired")
        #expect(answer.status == 21006)
        #expect(answer.answerClass == .ok)
        #expect(answer.problem == nil)
        #expect(answer.transactions.map(\.transactionID) == ["1000000590405851", "1000000590411796"])
    }

    @Test(arguments: [0, 21006])
    func okWithoutReceiptIsGarbage(_ status: Int) {
        for body in [#"{"status":\#(status)}"#, #"{"status":\#(status),"receipt":"x"}"#,
                     #"{"status":\#(status),"receipt":[]}"#, #"{"status":\#(status),"latest_receipt_info":[]}"#] {
            let answer = classify(body)
            #expect(answer.answerClass == .retry, "\(body)")
            #expect(answer.status == nil, "a garbage answer keeps no status: 0 would read as valid in unresolved.csv")
            #expect(answer.problem?.hasPrefix("receipt is ") == true, "\(answer.problem ?? "")")
        }
    }

    // MARK: is_retryable / is-retryable

    struct Retryable: CustomTestStringConvertible, Sendable {
        var field: String?
        var status: Int
        var flag: Bool?
        var cls: AnswerClass
        var testDescription: String { "\(status) \(field ?? "no flag")=\(flag.map(String.init) ?? "-") → \(cls)" }
    }

    static let retryable: [Retryable] = {
        var rows: [Retryable] = []
        for status in [21100, 21199] {
            for field in ["is_retryable", "is-retryable"] {
                for flag in [true, false] {
                    rows.append(Retryable(field: field, status: status, flag: flag, cls: flag ? .retry : .reject))
                }
            }
            rows.append(Retryable(field: nil, status: status, flag: nil, cls: .retry))
        }
        // Outside 21100–21199 the flag is reported but does not change the class.
        rows.append(Retryable(field: "is_retryable", status: 21005, flag: false, cls: .retry))
        rows.append(Retryable(field: "is-retryable", status: 21003, flag: true, cls: .reject))
        return rows
    }()

    @Test(arguments: retryable)
    func retryableFlag(_ row: Retryable) {
        let body = row.field.map { #"{"status":\#(row.status),"\#($0)":\#(row.flag! ? "true" : "false")}"# }
            ?? #"{"status":\#(row.status)}"#
        let answer = classify(body)
        #expect(answer.answerClass == row.cls)
        #expect(answer.isRetryable == row.flag)
        #expect(answer.rejection == (row.cls == .reject ? .invalidReceipt : nil))
    }

    @Test(arguments: [(#""true""#, true), (#""false""#, false), ("1", true), ("0", false),
                      (#""1""#, true), (#""0""#, false), (#""maybe""#, nil), (#""FALSE""#, nil)] as [(String, Bool?)])
    func retryableFlagSpellings(_ raw: String, _ flag: Bool?) {
        let answer = classify(#"{"is-retryable":\#(raw),"status":21101}"#)
        #expect(answer.isRetryable == flag)
        #expect(answer.answerClass == (flag == false ? .reject : .retry))
    }

    // MARK: HTTP

    @Test(arguments: [500, 502, 503, 504, 429, 404, 400, 401, 403, 302, 100])
    func httpErrorsAreRetried(_ http: Int) {
        // Even with a body that would be ok: the HTTP status decides first.
        let body = Array(#"{"status":0,"receipt":{"bundle_id":"b","in_app":[]}}"#.utf8)
        let answer = VerifyReceipt.classify(httpStatus: http, body: body, environment: .production, allowedBundles: [])
        #expect(answer == Answer(status: nil, answerClass: .retry, problem: "HTTP \(http)"))
    }

    @Test func http200WithHTMLIsRetried() {
        let answer = classify("<html><body>503 Service Unavailable</body></html>")
        #expect(answer.answerClass == .retry)
        #expect(answer.status == nil)
        #expect(answer.problem == "body is not JSON: unexpected '<' at offset 0 (49 bytes): <html><body>503 Ser…")
    }

    // MARK: Garbage bodies

    @Test(arguments: [
        ("", "body is empty"),
        ("   \n", "body is not JSON: unexpected end at offset 4 (4 bytes)"),
        (#"{"status":0,"receipt":{"bundle_id":"b""#, "body is not JSON: unexpected end at offset 38"),
        (#"{"status":21005"#, "body is not JSON: unexpected end at offset 15"),
        (#"{"status":0}}"#, "body is not JSON: more data after the value at offset 12"),
        (#"{"status":0} {"status":0}"#, "body is not JSON: more data after the value at offset 13"),
        ("{'status':0}", "body is not JSON: unexpected 0x27 at offset 1"),
        (#"{"status":01}"#, "body is not JSON: unexpected '1' at offset 11"),
        (#"{"status":0,}"#, "body is not JSON: unexpected '}' at offset 12"),
        (#"{"a":"\x"}"#, "body is not JSON: unexpected 'x' at offset 7"),
        ("[{\"status\":0}]", "body is an array, not a JSON object (14 bytes): [{\"status\":0}]"),
        ("0", "body is a number, not a JSON object (1 bytes): 0"),
        ("\"status\"", "body is a string, not a JSON object (8 bytes): \"status\""),
        ("null", "body is null, not a JSON object (4 bytes): null"),
        ("{}", "no status in body"),
        (#"{"status":null}"#, "status is null"),
        (#"{"status":"ok"}"#, "status \"ok\" is not an integer"),
        (#"{"status":true}"#, "status is a boolean"),
        (#"{"status":{"code":0}}"#, "status is an object"),
        (#"{"status":99999999999999999999}"#, "status has 20 digits"),
    ] as [(String, String)])
    func garbageIsRetried(_ body: String, _ problem: String) {
        let answer = classify(body)
        #expect(answer == Answer(status: nil, answerClass: .retry, problem: problem))
    }

    @Test func garbageProblemIsShortAndPrintable() throws {
        var body: [UInt8] = Array("<html>\u{0}\u{7}\r\n\t  é".utf8)
        body += [UInt8](repeating: UInt8(ascii: "x"), count: 10_000)
        let answer = classify(body)
        let problem = try #require(answer.problem)
        #expect(answer.answerClass == .retry)
        #expect(problem.count <= 80)
        #expect(problem.hasPrefix("body is not JSON: unexpected '<' at offset 0 (10015 bytes): <html>?? ??xxx"))
        #expect(problem.unicodeScalars.allSatisfy { ($0.value >= 0x20 && $0.value < 0x7F) || $0 == "…" })
    }

    @Test func deepNestingIsRefusedNotCrashing() {
        let body = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(classify(body).answerClass == .retry)
        // Nesting within the limit is fine where the job does not look (in_app itself must hold
        // objects: HostileAnswerTests).
        let nested = #"{"status":0,"receipt":{"bundle_id":"b","in_app":[{"transaction_id":"1"}],"x":[[[[{}]]]]}}"#
        #expect(classify(nested).answerClass == .ok)
    }

    @Test(arguments: [(#"{"status":"0","receipt":{"bundle_id":"b","in_app":[]}}"#, 0, AnswerClass.ok),
                      (#"{"status":"21007","receipt":{}}"#, 21007, .switchEnvironment),
                      (#"{"status":"21004"}"#, 21004, .config),
                      (#"{"status":21005}"#, 21005, .retry),
                      (#"{"status":"21003"}"#, 21003, .reject)] as [(String, Int, AnswerClass)])
    func statusAsStringOrNumberSpelling(_ body: String, _ status: Int, _ cls: AnswerClass) {
        // Contract §3: every field may arrive as a string or a number — status too.
        let answer = classify(body)
        #expect(answer.status == status)
        #expect(answer.answerClass == cls)
    }

    @Test func whitespaceIsAcceptedAByteOrderMarkIsNot() {
        let body: [UInt8] = Array(" \r\n\t{ \"status\" : 21007 }\n".utf8)
        #expect(classify(body).answerClass == .switchEnvironment)
        let marked = classify([0xEF, 0xBB, 0xBF] + body)
        #expect(marked.answerClass == .retry)
        #expect(marked.problem == "body starts with a UTF-8 byte-order mark")
    }

    // MARK: Transport

    @Test(arguments: ["timeout after 30000 ms", "connection refused", "transfer closed with 120 bytes remaining"])
    func transportFailureIsRetry(_ message: String) {
        #expect(VerifyReceipt.transportFailure(message)
                == Answer(status: nil, answerClass: .retry, problem: message))
    }

    @Test(arguments: AnswerClass.allRawValues)
    func answerClassRawValues(_ pair: (AnswerClass, String)) {
        #expect(pair.0.rawValue == pair.1)
    }
}

extension AnswerClass {
    static let allRawValues: [(AnswerClass, String)] = [
        (.ok, "ok"), (.switchEnvironment, "switch"), (.retry, "retry"), (.reject, "reject"), (.config, "config"),
    ]
}
