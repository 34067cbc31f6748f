// The App Store Server API (contract §3b): endpoints, paths, the classes of an answer, and the
// strict reading of its bodies. No I/O: the job's HTTP adapter sends and hands back status,
// body and the Retry-After header.

import StrictJSON
import Reconciliation

/// The endpoints the job calls. The raw values name them in options (`--api-rate`), logs and the
/// simulator's call log.
public enum ServerAPIEndpoint: String, CaseIterable, Sendable {
    case transactionInfo = "transaction_info"
    case transactionHistory = "transaction_history"
    case refundHistory = "refund_history"
    case notificationHistory = "notification_history"
    case orderLookup = "order_lookup"

    /// Apple's production limit in requests per second; the sandbox allows a tenth.
    public var appleRate: Double {
        switch self {
        case .transactionInfo, .transactionHistory, .notificationHistory: return 50
        case .refundHistory, .orderLookup: return 10
        }
    }

    /// The rate budget of the endpoint.
    public var budget: AppStoreBudget { AppStoreBudget(name: rawValue, appleRate: appleRate) }
}

/// What the job does with one Server API answer (contract §3b's table).
public enum ServerAPIOutcome: Sendable, Equatable {
    /// 200 with a body to read (every signed object in it is verified before it is believed).
    case ok(body: [UInt8])
    /// 401: our token was refused: the key, key id, issuer id or bundle id is wrong. Exit 78.
    case unauthorized
    /// 404 4040010 (TransactionIdNotFoundError): in production, ask the sandbox once.
    case transactionNotFound
    /// 429: nothing to this endpoint before `untilMs` (UNIX ms; nil: the header was missing or
    /// unreadable, back off as for any retry).
    case rateLimited(untilMs: Int64?)
    /// 4040002, 4040004, 4040006, 5000001, other 5xx, a timeout, a connection error, a body that
    /// is not what Apple sends: back off and retry in the run; unresolved after.
    case retry(problem: String)
    /// Any other 4xx: Apple will not answer this request (a bad id, an expired pagination token).
    case refused(errorCode: Int?, problem: String)
}

public enum ServerAPI {
    /// The error codes Apple lists as retryable (and 5000001, its "retryable internal error").
    public static let retryableErrorCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]
    public static let transactionIdNotFound = 4_040_010

    // MARK: Paths (the endpoints and their paths: AppStoreEndpoints)

    /// An id the job puts in a path: digits for transaction ids; Apple's order ids are letters and
    /// digits. Anything else is refused before a request is made (no path injection).
    public static func isPathSafe(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
        }
    }

    // MARK: Classes

    /// Classifies an answer. `retryAfter` is the `Retry-After` header: a UNIX time in
    /// **milliseconds** (Apple's rate-limit page), not seconds.
    public static func classify(httpStatus: Int, body: [UInt8], retryAfter: String?) -> ServerAPIOutcome {
        switch httpStatus {
        case 200...299:
            // 200 with a body; 202 Accepted (Send Consumption Information) with none.
            return .ok(body: body)
        case 401:
            return .unauthorized
        case 429:
            return .rateLimited(untilMs: retryAfter.flatMap(parseRetryAfter))
        default:
            let code = errorCode(body)
            if let code, retryableErrorCodes.contains(code) {
                return .retry(problem: "HTTP \(httpStatus), errorCode \(code)")
            }
            if httpStatus == 404 && code == transactionIdNotFound { return .transactionNotFound }
            if httpStatus >= 500 || httpStatus < 400 {
                return .retry(problem: "HTTP \(httpStatus)" + (code.map { ", errorCode \($0)" } ?? ""))
            }
            return .refused(errorCode: code, problem: "HTTP \(httpStatus)" + (code.map { ", errorCode \($0)" } ?? ""))
        }
    }

    /// `Retry-After` as Apple sends it: a UNIX time in milliseconds (13 digits today). A value
    /// that reads as seconds (10 digits or fewer) is taken as seconds, so a proxy that rewrote it
    /// does not make the job hammer the endpoint; anything else is unreadable.
    public static func parseRetryAfter(_ text: String) -> Int64? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.utf8.count <= 16, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let value = Int64(digits) else { return nil }
        return digits.utf8.count <= 10 ? value * 1000 : value
    }

    /// `errorCode` of an error body `{"errorCode": 4040010, "errorMessage": "…"}`; nil when the
    /// body is not one.
    public static func errorCode(_ body: [UInt8]) -> Int? {
        body.withUnsafeBufferPointer { buffer -> Int? in
            guard let doc = try? JSONDocument(buffer), doc.kind(0) == .object else { return nil }
            var code: Int?
            doc.forEachMember(of: 0) { key, value in
                if doc.keyIs(key, "errorCode"), doc.kind(value) == .number,
                   let n = Int(String(decoding: doc.raw(value), as: UTF8.self)) {
                    code = n
                }
            }
            return code
        }
    }

    // MARK: Bodies

    /// Get Transaction Info: `{"signedTransactionInfo": "<JWS>"}`.
    public static func signedTransactionInfo(_ body: [UInt8]) throws(ServerAPIGarbage) -> String {
        let fields = try stringFields(body, ["signedTransactionInfo"])
        guard let jws = fields["signedTransactionInfo"] else {
            throw ServerAPIGarbage("signedTransactionInfo is missing")
        }
        return jws
    }

    /// Look Up Order ID: `{"status": 0|1, "signedTransactions": [...]}`. An unknown order is
    /// status 1 with no `signedTransactions`: "Apple has no such order", not an error.
    public static func orderLookup(_ body: [UInt8]) throws(ServerAPIGarbage) -> (status: Int, signed: [String]) {
        try body.withUnsafeBufferPointer { (buffer) throws(ServerAPIGarbage) -> (status: Int, signed: [String]) in
            let doc: JSONDocument
            do { doc = try JSONDocument(buffer) } catch { throw ServerAPIGarbage("body is not JSON: \(error)") }
            guard doc.kind(0) == .object else { throw ServerAPIGarbage("body is not an object") }
            var status: Int?
            var signed: [String] = []
            var problem: String?
            doc.forEachMember(of: 0) { key, value in
                if doc.keyIs(key, "status") {
                    guard doc.kind(value) == .number, let n = Int(String(decoding: doc.raw(value), as: UTF8.self)),
                          n == 0 || n == 1 else { problem = "status is not 0 or 1"; return }
                    status = n
                } else if doc.keyIs(key, "signedTransactions") {
                    guard doc.kind(value) == .array else { problem = "signedTransactions is not an array"; return }
                    doc.forEachElement(of: value) { i, element in
                        guard doc.isString(element), let text = doc.text(element) else {
                            problem = "signedTransactions[\(i)] is not a string"
                            return
                        }
                        signed.append(text)
                    }
                }
            }
            if let problem { throw ServerAPIGarbage(problem) }
            guard let status else { throw ServerAPIGarbage("status is missing") }
            if status == 0 && signed.isEmpty { throw ServerAPIGarbage("status 0 without signedTransactions") }
            return (status, status == 0 ? signed : [])
        }
    }

    /// The string members `names` of a JSON object body (other members ignored; one of them of
    /// another type is garbage).
    static func stringFields(_ body: [UInt8], _ names: [StaticString]) throws(ServerAPIGarbage) -> [String: String] {
        try body.withUnsafeBufferPointer { (buffer) throws(ServerAPIGarbage) -> [String: String] in
            let doc: JSONDocument
            do { doc = try JSONDocument(buffer) } catch { throw ServerAPIGarbage("body is not JSON: \(error)") }
            guard doc.kind(0) == .object else { throw ServerAPIGarbage("body is not an object") }
            var out: [String: String] = [:]
            var problem: String?
            doc.forEachMember(of: 0) { key, value in
                for name in names where doc.keyIs(key, name) {
                    guard doc.isString(value), let text = doc.text(value) else {
                        problem = "\(name) is not a string"
                        return
                    }
                    out["\(name)"] = text
                }
            }
            if let problem { throw ServerAPIGarbage(problem) }
            return out
        }
    }
}

/// A Server API body that is not what Apple sends: never believed, retried like a timeout.
public struct ServerAPIGarbage: Error, Sendable, Equatable, CustomStringConvertible {
    public var problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}

extension JSONDocument {
    /// A string node, with or without escapes.
    func isString(_ index: Int) -> Bool { kind(index) == .string || kind(index) == .escapedString }
}
