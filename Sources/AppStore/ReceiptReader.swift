// Reading the transactions out of an ok (0 / 21006) verifyReceipt answer, iOS 6 and iOS 7 style,
// accepting only the shapes and value forms Apple sends. Anything else is `Garbage`: the answer
// is retried, never believed (contract §3).

import StrictJSON
import Reconciliation

/// Why an answer is not what Apple sends: one short line naming the field.
struct Garbage: Error {
    var problem: String
    init(_ problem: String) { self.problem = problem }
}

/// The receipt part of an ok answer.
struct ReceiptContents {
    /// `receipt.bundle_id`, or `receipt.bid` (iOS 6 style).
    var bundleID: String?
    /// Every bundle id the answer names (the receipt's and each transaction's own `bid`), distinct.
    var bundles: [String]
    var transactions: [AppleTransaction]
}

/// Where a transaction object sits, for problem texts: `in_app[3]`, `receipt`,
/// `latest_receipt_info[0]`, `latest_receipt_info` (iOS 6 style: one object).
struct Place {
    var name: StaticString
    var index: Int?

    var description: String { index.map { "\(name)[\($0)]" } ?? "\(name)" }
    func field(_ key: StaticString) -> String { "\(description).\(key)" }
}

struct ReceiptReader {
    let doc: JSONDocument
    let environment: AppStoreEnvironment

    /// The receipt's transactions; throws `Garbage` when the answer is not shaped like Apple's.
    ///
    /// iOS 6 style: the `receipt` object itself has a `transaction_id` (it is a transaction);
    /// `latest_receipt_info` and `latest_expired_receipt_info`, when present, are ONE object each.
    /// iOS 7 style: `receipt.in_app` is an array of transaction objects; `latest_receipt_info`
    /// and `latest_expired_receipt_info`, when present, are arrays of transaction objects.
    func read() throws -> ReceiptContents {
        var receiptNode: Int?
        var latestNode: Int?
        var expiredNode: Int?
        // The scanner refused repeated keys, so every key below appears at most once.
        doc.forEachMember(of: 0) { key, value in
            if doc.keyIs(key, "receipt") {
                receiptNode = value
            } else if doc.keyIs(key, "latest_receipt_info") {
                latestNode = value
            } else if doc.keyIs(key, "latest_expired_receipt_info") {
                expiredNode = value
            }
        }
        guard let receiptNode else { throw Garbage("receipt is missing") }
        guard doc.kind(receiptNode) == .object else { throw Garbage("receipt is \(doc.kindName(receiptNode))") }

        var bundleIDNode: Int?
        var bidNode: Int?
        var inAppNode: Int?
        var ownTransactionID = false
        doc.forEachMember(of: receiptNode) { key, value in
            if doc.keyIs(key, "bundle_id") {
                bundleIDNode = value
            } else if doc.keyIs(key, "bid") {
                bidNode = value
            } else if doc.keyIs(key, "in_app") {
                inAppNode = value
            } else if doc.keyIs(key, "transaction_id") {
                ownTransactionID = true
            }
        }
        let bundleID = try bundleIDNode.map { try doc.textValue($0, field: "receipt.bundle_id") }
        let bid = try bidNode.map { try doc.textValue($0, field: "receipt.bid") }
        let receiptBundle = [bundleID, bid].lazy.compactMap { $0 }.first { !$0.isEmpty }

        // Order of preference on ties when merging: the receipt's own transactions first.
        var collector = Collector()
        if ownTransactionID {
            if inAppNode != nil { throw Garbage("receipt has both transaction_id and in_app") }
            collector.add(try read(object: receiptNode, at: Place(name: "receipt")))
            if let latestNode { collector.add(try one(latestNode, "latest_receipt_info")) }
            if let expiredNode { collector.add(try one(expiredNode, "latest_expired_receipt_info")) }
        } else {
            guard let inAppNode else { throw Garbage("receipt has no in_app and no transaction_id") }
            try each(inAppNode, "in_app", into: &collector)
            if let latestNode { try each(latestNode, "latest_receipt_info", into: &collector) }
            if let expiredNode { try each(expiredNode, "latest_expired_receipt_info", into: &collector) }
        }

        var bundles: [String] = []
        if let receiptBundle { bundles.append(receiptBundle) }
        var transactions: [AppleTransaction] = []
        transactions.reserveCapacity(collector.partials.count)
        for partial in collector.partials {
            if let own = partial.bundleID, !bundles.contains(own) { bundles.append(own) }
            transactions.append(partial.transaction(environment: environment, receiptBundle: receiptBundle))
        }
        return ReceiptContents(bundleID: receiptBundle, bundles: bundles, transactions: transactions)
    }

    /// iOS 6 style `latest_*_info`: exactly one transaction object.
    private func one(_ node: Int, _ name: StaticString) throws -> PartialTransaction {
        guard doc.kind(node) == .object else { throw Garbage("\(name) is \(doc.kindName(node))") }
        return try read(object: node, at: Place(name: name))
    }

    /// iOS 7 style `in_app` / `latest_*_info`: an array of transaction objects.
    private func each(_ node: Int, _ name: StaticString, into collector: inout Collector) throws {
        guard doc.kind(node) == .array else { throw Garbage("\(name) is \(doc.kindName(node))") }
        try doc.forEachElement(of: node) { position, element in
            guard doc.kind(element) == .object else {
                throw Garbage("\(name)[\(position)] is \(doc.kindName(element))")
            }
            collector.add(try read(object: element, at: Place(name: name, index: position)))
        }
    }

    /// The transaction fields of one object. Every field the job reads is checked when present;
    /// the rest (`*_pst`, `item_id`, …) only had to be valid JSON.
    private func read(object: Int, at place: Place) throws -> PartialTransaction {
        var tid, otid, pid, qty, trial, wol, bid, bundleID, reason: Int?
        var purchase = DateNodes(), original = DateNodes(), expires = DateNodes(), cancel = DateNodes()
        doc.forEachMember(of: object) { k, v in
            if doc.keyIs(k, "transaction_id") { tid = v }
            else if doc.keyIs(k, "original_transaction_id") { otid = v }
            else if doc.keyIs(k, "product_id") { pid = v }
            else if doc.keyIs(k, "quantity") { qty = v }
            else if doc.keyIs(k, "purchase_date_ms") { purchase.ms = v }
            else if doc.keyIs(k, "purchase_date") { purchase.text = v }
            else if doc.keyIs(k, "original_purchase_date_ms") { original.ms = v }
            else if doc.keyIs(k, "original_purchase_date") { original.text = v }
            else if doc.keyIs(k, "expires_date_ms") { expires.ms = v }
            else if doc.keyIs(k, "expires_date") { expires.text = v }
            else if doc.keyIs(k, "expires_date_formatted") { expires.formatted = v }
            else if doc.keyIs(k, "cancellation_date_ms") { cancel.ms = v }
            else if doc.keyIs(k, "cancellation_date") { cancel.text = v }
            else if doc.keyIs(k, "cancellation_reason") { reason = v }
            else if doc.keyIs(k, "is_trial_period") { trial = v }
            else if doc.keyIs(k, "web_order_line_item_id") { wol = v }
            else if doc.keyIs(k, "bid") { bid = v }
            else if doc.keyIs(k, "bundle_id") { bundleID = v }
        }
        guard let tid else { throw Garbage("\(place.description) has no transaction_id") }
        var p = PartialTransaction(transactionID: try doc.identifier(tid, field: place.field("transaction_id")))
        p.originalTransactionID = try otid.map { try doc.identifier($0, field: place.field("original_transaction_id")) }
        p.webOrderLineItemID = try wol.map { try doc.identifier($0, field: place.field("web_order_line_item_id")) }
        p.productID = try pid.map { try doc.textValue($0, field: place.field("product_id")) }.flatMap { $0.isEmpty ? nil : $0 }
        if let qty { p.quantity = try doc.quantity(qty, field: place.field("quantity")) }
        p.purchaseDate = try date(purchase, place, "purchase_date_ms", "purchase_date")
        p.originalPurchaseDate = try date(original, place, "original_purchase_date_ms", "original_purchase_date")
        p.expiresDate = try date(expires, place, "expires_date_ms", "expires_date", "expires_date_formatted")
        p.cancellationDate = try date(cancel, place, "cancellation_date_ms", "cancellation_date")
        p.cancellationReason = try reason.map { try doc.identifier($0, field: place.field("cancellation_reason")) }
        p.isTrialPeriod = try trial.map { try doc.flag($0, field: place.field("is_trial_period")) }
        let ownBid = try bid.map { try doc.textValue($0, field: place.field("bid")) }
        let ownBundle = try bundleID.map { try doc.textValue($0, field: place.field("bundle_id")) }
        p.bundleID = [ownBid, ownBundle].lazy.compactMap { $0 }.first { !$0.isEmpty }
        return p
    }

    /// Where one date can be: `X_ms`, `X` (text, or epoch ms in iOS 6 style `expires_date`),
    /// `X_formatted` (iOS 6 style text of `expires_date`).
    private struct DateNodes {
        var ms: Int?
        var text: Int?
        var formatted: Int?
    }

    /// Every present field must be a date; `X_ms` is preferred, then `X`, then `X_formatted`.
    private func date(_ nodes: DateNodes, _ place: Place, _ msName: StaticString, _ textName: StaticString,
                      _ formattedName: StaticString = "") throws -> EpochMillis? {
        let ms = try nodes.ms.map { try doc.date($0, field: place.field(msName)) }
        let text = try nodes.text.map { try doc.date($0, field: place.field(textName)) }
        let formatted = try nodes.formatted.map { try doc.date($0, field: place.field(formattedName)) }
        return ms ?? text ?? formatted
    }
}

/// Apple's `*_date` text. Delegates to `UTC.parse`, which also accepts `Etc/GMT`.
enum AppleDate {
    /// The largest date accepted: 9999-12-31 23:59:59.999 UTC.
    static let maxMillis: EpochMillis = 253_402_300_799_999

    static func parse(_ text: String) -> EpochMillis? {
        UTC.parse(text)
    }

    /// The exact form Apple sends, `yyyy-MM-dd HH:mm:ss Etc/GMT`, read from the bytes without
    /// allocating (an answer has several per transaction); nil for any other form, which then
    /// goes to `parse`. Accepts exactly what `UTC.parse` accepts for this form.
    static func parseGMT(_ s: UnsafeBufferPointer<UInt8>) -> EpochMillis? {
        guard s.count == 27, s[4] == 0x2D, s[7] == 0x2D, s[10] == 0x20, s[13] == 0x3A, s[16] == 0x3A else { return nil }
        let suffix: StaticString = " Etc/GMT"
        let p = suffix.utf8Start
        for i in 0..<8 where s[19 + i] != p[i] { return nil }
        return dateAndTime(s)
    }

    /// The forms of an app receipt's dates, `yyyy-MM-ddTHH:mm:ssZ` (Apple's) and
    /// `yyyy-MM-ddTHH:mm:ss.SSSZ`, read from the bytes without allocating (a purchase holds three or
    /// four); nil for any other form, which then goes to `parse`. Accepts exactly what `UTC.parse`
    /// accepts for these forms (a test holds them equal).
    static func parseZulu(_ s: UnsafeBufferPointer<UInt8>) -> EpochMillis? {
        guard s.count == 20 || s.count == 24, s[4] == 0x2D, s[7] == 0x2D, s[10] == 0x54 || s[10] == 0x20,
            s[13] == 0x3A, s[16] == 0x3A, s[s.count - 1] == 0x5A || s[s.count - 1] == 0x7A
        else { return nil }
        guard s.count == 24 else { return dateAndTime(s) }
        guard s[19] == 0x2E, let fraction = UTC.digits(s, from: 20, count: 3) else { return nil }
        return dateAndTime(s).map { $0 + fraction }
    }

    /// `yyyy-MM-dd?HH:mm:ss` at the start of `s`, its separators checked by the caller: a date
    /// that exists and a time `UTC.parse` accepts.
    private static func dateAndTime(_ s: UnsafeBufferPointer<UInt8>) -> EpochMillis? {
        func num(_ from: Int, _ count: Int) -> Int64? { UTC.digits(s, from: from, count: count) }
        guard let y = num(0, 4), let mo = num(5, 2), let d = num(8, 2), let h = num(11, 2), let mi = num(14, 2),
              let se = num(17, 2), (1...12).contains(mo), h < 24, mi < 60, se < 61 else { return nil }
        let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
        let days: Int64
        switch mo {
        case 2: days = leap ? 29 : 28
        case 4, 6, 9, 11: days = 30
        default: days = 31
        }
        guard (1...days).contains(d) else { return nil }
        return UTC.millis(year: y, month: mo, day: d, hour: h, minute: mi, second: se)
    }
}
/// A transaction as read from one object, before defaults; merged across the places it appears.
struct PartialTransaction {
    var transactionID: String
    var originalTransactionID: String?
    var productID: String?
    var quantity: Int?
    var purchaseDate: EpochMillis?
    var originalPurchaseDate: EpochMillis?
    var expiresDate: EpochMillis?
    var cancellationDate: EpochMillis?
    var cancellationReason: String?
    var isTrialPeriod: Bool?
    var webOrderLineItemID: String?
    var bundleID: String?

    init(transactionID: String) { self.transactionID = transactionID }

    /// How many optional fields are known.
    var completeness: Int {
        var n = 0
        if originalTransactionID != nil { n += 1 }
        if productID != nil { n += 1 }
        if quantity != nil { n += 1 }
        if purchaseDate != nil { n += 1 }
        if originalPurchaseDate != nil { n += 1 }
        if expiresDate != nil { n += 1 }
        if cancellationDate != nil { n += 1 }
        if cancellationReason != nil { n += 1 }
        if isTrialPeriod != nil { n += 1 }
        if webOrderLineItemID != nil { n += 1 }
        if bundleID != nil { n += 1 }
        return n
    }

    /// The more complete of the two wins (the earlier one on a tie); its gaps are filled from the
    /// other. A cancellation seen anywhere is kept (the earliest date when both have one).
    func merged(with other: PartialTransaction) -> PartialTransaction {
        var base = self
        var extra = other
        if other.completeness > completeness { swap(&base, &extra) }
        base.originalTransactionID = base.originalTransactionID ?? extra.originalTransactionID
        base.productID = base.productID ?? extra.productID
        base.quantity = base.quantity ?? extra.quantity
        base.purchaseDate = base.purchaseDate ?? extra.purchaseDate
        base.originalPurchaseDate = base.originalPurchaseDate ?? extra.originalPurchaseDate
        base.expiresDate = base.expiresDate ?? extra.expiresDate
        if let a = base.cancellationDate, let b = extra.cancellationDate {
            base.cancellationDate = min(a, b)
        } else {
            base.cancellationDate = base.cancellationDate ?? extra.cancellationDate
        }
        base.cancellationReason = base.cancellationReason ?? extra.cancellationReason
        base.isTrialPeriod = base.isTrialPeriod ?? extra.isTrialPeriod
        base.webOrderLineItemID = base.webOrderLineItemID ?? extra.webOrderLineItemID
        base.bundleID = base.bundleID ?? extra.bundleID
        return base
    }

    /// Defaults: original_transaction_id = transaction_id, quantity 1, product "" when missing,
    /// purchase date = original purchase date, else 0 (outside every window, yet still visible to
    /// the refund and clawback rules).
    func transaction(environment: AppStoreEnvironment, receiptBundle: String?) -> AppleTransaction {
        AppleTransaction(
            transactionID: transactionID,
            originalTransactionID: originalTransactionID ?? transactionID,
            productID: productID ?? "",
            quantity: quantity ?? 1,
            purchaseDate: purchaseDate ?? originalPurchaseDate ?? 0,
            originalPurchaseDate: originalPurchaseDate,
            expiresDate: expiresDate,
            cancellationDate: cancellationDate,
            cancellationReason: cancellationReason,
            isTrialPeriod: isTrialPeriod,
            webOrderLineItemID: webOrderLineItemID,
            environment: environment,
            bundleID: bundleID ?? receiptBundle
        )
    }
}

/// De-duplicates by transaction_id, keeping first-seen order.
struct Collector {
    var partials: [PartialTransaction] = []
    /// Each transaction id's place in `partials`, made once there are `linearUpTo` of them: a
    /// receipt holds one or two, found faster by a scan than by hashing into a new dictionary.
    private var index: [String: Int] = [:]
    private static let linearUpTo = 16

    mutating func add(_ partial: PartialTransaction?) {
        guard let partial else { return }
        if let at = position(of: partial.transactionID) {
            partials[at] = partials[at].merged(with: partial)
            return
        }
        if index.isEmpty, partials.count >= Self.linearUpTo {
            for (i, p) in partials.enumerated() { index[p.transactionID] = i }
        }
        if !index.isEmpty { index[partial.transactionID] = partials.count }
        partials.append(partial)
    }

    private func position(of id: String) -> Int? {
        index.isEmpty ? partials.firstIndex { $0.transactionID == id } : index[id]
    }
}
