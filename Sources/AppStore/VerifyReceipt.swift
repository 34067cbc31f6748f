// The legacy verifyReceipt protocol (contract §3): the request body and the classification of an
// answer. No I/O: the job's HTTP adapter sends the bytes and hands back status and body.

import StrictJSON
import Reconciliation

/// What the job does with an answer (contract §3 table). The raw values are what summary.json and
/// the logs print.
public enum AnswerClass: String, Sendable {
    /// 0, 21006: the receipt is valid; its transactions are in `Answer.transactions`.
    case ok
    /// 21007, 21008: resend once to the other environment.
    case switchEnvironment = "switch"
    /// Temporary: back off and try again (this run or the next).
    case retry
    /// Definitive: the receipt proves no payment (`Answer.rejection` says why).
    case reject
    /// Ours, not the receipt's: wrong shared secret (21004) or a broken request (21000). Exit 78.
    case config
}

/// One classified verifyReceipt answer.
public struct Answer: Sendable, Equatable {
    /// The App Store `status`; nil when there was none (HTTP error, transport failure, garbage).
    public var status: Int?
    public var answerClass: AnswerClass
    /// `is_retryable` / `is-retryable` when the answer carried it.
    public var isRetryable: Bool?
    /// ok only: every transaction of the receipt, de-duplicated by transaction_id.
    public var transactions: [AppleTransaction]
    /// `receipt.bundle_id`, or `receipt.bid` (iOS 6 style).
    public var bundleID: String?
    /// Set when `answerClass == .reject`.
    public var rejection: RejectionReason?
    /// One short line for retry/switch/reject/config/garbage. Never carries request data or a
    /// secret; at most a few dozen sanitized characters of a non-JSON body.
    public var problem: String?
    /// Server API answers: the verified signed transactions, with every field Apple signs
    /// (`transactions` holds their `transaction`s).
    public var signed: [SignedTransaction]

    public init(status: Int?, answerClass: AnswerClass, isRetryable: Bool? = nil,
                transactions: [AppleTransaction] = [], bundleID: String? = nil,
                rejection: RejectionReason? = nil, problem: String? = nil, signed: [SignedTransaction] = []) {
        self.status = status
        self.signed = signed
        self.answerClass = answerClass
        self.isRetryable = isRetryable
        self.transactions = transactions
        self.bundleID = bundleID
        self.rejection = rejection
        self.problem = problem
    }
}

public enum VerifyReceipt {
    /// The JSON request body `{"receipt-data": …, "password": …}` (password omitted when nil).
    public static func requestBody(receiptData: String, password: String?) -> [UInt8] {
        var json = JSONWriter(capacity: receiptData.utf8.count + (password?.utf8.count ?? 0) + 40)
        json.beginObject()
        json.field("receipt-data", receiptData)
        json.field("password", password)
        json.endObject()
        return json.bytes
    }

    /// Classifies an HTTP answer from `environment`'s endpoint (contract §3 table).
    ///
    /// - HTTP 5xx, 429 and any other non-2xx → retry ("HTTP 503").
    /// - A body that is not what Apple sends → retry with a short problem naming what is wrong:
    ///   not valid UTF-8, not exactly one JSON object, a byte-order mark, a repeated key, nesting
    ///   deeper than 64, a `status` or `is_retryable` of another form than Apple's, and for
    ///   0 / 21006 a receipt not shaped like Apple's (see `ReceiptReader`) or a transaction field
    ///   the job reads in another form (see `AnswerValues.swift`). Such an answer is never ok.
    /// - 0, 21006 → ok, unless `allowedBundles` is non-empty and a bundle of the receipt is not in
    ///   it (→ reject `.wrongBundle`, transactions dropped). A receipt without any bundle id is
    ///   rejected too when `allowedBundles` is set: it cannot show it is ours.
    /// - 21007, 21008 → switch; 21005, 21009, 21002 → retry; 21003, 21010 → reject;
    ///   21100–21199 → retry unless `is_retryable`/`is-retryable` is false, then reject;
    ///   21000, 21004 → config; any other number → retry ("unknown status N").
    ///
    /// `status` is a JSON integer or a string of digits; `is_retryable` true/false, "true"/"false",
    /// 1/0 or "1"/"0".
    public static func classify(httpStatus: Int, body: [UInt8], environment: AppStoreEnvironment,
                                allowedBundles: Set<String>) -> Answer {
        guard (200..<300).contains(httpStatus) else {
            return Answer(status: nil, answerClass: .retry, problem: "HTTP \(httpStatus)")
        }
        return body.withUnsafeBufferPointer { buffer -> Answer in
            let doc: JSONDocument
            do {
                doc = try JSONDocument(buffer)
            } catch {
                let e = error as? JSONError
                let text = e?.description ?? "body is not JSON"
                return Answer(status: nil, answerClass: .retry,
                              problem: e == .byteOrderMark ? text : text + describe(buffer))
            }
            guard doc.kind(0) == .object else {
                return Answer(status: nil, answerClass: .retry,
                              problem: "body is \(doc.kindName(0)), not a JSON object" + describe(buffer))
            }
            return classify(doc, environment: environment, allowedBundles: allowedBundles)
        }
    }

    /// A transport failure (timeout, connection refused/reset, truncated transfer): always retry.
    public static func transportFailure(_ message: String) -> Answer {
        Answer(status: nil, answerClass: .retry, problem: message)
    }

    // MARK: Internals

    private static func classify(_ doc: JSONDocument, environment: AppStoreEnvironment,
                                 allowedBundles: Set<String>) -> Answer {
        var statusNode: Int?
        var retryableNode: Int?
        var retryableKey = "is_retryable"
        // The scanner refused repeated keys; when both spellings of the flag are there, the first counts.
        doc.forEachMember(of: 0) { key, value in
            if doc.keyIs(key, "status") {
                statusNode = value
            } else if retryableNode == nil && doc.keyIs(key, "is_retryable") {
                retryableNode = value
            } else if retryableNode == nil && doc.keyIs(key, "is-retryable") {
                retryableNode = value
                retryableKey = "is-retryable"
            }
        }
        guard let statusNode else {
            return Answer(status: nil, answerClass: .retry, problem: "no status in body")
        }
        let status: Int
        let isRetryable: Bool?
        do {
            status = try doc.status(statusNode)
            isRetryable = try retryableNode.map { try doc.flag($0, field: retryableKey) }
        } catch {
            return Answer(status: nil, answerClass: .retry, problem: (error as? Garbage)?.problem ?? "\(error)")
        }

        func answer(_ cls: AnswerClass, _ problem: String?, _ rejection: RejectionReason? = nil) -> Answer {
            Answer(status: status, answerClass: cls, isRetryable: isRetryable, rejection: rejection,
                   problem: problem)
        }
        switch status {
        case 0, 21006:
            return okAnswer(doc, status: status, isRetryable: isRetryable, environment: environment,
                            allowedBundles: allowedBundles)
        case 21007:
            return answer(.switchEnvironment, "status 21007 (sandbox receipt sent to production)")
        case 21008:
            return answer(.switchEnvironment, "status 21008 (production receipt sent to sandbox)")
        case 21002:
            return answer(.retry, "status 21002 (receipt data malformed or service unavailable)")
        case 21005:
            return answer(.retry, "status 21005 (receipt server unavailable)")
        case 21009:
            return answer(.retry, "status 21009 (internal data access error)")
        case 21100...21199:
            if isRetryable == false {
                return answer(.reject, "status \(status) (internal data access error, not retryable)",
                              .invalidReceipt)
            }
            return answer(.retry, "status \(status) (internal data access error)")
        case 21003:
            return answer(.reject, "status 21003 (receipt could not be authenticated)", .invalidReceipt)
        case 21010:
            return answer(.reject, "status 21010 (account not found or deleted)", .invalidReceipt)
        case 21004:
            return answer(.config, "status 21004 (shared secret does not match)")
        case 21000:
            return answer(.config, "status 21000 (request to the App Store was not valid)")
        default:
            return answer(.retry, "unknown status \(status)")
        }
    }

    private static func okAnswer(_ doc: JSONDocument, status: Int, isRetryable: Bool?,
                                 environment: AppStoreEnvironment, allowedBundles: Set<String>) -> Answer {
        let receipt: ReceiptContents
        do {
            receipt = try ReceiptReader(doc: doc, environment: environment).read()
        } catch {
            // No status: a 0 beside a garbage body would read as "valid" in unresolved.csv.
            return Answer(status: nil, answerClass: .retry, isRetryable: isRetryable,
                          problem: (error as? Garbage)?.problem ?? "\(error)")
        }
        if !allowedBundles.isEmpty {
            let foreign = receipt.bundles.first { !allowedBundles.contains($0) }
            if receipt.bundles.isEmpty || foreign != nil {
                let problem = foreign.map { "bundle \(Sanitized.text($0.utf8, limit: 60)) is not allowed" }
                    ?? "receipt names no bundle id"
                return Answer(status: status, answerClass: .reject, isRetryable: isRetryable,
                              bundleID: receipt.bundleID, rejection: .wrongBundle, problem: problem)
            }
        }
        return Answer(status: status, answerClass: .ok, isRetryable: isRetryable,
                      transactions: receipt.transactions, bundleID: receipt.bundleID)
    }

    /// " (49 bytes): <html><body>503 Ser…": size and a short printable prefix of a body that
    /// does not even start like a JSON object; nothing for one that does.
    private static func describe(_ body: UnsafeBufferPointer<UInt8>) -> String {
        guard !body.isEmpty else { return "" }
        let first = body.first { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }
        if first == UInt8(ascii: "{") { return "" }
        let shown = Sanitized.text(body.prefix(64), limit: 19)
        return " (\(body.count) bytes)" + (shown.isEmpty ? "" : ": " + shown)
    }
}
