// App Store Server Notifications V2 as Get Notification History returns them: a `signedPayload`
// (responseBodyV2DecodedPayload) whose `data.signedTransactionInfo` is a second JWS, the
// transaction as it was when Apple sent the notification.
// Both are verified, the outer one first; nothing in either is believed before both pass.

import StrictJSON
import Crypto
import Foundation
import Reconciliation

/// A verified notification: what it says happened, and the transaction it is about.
public struct SignedNotification: Sendable, Equatable {
    /// `REFUND`, `REFUND_REVERSED`, `ONE_TIME_CHARGE`, … (not checked against a list: Apple adds types).
    public var type: String
    public var subtype: String?
    /// Apple repeats a notification with the same UUID: the key a sweep is idempotent on.
    public var uuid: String
    /// UNIX ms; for REFUND_REVERSED the job's reversal date.
    public var signedDate: EpochMillis
    /// The verified `data.signedTransactionInfo`; nil for a notification without one (TEST,
    /// summary notifications), which the job ignores.
    public var transaction: SignedTransaction?
    /// `data.signedTransactionInfo` as signed (verified: `transaction`), kept by whoever must
    /// verify it again later (`respond` decides a request on each run until it is answered).
    public var signedTransactionInfo: String?
    /// `data.consumptionRequestReason` of a CONSUMPTION_REQUEST (`UNINTENDED_PURCHASE`,
    /// `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`; not checked against
    /// the list: Apple adds values). Text of at most 64 bytes.
    public var consumptionRequestReason: String?
}

extension SignedDataVerifier {
    /// Verifies a notification's `signedPayload` and its `data.signedTransactionInfo`. The inner
    /// transaction must be of the same bundle and environment as `data` says; `bundleIDs` as for
    /// `verifyTransaction`. The first check that fails is the reason.
    public func verifyNotification(_ jws: String, bundleIDs: Set<String>?) -> Result<SignedNotification, SignedDataRejection> {
        let outer = verify(jws) { doc, signedDate in try NotificationPayloadReader(doc: doc).read(signedDate: signedDate) }
        let read: NotificationPayloadReader.Read
        switch outer {
        case .failure(let rejection): return .failure(rejection)
        case .success(let verified): read = verified.value
        }
        var notification = SignedNotification(type: read.type, subtype: read.subtype, uuid: read.uuid,
                                              signedDate: read.signedDate, transaction: nil)
        notification.consumptionRequestReason = read.consumptionRequestReason
        if let bundleIDs, !bundleIDs.isEmpty, let bundle = read.bundleID, !bundleIDs.contains(bundle) {
            return .failure(.wrongBundle("notification of bundle \(Sanitized.text(bundle.utf8, limit: 60)) is not allowed"))
        }
        guard let inner = read.signedTransactionInfo else { return .success(notification) }
        switch verifyTransaction(inner, bundleIDs: bundleIDs) {
        case .failure(let rejection):
            return .failure(rejection)
        case .success(let transaction):
            if let bundle = read.bundleID, bundle != transaction.transaction.bundleID {
                return .failure(.malformed("payload data.bundleId differs from its signedTransactionInfo's"))
            }
            if let environment = read.environment, environment != transaction.environmentName {
                return .failure(.malformed("payload data.environment differs from its signedTransactionInfo's"))
            }
            notification.transaction = transaction
            notification.signedTransactionInfo = inner
            return .success(notification)
        }
    }
}

/// Reads a notification payload strictly (the rules of `TransactionPayloadReader`): required
/// `notificationType`, `notificationUUID`; optional `subtype`; `data` an object whose
/// `bundleId`, `environment` are text and `signedTransactionInfo` a JWS-shaped string.
struct NotificationPayloadReader {
    struct Read {
        var type: String
        var subtype: String?
        var uuid: String
        var signedDate: EpochMillis
        var bundleID: String?
        var environment: String?
        var signedTransactionInfo: String?
        var consumptionRequestReason: String?
    }

    let doc: JSONDocument

    func read(signedDate: EpochMillis) throws -> Read {
        var type, subtype, uuid, data: Int?
        doc.forEachMember(of: 0) { k, v in
            if doc.keyIs(k, "notificationType") { type = v }
            else if doc.keyIs(k, "subtype") { subtype = v }
            else if doc.keyIs(k, "notificationUUID") { uuid = v }
            else if doc.keyIs(k, "data") { data = v }
        }
        guard let type else { throw Garbage("has no notificationType") }
        guard let uuid else { throw Garbage("has no notificationUUID") }
        var out = Read(type: try doc.strictText(type, field: "notificationType", maxBytes: 64),
                       subtype: try subtype.map { try doc.strictText($0, field: "subtype", maxBytes: 64) },
                       uuid: try TransactionPayloadReader.uuid(doc, uuid, field: "notificationUUID").lowercased(),
                       signedDate: signedDate)
        guard let data else { return out }
        guard doc.kind(data) == .object else { throw Garbage("data is \(doc.kindName(data)), not an object") }
        var bundle, environment, info, reason: Int?
        doc.forEachMember(of: data) { k, v in
            if doc.keyIs(k, "bundleId") { bundle = v }
            else if doc.keyIs(k, "consumptionRequestReason") { reason = v }
            else if doc.keyIs(k, "environment") { environment = v }
            else if doc.keyIs(k, "signedTransactionInfo") { info = v }
        }
        out.bundleID = try bundle.map { try doc.strictText($0, field: "data.bundleId") }
        out.environment = try environment.map { try doc.strictText($0, field: "data.environment", maxBytes: 64) }
        out.consumptionRequestReason = try reason.map { try doc.strictText($0, field: "data.consumptionRequestReason", maxBytes: 64) }
        if let info {
            let text = try doc.strictText(info, field: "data.signedTransactionInfo", maxBytes: 64 * 1024)
            guard CompactJWS.looksLikeJWS(text) else { throw Garbage("data.signedTransactionInfo is not a JWS") }
            out.signedTransactionInfo = text
        }
        return out
    }
}

/// `appAccountToken`s the app derives from order ids that are not UUIDs: the name-based UUID
/// (RFC 4122 version 5, SHA-1) of the order id in a namespace the shop chose
/// (`--account-token-namespace`).
public enum AccountToken {
    /// The lower-case UUID text; nil when `namespace` is not a UUID.
    public static func nameBased(namespace: String, name: String) -> String? {
        guard let ns = bytes(ofUUID: namespace) else { return nil }
        var digest = Array(Insecure.SHA1.hash(data: ns + Array(name.utf8)).prefix(16))
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        return text(digest)
    }

    /// The 16 bytes of a UUID in 8-4-4-4-12 form (any case); nil for anything else.
    public static func bytes(ofUUID s: String) -> [UInt8]? {
        let u = Array(s.utf8)
        guard u.count == 36 else { return nil }
        var out: [UInt8] = []
        var high: UInt8?
        for (i, c) in u.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                continue
            }
            let lower = c | 0x20
            let v: UInt8
            if c >= 0x30 && c <= 0x39 { v = c - 0x30 } else if lower >= 0x61 && lower <= 0x66 { v = lower - 0x61 + 10 } else { return nil }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return out
    }

    static func text(_ b: [UInt8]) -> String {
        let hex = Array("0123456789abcdef")
        var s = ""
        for (i, byte) in b.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { s.append("-") }
            s.append(hex[Int(byte >> 4)])
            s.append(hex[Int(byte & 15)])
        }
        return s
    }
}
