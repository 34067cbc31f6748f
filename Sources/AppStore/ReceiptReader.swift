// Reading the transactions out of an ok (0 / 21006) verifyReceipt answer, iOS 6 and iOS 7 style.

import Reconciliation

/// The receipt part of an ok answer.
struct ReceiptContents {
    /// `receipt.bundle_id`, or `receipt.bid` (iOS 6 style).
    var bundleID: String?
    /// Every bundle id the answer names (the receipt's and each transaction's own `bid`), distinct.
    var bundles: [String]
    var transactions: [AppleTransaction]
}

struct ReceiptReader {
    let doc: JSONDocument
    let environment: AppStoreEnvironment

    /// nil when the answer has no `receipt` object.
    func read() -> ReceiptContents? {
        var receiptNode: Int?
        var latestNode: Int?
        var expiredNode: Int?
        doc.forEachMember(of: 0) { key, value in
            if doc.keyIs(key, "receipt") {
                if receiptNode == nil { receiptNode = value }
            } else if doc.keyIs(key, "latest_receipt_info") {
                if latestNode == nil { latestNode = value }
            } else if doc.keyIs(key, "latest_expired_receipt_info") {
                if expiredNode == nil { expiredNode = value }
            }
        }
        guard let receiptNode, doc.kind(receiptNode) == .object else { return nil }

        var bundleIDNode: Int?
        var bidNode: Int?
        var inAppNode: Int?
        doc.forEachMember(of: receiptNode) { key, value in
            if doc.keyIs(key, "bundle_id") {
                if bundleIDNode == nil { bundleIDNode = value }
            } else if doc.keyIs(key, "bid") {
                if bidNode == nil { bidNode = value }
            } else if doc.keyIs(key, "in_app") {
                if inAppNode == nil { inAppNode = value }
            }
        }
        let receiptBundle = nonEmptyText(bundleIDNode) ?? nonEmptyText(bidNode)

        // Order of preference on ties when merging: the receipt's own transactions first.
        var collector = Collector()
        if let inAppNode { collect(inAppNode, into: &collector) }
        collector.add(read(object: receiptNode))  // iOS 6 style: the receipt is a transaction
        if let latestNode { collect(latestNode, into: &collector) }
        if let expiredNode { collect(expiredNode, into: &collector) }

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

    /// An object, or an array of objects (`latest_receipt_info` is either, by style).
    private func collect(_ node: Int, into collector: inout Collector) {
        switch doc.kind(node) {
        case .object:
            collector.add(read(object: node))
        case .array:
            doc.forEachElement(of: node) { element in
                if doc.kind(element) == .object { collector.add(read(object: element)) }
            }
        default:
            break
        }
    }

    private func nonEmptyText(_ node: Int?) -> String? {
        guard let node, let text = doc.text(node), !text.isEmpty else { return nil }
        return text
    }

    /// The transaction fields of one object; nil when it has no transaction_id.
    private func read(object: Int) -> PartialTransaction? {
        var tid, otid, pid, qty, trial, wol, bid, bundleID, reason: Int?
        var purchase = DateNodes(), original = DateNodes(), expires = DateNodes(), cancel = DateNodes()
        doc.forEachMember(of: object) { k, v in
            // One pass over the members; the first occurrence of a key counts.
            if doc.keyIs(k, "transaction_id") { tid = tid ?? v }
            else if doc.keyIs(k, "original_transaction_id") { otid = otid ?? v }
            else if doc.keyIs(k, "product_id") { pid = pid ?? v }
            else if doc.keyIs(k, "quantity") { qty = qty ?? v }
            else if doc.keyIs(k, "purchase_date_ms") { purchase.ms = purchase.ms ?? v }
            else if doc.keyIs(k, "purchase_date") { purchase.text = purchase.text ?? v }
            else if doc.keyIs(k, "original_purchase_date_ms") { original.ms = original.ms ?? v }
            else if doc.keyIs(k, "original_purchase_date") { original.text = original.text ?? v }
            else if doc.keyIs(k, "expires_date_ms") { expires.ms = expires.ms ?? v }
            else if doc.keyIs(k, "expires_date") { expires.text = expires.text ?? v }
            else if doc.keyIs(k, "expires_date_formatted") { expires.formatted = expires.formatted ?? v }
            else if doc.keyIs(k, "cancellation_date_ms") { cancel.ms = cancel.ms ?? v }
            else if doc.keyIs(k, "cancellation_date") { cancel.text = cancel.text ?? v }
            else if doc.keyIs(k, "cancellation_reason") { reason = reason ?? v }
            else if doc.keyIs(k, "is_trial_period") { trial = trial ?? v }
            else if doc.keyIs(k, "web_order_line_item_id") { wol = wol ?? v }
            else if doc.keyIs(k, "bid") { bid = bid ?? v }
            else if doc.keyIs(k, "bundle_id") { bundleID = bundleID ?? v }
        }
        guard let transactionID = nonEmptyText(tid) else { return nil }
        var p = PartialTransaction(transactionID: transactionID)
        p.originalTransactionID = nonEmptyText(otid)
        p.productID = nonEmptyText(pid)
        if let qty, let q = doc.integer(qty), q >= 1 { p.quantity = Int(clamping: q) }
        p.purchaseDate = date(purchase)
        p.originalPurchaseDate = date(original)
        p.expiresDate = date(expires)
        p.cancellationDate = date(cancel)
        p.cancellationReason = nonEmptyText(reason)
        p.isTrialPeriod = trial.flatMap { doc.bool($0) }
        p.webOrderLineItemID = nonEmptyText(wol)
        p.bundleID = nonEmptyText(bid) ?? nonEmptyText(bundleID)
        return p
    }

    /// Where one date can be: `X_ms`, `X` (text, or epoch ms in iOS 6 style `expires_date`),
    /// `X_formatted` (iOS 6 style text of `expires_date`).
    private struct DateNodes {
        var ms: Int?
        var text: Int?
        var formatted: Int?
    }

    /// Prefers `X_ms` (number or digits), then `X` as digits or as `yyyy-MM-dd HH:mm:ss Etc/GMT`,
    /// then `X_formatted`.
    private func date(_ nodes: DateNodes) -> EpochMillis? {
        if let ms = nodes.ms, let value = doc.integer(ms) { return value }
        if let node = nodes.text {
            if let value = doc.integer(node) { return value }
            if let text = doc.text(node), let value = AppleDate.parse(text) { return value }
        }
        if let node = nodes.formatted, let text = doc.text(node), let value = AppleDate.parse(text) {
            return value
        }
        return nil
    }
}

/// Apple's `*_date` text. Delegates to `UTC.parse`, which also accepts `Etc/GMT`.
enum AppleDate {
    static func parse(_ text: String) -> EpochMillis? {
        UTC.parse(text)
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
    private var index: [String: Int] = [:]

    mutating func add(_ partial: PartialTransaction?) {
        guard let partial else { return }
        if let at = index[partial.transactionID] {
            partials[at] = partials[at].merged(with: partial)
        } else {
            index[partial.transactionID] = partials.count
            partials.append(partial)
        }
    }
}
