// The paged answers of the App Store Server API (contract §3b): transaction history v2, refund
// history v2 and notification history, read strictly. Their signed objects are returned as
// text: the caller verifies each before believing anything in it.

import StrictJSON
import Reconciliation

/// One page of Get Transaction History v2 or Get Refund History v2.
public struct TransactionPage: Sendable, Equatable {
    public var signedTransactions: [String]
    /// The cursor of the next page; stored from the last page (`hasMore` false) of an ASCENDING
    /// request, it asks the same customer only for what changed since.
    public var revision: String
    public var hasMore: Bool
}

/// One page of Get Notification History.
public struct NotificationPage: Sendable, Equatable {
    /// Each notification's `signedPayload` (a JWS whose `data.signedTransactionInfo` is another).
    public var signedPayloads: [String]
    /// Absent on the last page.
    public var paginationToken: String?
    public var hasMore: Bool
}

extension ServerAPI {
    /// The request body: one `notificationType` per request (Apple refuses several, and refuses
    /// one together with `transactionId`).
    public static func notificationHistoryBody(startMs: EpochMillis, endMs: EpochMillis, type: String) -> [UInt8] {
        Array(#"{"startDate":\#(startMs),"endDate":\#(endMs),"notificationType":"#.utf8) + Array(JSONText.quote(type).utf8) + [0x7D]
    }

    /// Send Consumption Information v2's `ConsumptionRequest` body (keys in Apple's order of the
    /// page; a member left out when the answer leaves it out).
    public static func consumptionRequestBody(_ answer: ConsumptionAnswer) -> [UInt8] {
        var w = JSONWriter(capacity: 160)
        w.beginObject()
        w.field("customerConsented", answer.customerConsented)
        w.field("deliveryStatus", answer.deliveryStatus.rawValue)
        w.field("sampleContentProvided", answer.sampleContentProvided)
        w.field("consumptionPercentage", answer.consumptionPercentage)
        w.field("refundPreference", answer.refundPreference?.rawValue)
        w.endObject()
        return w.bytes
    }

    /// Percent-encodes everything but unreserved characters (RFC 3986), for tokens in a query.
    static func queryEscaped(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            let unreserved = (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122)
                || b == 45 || b == 46 || b == 95 || b == 126
            if unreserved { out.unicodeScalars.append(Unicode.Scalar(b)) } else {
                let hex = Array("0123456789ABCDEF")
                out += "%" + String(hex[Int(b >> 4)]) + String(hex[Int(b & 15)])
            }
        }
        return out
    }

    /// A page of transaction or refund history: `signedTransactions` (may be empty), `revision`,
    /// `hasMore`; other members ignored.
    public static func transactionPage(_ body: [UInt8]) throws(ServerAPIGarbage) -> TransactionPage {
        try body.withUnsafeBufferPointer { (buffer) throws(ServerAPIGarbage) -> TransactionPage in
            let doc = try object(buffer)
            var signed: [String]?, revision: String?, hasMore: Bool?
            var problem: String?
            doc.forEachMember(of: 0) { key, value in
                if doc.keyIs(key, "signedTransactions") {
                    signed = strings(doc, value, "signedTransactions", &problem)
                } else if doc.keyIs(key, "revision") {
                    guard doc.isString(value), let text = doc.text(value), !text.isEmpty else { problem = "revision is not a string"; return }
                    revision = text
                } else if doc.keyIs(key, "hasMore") {
                    guard let flag = boolean(doc, value) else { problem = "hasMore is not a boolean"; return }
                    hasMore = flag
                }
            }
            if let problem { throw ServerAPIGarbage(problem) }
            guard let signed else { throw ServerAPIGarbage("signedTransactions is missing") }
            guard let revision else { throw ServerAPIGarbage("revision is missing") }
            guard let hasMore else { throw ServerAPIGarbage("hasMore is missing") }
            guard signed.count <= 20 else { throw ServerAPIGarbage("a page of \(signed.count) transactions (Apple sends at most 20)") }
            return TransactionPage(signedTransactions: signed, revision: revision, hasMore: hasMore)
        }
    }

    /// A page of notification history: `notificationHistory[].signedPayload`, `paginationToken`, `hasMore`.
    public static func notificationPage(_ body: [UInt8]) throws(ServerAPIGarbage) -> NotificationPage {
        try body.withUnsafeBufferPointer { (buffer) throws(ServerAPIGarbage) -> NotificationPage in
            let doc = try object(buffer)
            var payloads: [String]?, token: String?, hasMore: Bool?
            var problem: String?
            doc.forEachMember(of: 0) { key, value in
                if doc.keyIs(key, "notificationHistory") {
                    guard doc.kind(value) == .array else { problem = "notificationHistory is not an array"; return }
                    var list: [String] = []
                    doc.forEachElement(of: value) { i, item in
                        guard doc.kind(item) == .object else { problem = "notificationHistory[\(i)] is not an object"; return }
                        var payload: String?
                        doc.forEachMember(of: item) { k, v in
                            guard doc.keyIs(k, "signedPayload") else { return }
                            guard doc.isString(v), let text = doc.text(v) else { problem = "notificationHistory[\(i)].signedPayload is not a string"; return }
                            payload = text
                        }
                        guard let payload else { problem = problem ?? "notificationHistory[\(i)].signedPayload is missing"; return }
                        list.append(payload)
                    }
                    payloads = list
                } else if doc.keyIs(key, "paginationToken") {
                    guard doc.isString(value), let text = doc.text(value) else { problem = "paginationToken is not a string"; return }
                    token = text
                } else if doc.keyIs(key, "hasMore") {
                    guard let flag = boolean(doc, value) else { problem = "hasMore is not a boolean"; return }
                    hasMore = flag
                }
            }
            if let problem { throw ServerAPIGarbage(problem) }
            guard let payloads else { throw ServerAPIGarbage("notificationHistory is missing") }
            guard let hasMore else { throw ServerAPIGarbage("hasMore is missing") }
            if hasMore && (token ?? "").isEmpty { throw ServerAPIGarbage("hasMore without a paginationToken") }
            return NotificationPage(signedPayloads: payloads, paginationToken: token, hasMore: hasMore)
        }
    }

    private static func object(_ buffer: UnsafeBufferPointer<UInt8>) throws(ServerAPIGarbage) -> JSONDocument {
        let doc: JSONDocument
        do { doc = try JSONDocument(buffer) } catch { throw ServerAPIGarbage("body is not JSON: \(error)") }
        guard doc.kind(0) == .object else { throw ServerAPIGarbage("body is not an object") }
        return doc
    }

    private static func strings(_ doc: JSONDocument, _ index: Int, _ name: String, _ problem: inout String?) -> [String]? {
        guard doc.kind(index) == .array else { problem = "\(name) is not an array"; return nil }
        var out: [String] = []
        var bad: String?
        doc.forEachElement(of: index) { i, element in
            guard doc.isString(element), let text = doc.text(element) else { bad = "\(name)[\(i)] is not a string"; return }
            out.append(text)
        }
        if let bad { problem = bad; return nil }
        return out
    }

    private static func boolean(_ doc: JSONDocument, _ index: Int) -> Bool? {
        switch doc.kind(index) {
        case .true: return true
        case .false: return false
        default: return nil
        }
    }
}
