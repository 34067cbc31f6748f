// What Apple knows: one row per Apple transaction, the truth the simulated App Store Server API
// answers from (`iap-sim seed --apple-truth FILE` writes it, `iap-sim serve --apple-truth FILE`
// reads it). verifyReceipt reads the same facts from the receipt tokens.
//
// The file is tab-separated text, one transaction per line, after a header line naming the
// columns (any order; unknown columns are ignored; `#` lines and blank lines are skipped). An empty
// cell is "none". Columns: transaction_id, original_transaction_id, product_id, product_type
// (consumable, non_consumable, auto_renewable, non_renewing), quantity, purchase_date_ms,
// original_purchase_date_ms, expires_date_ms, web_order_line_item_id, environment (production,
// sandbox), bundle_id, customer (our user id: the customer whose history holds the transaction),
// order_id (Apple's invoice order id), app_account_token, cancellation_date_ms,
// cancellation_reason, receipt_id (the first upload that showed it), storefront (USA, JPN, DEU;
// empty = USA), price (Apple's signed price: milliunits of currency for the whole transaction,
// quantity included) and currency (the storefront's), revocation_type (REFUND_FULL, the default;
// REFUND_PRORATED; FAMILY_REVOKE), revocation_percentage (milliunits of a percent, prorated
// refunds only), reversal_date_ms (Apple reversed the refund: REFUND_REVERSED),
// consumption_request_ms (Apple sent CONSUMPTION_REQUEST for it: the notification's signedDate,
// UNIX ms, after the purchase) with consumption_request_reason (its consumptionRequestReason:
// UNINTENDED_PURCHASE, FULFILLMENT_ISSUE, UNSATISFIED_WITH_PURCHASE, LEGAL, OTHER; the two go
// together), ownership (inAppOwnershipType: FAMILY_SHARED, or empty = PURCHASED), notifications
// (`none`: Apple sent no notification for it, a purchase the shop never saw, `iap-sim seed
// --unseen-share`; empty = sent). Required:
// transaction_id, product_id, purchase_date_ms, environment, bundle_id. A refund column without
// cancellation_date_ms, a price without its currency, or a currency that is not the storefront's
// is refused (with the line): the simulator would otherwise sign something Apple never would.

import Reconciliation

/// One Apple transaction as Apple knows it.
public struct AppleTruthRow: Sendable, Equatable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var productType: ProductType
    public var quantity: Int
    public var purchaseDateMs: Int64
    public var originalPurchaseDateMs: Int64
    public var expiresDateMs: Int64?
    public var webOrderLineItemID: String?
    public var environment: AppStoreEnvironment
    public var bundleID: String
    /// Whose transaction history holds it (the generator's user id).
    public var customer: String
    /// Apple's order id (the invoice's), e.g. `MK5TTTVWJH`.
    public var orderID: String
    /// The UUID the app set at purchase, if any.
    public var appAccountToken: String?
    /// Apple refunded it.
    public var refund: SimRefund?
    /// The first upload that showed the transaction (for people reading the file).
    public var receiptID: String?
    /// Where it was bought: a fact of the transaction, so every answer signs the same price.
    public var storefront: SimStorefront
    /// Apple's `price`: milliunits of `currency` for the whole transaction; nil = not signed.
    public var price: Int64?
    /// Apple's `currency` (the storefront's), with `price`.
    public var currency: String?
    /// Apple asked for consumption information (CONSUMPTION_REQUEST), if it did.
    public var consumptionRequest: SimConsumptionRequest?
    /// `inAppOwnershipType` FAMILY_SHARED (a family member's access) instead of PURCHASED.
    public var familyShared = false
    /// Apple sent the app's server its notifications (false: a purchase the shop never saw, only
    /// the sales report shows it).
    public var notified = true

    public init(transactionID: String, originalTransactionID: String? = nil, productID: String,
                productType: ProductType, quantity: Int = 1, purchaseDateMs: Int64, originalPurchaseDateMs: Int64? = nil,
                expiresDateMs: Int64? = nil, webOrderLineItemID: String? = nil, environment: AppStoreEnvironment = .production,
                bundleID: String, customer: String, orderID: String? = nil, appAccountToken: String? = nil,
                refund: SimRefund? = nil, receiptID: String? = nil, storefront: SimStorefront = .usa,
                price: Int64? = nil, consumptionRequest: SimConsumptionRequest? = nil, familyShared: Bool = false) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID ?? transactionID
        self.productID = productID
        self.productType = productType
        self.quantity = quantity
        self.purchaseDateMs = purchaseDateMs
        self.originalPurchaseDateMs = originalPurchaseDateMs ?? purchaseDateMs
        self.expiresDateMs = expiresDateMs
        self.webOrderLineItemID = webOrderLineItemID
        self.environment = environment
        self.bundleID = bundleID
        self.customer = customer
        self.orderID = orderID ?? AppleOrderID.derive(transactionID: transactionID)
        self.appAccountToken = appAccountToken
        self.refund = refund
        self.receiptID = receiptID
        self.storefront = storefront
        self.price = price
        currency = price == nil ? nil : storefront.currency
        self.consumptionRequest = consumptionRequest
        self.familyShared = familyShared
    }
}

/// A CONSUMPTION_REQUEST Apple sent for a transaction: when (the notification's `signedDate`)
/// and why (`consumptionRequestReason`).
public struct SimConsumptionRequest: Sendable, Equatable {
    public var signedDateMs: Int64
    public var reason: String

    /// Apple's consumptionRequestReason values (Notifications 2.11+).
    public static let reasons = ["UNINTENDED_PURCHASE", "FULFILLMENT_ISSUE", "UNSATISFIED_WITH_PURCHASE", "LEGAL", "OTHER"]

    public init(signedDateMs: Int64, reason: String) {
        self.signedDateMs = signedDateMs
        self.reason = reason
    }
}

/// Apple's invoice order ids: 10 upper-case letters and digits. The simulator derives one from
/// the transaction id by hash, so the same data always has the same order ids.
public enum AppleOrderID {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)

    public static func derive(transactionID: String) -> String {
        var h = SimHash.combine(SimHash.fnv(transactionID), 0x0D3E_71D5)
        var out = [UInt8]()
        out.reserveCapacity(10)
        for _ in 0..<10 {
            out.append(alphabet[Int(h % 36)])
            h /= 36
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// 1 to 64 letters and digits: what may be looked up (anything else is a bad request).
    public static func isWellFormed(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
        }
    }
}

/// Why a truth file cannot be read: the line (1-based) and what is wrong with it.
public struct AppleTruthError: Error, CustomStringConvertible, Sendable {
    public var line: Int
    public var problem: String
    public var description: String { "apple truth line \(line): \(problem)" }
}

/// The truth file's text form.
public enum AppleTruthFile {
    public static let columns = [
        "transaction_id", "original_transaction_id", "product_id", "product_type", "quantity", "purchase_date_ms",
        "original_purchase_date_ms", "expires_date_ms", "web_order_line_item_id", "environment", "bundle_id",
        "customer", "order_id", "app_account_token", "cancellation_date_ms", "cancellation_reason", "receipt_id",
        "storefront", "price", "currency", "revocation_type", "revocation_percentage", "reversal_date_ms",
        "consumption_request_ms", "consumption_request_reason", "ownership", "notifications",
    ]

    public static var header: String { columns.joined(separator: "\t") + "\n" }

    /// One line (with its newline). Tabs and line breaks in a value become spaces.
    public static func line(_ r: AppleTruthRow) -> String {
        let cells: [String?] = [
            r.transactionID, r.originalTransactionID, r.productID, r.productType.rawValue, String(r.quantity),
            String(r.purchaseDateMs), String(r.originalPurchaseDateMs), r.expiresDateMs.map { String($0) },
            r.webOrderLineItemID, r.environment.rawValue, r.bundleID, r.customer, r.orderID, r.appAccountToken,
            r.refund.map { String($0.cancellationDateMs) }, r.refund?.reason, r.receiptID, r.storefront.code,
            r.price.map { String($0) }, r.currency, r.refund?.type, r.refund?.percentage.map { String($0) },
            r.refund?.reversedMs.map { String($0) }, r.consumptionRequest.map { String($0.signedDateMs) },
            r.consumptionRequest?.reason, r.familyShared ? "FAMILY_SHARED" : nil, r.notified ? nil : "none",
        ]
        var out = ""
        for (i, cell) in cells.enumerated() {
            if i > 0 { out += "\t" }
            guard let cell else { continue }
            out += cell.contains(where: { $0 == "\t" || $0 == "\n" || $0 == "\r" })
                ? String(cell.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 }) : cell
        }
        return out + "\n"
    }

    /// Reads a whole file; throws on the first line it cannot read (a wrong truth is worse than none).
    public static func parse(_ text: String) throws -> [AppleTruthRow] {
        var rows: [AppleTruthRow] = []
        var index: [String: Int]?
        var lineNumber = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = raw
            if line.last == "\r" { line = line.dropLast() }
            if line.isEmpty || line.hasPrefix("#") { continue }
            let cells = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard let columns = index else {
                var names: [String: Int] = [:]
                for (i, c) in cells.enumerated() where names[String(c)] == nil { names[String(c)] = i }
                for required in ["transaction_id", "product_id", "purchase_date_ms", "environment", "bundle_id"]
                where names[required] == nil {
                    throw AppleTruthError(line: lineNumber, problem: "the header names no \(required) column")
                }
                index = names
                continue
            }
            rows.append(try row(cells, columns: columns, line: lineNumber))
        }
        return rows
    }

    private static func row(_ cells: [Substring], columns: [String: Int], line: Int) throws -> AppleTruthRow {
        func cell(_ name: String) -> String? {
            guard let i = columns[name], i < cells.count, !cells[i].isEmpty else { return nil }
            return String(cells[i])
        }
        func fail(_ problem: String) -> AppleTruthError { AppleTruthError(line: line, problem: problem) }
        func int(_ name: String) throws -> Int64? {
            guard let text = cell(name) else { return nil }
            guard let v = Int64(text) else { throw fail("\(name) is not an integer") }
            return v
        }
        guard let tid = cell("transaction_id"), let pid = cell("product_id"), let bundle = cell("bundle_id") else {
            throw fail("transaction_id, product_id and bundle_id must not be empty")
        }
        guard let pd = try int("purchase_date_ms") else { throw fail("purchase_date_ms is empty") }
        guard let env = cell("environment").flatMap(AppStoreEnvironment.init(rawValue:)) else {
            throw fail("environment must be production or sandbox")
        }
        var type = ProductType.consumable
        if let text = cell("product_type") {
            guard let t = ProductType(rawValue: text) else { throw fail("unknown product_type \(text)") }
            type = t
        }
        let quantity = try int("quantity") ?? 1
        guard (1...1_000_000).contains(quantity) else { throw fail("quantity \(quantity) is out of range") }
        let refund = try refundCells(cell, int, fail)
        var store = SimStorefront.usa
        if let code = cell("storefront") {
            guard let s = SimStorefront.named(code) else {
                throw fail("unknown storefront \(code) (one of \(SimStorefront.all.map(\.code).joined(separator: ", ")))")
            }
            store = s
        }
        let price = try int("price")
        if let price, !(0...1_000_000_000_000).contains(price) { throw fail("price \(price) is out of range") }
        switch (price, cell("currency")) {
        case (nil, nil): break
        case (_?, let c?) where c == store.currency: break
        case (_?, let c?): throw fail("currency \(c) is not the \(store.code) storefront's \(store.currency)")
        case (_?, nil): throw fail("price without currency")
        case (nil, _?): throw fail("currency without price")
        }
        var request: SimConsumptionRequest?
        switch (try int("consumption_request_ms"), cell("consumption_request_reason")) {
        case (nil, nil): break
        case (let at?, let reason?):
            guard SimConsumptionRequest.reasons.contains(reason) else {
                throw fail("unknown consumption_request_reason \(reason) (one of \(SimConsumptionRequest.reasons.joined(separator: ", ")))")
            }
            guard at > pd else { throw fail("consumption_request_ms is not after purchase_date_ms") }
            request = SimConsumptionRequest(signedDateMs: at, reason: reason)
        case (_?, nil): throw fail("consumption_request_ms without consumption_request_reason")
        case (nil, _?): throw fail("consumption_request_reason without consumption_request_ms")
        }
        var familyShared = false
        if let o = cell("ownership") {
            guard o == "FAMILY_SHARED" || o == "PURCHASED" else { throw fail("unknown ownership \(o) (FAMILY_SHARED, PURCHASED or empty)") }
            familyShared = o == "FAMILY_SHARED"
        }
        var notified = true
        if let n = cell("notifications") {
            guard n == "none" else { throw fail("unknown notifications \(n) (none or empty)") }
            notified = false
        }
        var row = AppleTruthRow(
            transactionID: tid, originalTransactionID: cell("original_transaction_id"), productID: pid, productType: type,
            quantity: Int(quantity), purchaseDateMs: pd, originalPurchaseDateMs: try int("original_purchase_date_ms"),
            expiresDateMs: try int("expires_date_ms"), webOrderLineItemID: cell("web_order_line_item_id"),
            environment: env, bundleID: bundle, customer: cell("customer") ?? "customer-of-" + tid,
            orderID: cell("order_id"), appAccountToken: cell("app_account_token"), refund: refund,
            receiptID: cell("receipt_id"), storefront: store, price: price, consumptionRequest: request,
            familyShared: familyShared)
        row.notified = notified
        return row
    }

    /// The refund of a line: cancellation_date_ms and what only the Server API shows of it.
    private static func refundCells(_ cell: (String) -> String?, _ int: (String) throws -> Int64?,
                                    _ fail: (String) -> AppleTruthError) throws -> SimRefund? {
        let type = cell("revocation_type"), percentage = try int("revocation_percentage")
        let reversed = try int("reversal_date_ms")
        guard let at = try int("cancellation_date_ms") else {
            if type != nil || percentage != nil || reversed != nil {
                throw fail("revocation_type, revocation_percentage and reversal_date_ms need a cancellation_date_ms")
            }
            return nil
        }
        if let type, !SimRefund.types.contains(type) {
            throw fail("unknown revocation_type \(type) (one of \(SimRefund.types.sorted().joined(separator: ", ")))")
        }
        if let percentage, !(0...100_000).contains(percentage) {
            throw fail("revocation_percentage \(percentage) is out of 0...100000")
        }
        guard (type == "REFUND_PRORATED") == (percentage != nil) else {
            throw fail("a revocation_percentage goes with revocation_type REFUND_PRORATED, and only with it")
        }
        if let reversed {
            guard reversed >= at else { throw fail("reversal_date_ms is before cancellation_date_ms") }
            guard type != "FAMILY_REVOKE" else { throw fail("a FAMILY_REVOKE is not a refund: it cannot be reversed") }
        }
        return SimRefund(cancellationDateMs: at, reason: cell("cancellation_reason") ?? "0", type: type,
                         percentage: percentage.map { Int($0) }, reversedMs: reversed)
    }
}
