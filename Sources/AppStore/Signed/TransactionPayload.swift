// The payload of a signed transaction (JWSTransactionDecodedPayload), read with the types Apple
// documents and nothing looser: unlike verifyReceipt, where every field may be a string or a
// number (contract §3), a signed payload has one form per field, so any other form is not Apple's.
// Unknown fields are ignored (Apple adds fields over time); a known field that is null, of the
// wrong JSON type or out of range makes the whole JWS malformed, naming the field.

import StrictJSON
import Reconciliation

extension JSONDocument {
    /// A JSON string's text (escapes decoded), without control characters, 1…`maxBytes` bytes.
    func strictText(_ index: Int, field: String, maxBytes: Int = 1024) throws -> String {
        let text: String
        switch kind(index) {
        case .string:
            text = String(decoding: raw(index), as: UTF8.self)  // the scanner refused raw controls
        case .escapedString:
            text = self.text(index) ?? ""
            if text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) { throw Garbage("\(field) contains a control character") }
        default:
            throw Garbage("\(field) is \(kindName(index)), not a string")
        }
        guard !text.isEmpty else { throw Garbage("\(field) is empty") }
        guard text.utf8.count <= maxBytes else { throw Garbage("\(field) is longer than \(maxBytes) bytes") }
        return text
    }

    /// transactionId, originalTransactionId, webOrderLineItemId: a JSON string of 1–20 digits
    /// (Apple's ids are strings; a number is refused, as 2^53 + 1 would not survive most readers).
    func digitString(_ index: Int, field: String) throws -> String {
        guard kind(index) == .string || kind(index) == .escapedString else {
            throw Garbage("\(field) is \(kindName(index)), not a string of digits")
        }
        let text = self.text(index) ?? ""
        guard (1...20).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw Garbage("\(field) \(shown(index)) is not 1-20 digits")
        }
        return text
    }

    /// A JSON integer (no sign, fraction or exponent) within `range`.
    func strictInteger(_ index: Int, field: String, range: ClosedRange<Int64>) throws -> Int64 {
        guard kind(index) == .number else { throw Garbage("\(field) is \(kindName(index)), not a number") }
        let s = raw(index)
        guard s.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw Garbage("\(field) \(shown(index)) is not a non-negative integer")
        }
        var value: Int64 = 0
        if s.count > 18 { value = .max } else { for c in s { value = value * 10 + Int64(c - 0x30) } }
        guard range.contains(value) else {
            throw Garbage("\(field) \(shown(index)) is out of range \(range.lowerBound)-\(range.upperBound)")
        }
        return value
    }

    /// UNIX ms from 1970 to the end of year 9999.
    func strictDate(_ index: Int, field: String) throws -> EpochMillis {
        try strictInteger(index, field: field, range: 0...AppleDate.maxMillis)
    }

    /// `signedDate` of a signed object's payload (the root object). Every payload the job verifies
    /// (transactions, notifications, Server API answers) carries it, and the chain is judged at it.
    func signedDate() throws -> EpochMillis {
        guard kind(0) == .object else { throw Garbage("is \(kindName(0)), not a JSON object") }
        var node: Int?
        forEachMember(of: 0) { key, value in
            if keyIs(key, "signedDate") { node = value }
        }
        guard let node else { throw Garbage("has no signedDate") }
        return try strictDate(node, field: "signedDate")
    }
}

/// Reads a transaction payload into a `SignedTransaction`; throws `Garbage` naming the field.
struct TransactionPayloadReader {
    let doc: JSONDocument

    func read(signedDate: EpochMillis) throws -> SignedTransaction {
        var tid, otid, wol, bundle, product, purchase, originalPurchase, expires, quantity, type, environment: Int?
        var price, currency, storefront, storefrontID, token, ownership, reason: Int?
        var revocationDate, revocationReason, revocationType, revocationPercentage: Int?
        doc.forEachMember(of: 0) { k, v in
            if doc.keyIs(k, "transactionId") { tid = v }
            else if doc.keyIs(k, "originalTransactionId") { otid = v }
            else if doc.keyIs(k, "webOrderLineItemId") { wol = v }
            else if doc.keyIs(k, "bundleId") { bundle = v }
            else if doc.keyIs(k, "productId") { product = v }
            else if doc.keyIs(k, "purchaseDate") { purchase = v }
            else if doc.keyIs(k, "originalPurchaseDate") { originalPurchase = v }
            else if doc.keyIs(k, "expiresDate") { expires = v }
            else if doc.keyIs(k, "quantity") { quantity = v }
            else if doc.keyIs(k, "type") { type = v }
            else if doc.keyIs(k, "environment") { environment = v }
            else if doc.keyIs(k, "price") { price = v }
            else if doc.keyIs(k, "currency") { currency = v }
            else if doc.keyIs(k, "storefront") { storefront = v }
            else if doc.keyIs(k, "storefrontId") { storefrontID = v }
            else if doc.keyIs(k, "appAccountToken") { token = v }
            else if doc.keyIs(k, "inAppOwnershipType") { ownership = v }
            else if doc.keyIs(k, "transactionReason") { reason = v }
            else if doc.keyIs(k, "revocationDate") { revocationDate = v }
            else if doc.keyIs(k, "revocationReason") { revocationReason = v }
            else if doc.keyIs(k, "revocationType") { revocationType = v }
            else if doc.keyIs(k, "revocationPercentage") { revocationPercentage = v }
        }
        func required(_ node: Int?, _ field: String) throws -> Int {
            guard let node else { throw Garbage("has no \(field)") }
            return node
        }
        let transactionID = try doc.digitString(try required(tid, "transactionId"), field: "transactionId")
        let originalID = try doc.digitString(try required(otid, "originalTransactionId"), field: "originalTransactionId")
        let bundleID = try doc.strictText(try required(bundle, "bundleId"), field: "bundleId")
        let productID = try doc.strictText(try required(product, "productId"), field: "productId")
        let purchaseDate = try doc.strictDate(try required(purchase, "purchaseDate"), field: "purchaseDate")
        let units = try doc.strictInteger(try required(quantity, "quantity"), field: "quantity", range: 1...10_000)
        let typeName = try doc.strictText(try required(type, "type"), field: "type", maxBytes: 64)
        let environmentName = try doc.strictText(try required(environment, "environment"), field: "environment",
                                                 maxBytes: 64)

        var out = SignedTransaction(
            transaction: AppleTransaction(
                transactionID: transactionID, originalTransactionID: originalID, productID: productID,
                quantity: Int(units), purchaseDate: purchaseDate,
                originalPurchaseDate: try originalPurchase.map { try doc.strictDate($0, field: "originalPurchaseDate") },
                expiresDate: try expires.map { try doc.strictDate($0, field: "expiresDate") },
                webOrderLineItemID: try wol.map { try doc.digitString($0, field: "webOrderLineItemId") },
                // Contract §2: environments other than Production count as sandbox.
                environment: environmentName == "Production" ? .production : .sandbox,
                bundleID: bundleID),
            environmentName: environmentName, signedDate: signedDate, type: typeName)
        out.price = try price.map { try doc.strictInteger($0, field: "price", range: 0...1_000_000_000_000_000) }
        out.currency = try currency.map { try Self.currencyCode(doc, $0) }
        out.storefront = try storefront.map { try doc.strictText($0, field: "storefront", maxBytes: 64) }
        out.storefrontID = try storefrontID.map { try doc.strictText($0, field: "storefrontId", maxBytes: 64) }
        out.appAccountToken = try token.map { try Self.uuid(doc, $0, field: "appAccountToken") }
        out.inAppOwnershipType = try ownership.map { try doc.strictText($0, field: "inAppOwnershipType", maxBytes: 64) }
        out.transactionReason = try reason.map { try doc.strictText($0, field: "transactionReason", maxBytes: 64) }
        out.revocationDate = try revocationDate.map { try doc.strictDate($0, field: "revocationDate") }
        out.revocationReason = try revocationReason.map {
            Int(try doc.strictInteger($0, field: "revocationReason", range: 0...Int64(Int32.max)))
        }
        out.revocationType = try revocationType.map { try doc.strictText($0, field: "revocationType", maxBytes: 64) }
        out.revocationPercentage = try revocationPercentage.map {
            Int(try doc.strictInteger($0, field: "revocationPercentage", range: 0...100_000))
        }
        // A refund is a cancellation; a family-sharing revocation returns no money (contract §4).
        if let date = out.revocationDate, out.revocationType.map(Self.refundTypes.contains) ?? true {
            out.transaction.cancellationDate = date
            out.transaction.cancellationReason = out.revocationReason.map { String($0) }
        }
        return out
    }

    static let refundTypes: Set<String> = ["REFUND_FULL", "REFUND_PRORATED"]

    /// ISO 4217: three upper-case ASCII letters.
    private static func currencyCode(_ doc: JSONDocument, _ index: Int) throws -> String {
        let text = try doc.strictText(index, field: "currency", maxBytes: 16)
        guard text.utf8.count == 3, text.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
            throw Garbage("currency \(doc.shown(index)) is not 3 upper-case letters")
        }
        return text
    }

    /// 8-4-4-4-12 hexadecimal digits (Apple's `appAccountToken` is a UUID the app chose).
    static func uuid(_ doc: JSONDocument, _ index: Int, field: String) throws -> String {
        let text = try doc.strictText(index, field: field, maxBytes: 64)
        let bytes = Array(text.utf8)
        var ok = bytes.count == 36
        for (i, c) in bytes.enumerated() where ok {
            let lower = c | 0x20
            ok = [8, 13, 18, 23].contains(i) ? c == UInt8(ascii: "-")
                : (c >= 0x30 && c <= 0x39) || (lower >= 0x61 && lower <= 0x66)
        }
        guard ok else { throw Garbage("\(field) \(doc.shown(index)) is not a UUID") }
        return text
    }
}
