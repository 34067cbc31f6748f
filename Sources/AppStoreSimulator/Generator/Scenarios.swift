// The scenarios the generator plays, one per user (two users for cross_account), and the
// report rows the job must write for each on its first run (docs/rules.md). The expected rows
// come from what each scenario built, not from a rule engine.

import Reconciliation

/// What happens to one user. `perMille` is the chance per user slot.
public enum Scenario: String, CaseIterable, Sendable {
    case cleanConsumable = "clean_consumable"
    case cleanNonConsumable = "clean_non_consumable"
    case cleanSubscription = "clean_subscription"
    case paidNotGrantedReceiptOrder = "paid_not_granted_exact_receipt_order"
    case paidNotGrantedOrderTransaction = "paid_not_granted_exact_order_transaction"
    case paidNotGrantedEarliestReceipt = "paid_not_granted_earliest_receipt"
    case inferredSingle = "inferred_single"
    case inferredClosest = "inferred_closest"
    case inferredWindowEdge = "inferred_window_edge"
    case inferredEachOrderOnce = "inferred_each_order_once"
    case noOrder = "none_no_order"
    case partiallyGranted = "partially_granted"
    case revokedNotRefunded = "revoked_not_refunded"
    case sameTransaction = "same_transaction"
    case restoreNonConsumable = "restore_as_purchase_non_consumable"
    case restoreNonRenewing = "restore_as_purchase_non_renewing"
    case restoreAutoRenewable = "restore_as_purchase_auto_renewable"
    case restoreNotGranted = "restore_not_granted"
    case crossAccount = "cross_account"
    case refunded = "refunded"
    case refundedDuplicate = "refunded_duplicate"
    case invalidReceipt = "invalid_receipt"
    case wrongBundle = "wrong_bundle"
    case transactionNotFound = "transaction_not_found"
    case sandboxGranted = "sandbox_granted"
    case sandboxMissed = "sandbox_missed"
    case outsideWindow = "missed_outside_window"
    case renewalNotGranted = "renewal_not_granted"
    case expiredSubscription = "expired_subscription_21006"
    case malformedReceipt = "malformed_receipt_21002"

    /// Chance per user slot, in thousandths (they add up to 1000).
    public var perMille: Int {
        switch self {
        case .cleanConsumable: return 640
        case .cleanNonConsumable: return 30
        case .cleanSubscription: return 30
        case .paidNotGrantedReceiptOrder, .paidNotGrantedOrderTransaction, .sameTransaction: return 14
        case .paidNotGrantedEarliestReceipt, .inferredClosest, .inferredWindowEdge, .inferredEachOrderOnce,
             .restoreNotGranted, .wrongBundle, .transactionNotFound, .sandboxGranted, .outsideWindow,
             .expiredSubscription:
            return 10
        case .inferredSingle, .noOrder, .partiallyGranted, .revokedNotRefunded, .restoreNonConsumable,
             .restoreNonRenewing, .restoreAutoRenewable, .refunded, .invalidReceipt, .renewalNotGranted:
            return 12
        case .crossAccount: return 8
        case .sandboxMissed: return 8
        case .refundedDuplicate, .malformedReceipt: return 6
        }
    }

    /// How many user slots the scenario uses.
    var userSlots: Int { self == .crossAccount ? 2 : 1 }

    var isClean: Bool { self == .cleanConsumable || self == .cleanNonConsumable || self == .cleanSubscription }
}

/// Everything the generator needs to know, shared by every pass.
struct GeneratorSettings {
    var users: Int
    var seed: UInt64
    var asOf: Int64
    var catalog: Catalog
    /// Refunds are served (the refund list is written): refund scenarios expect clawbacks.
    var refundsServed: Bool
    var badRows: Bool

    var firstSeen: String { UTC.date(asOf) }
}

/// One scenario's rows and expected findings.
struct UserData {
    var scenario: Scenario?
    var orders: [OrderRow] = []
    var receipts: [ReceiptRow] = []
    var grants: [GrantRow] = []
    var products: [ProductRow] = []
    var refunds: [RefundRow] = []
    var compensate: [[String]] = []
    var duplicates: [[String]] = []
    var clawback: [[String]] = []
    var inputErrors: [[String]] = []
}

/// Walks the user slots in order and builds each scenario; every pass sees the same data.
struct ScenarioPlan {
    let settings: GeneratorSettings

    /// The scenarios that every database of at least `4 × count` users contains once at its start.
    private var guaranteed: [Scenario] { Scenario.allCases.filter { !$0.isClean } }

    func forEach(_ body: (UserData) throws -> Void) rethrows {
        let n = settings.users
        let forced = n >= 4 * (guaranteed.count + 1) ? guaranteed : []
        var u = 0
        var forcedIndex = 0
        while u < n {
            var rng = SeededRandom(seed: SimHash.combine(settings.seed, UInt64(u), 0x5CE7))
            var scenario: Scenario
            if forcedIndex < forced.count {
                scenario = forced[forcedIndex]
                forcedIndex += 1
            } else {
                scenario = Self.draw(&rng)
            }
            if scenario.userSlots > 1 && u + scenario.userSlots > n { scenario = .cleanConsumable }
            var b = ScenarioBuilder(settings: settings, rng: rng, u: u)
            b.build(scenario)
            b.data.scenario = scenario
            try body(b.data)
            u += scenario.userSlots
        }
        if settings.badRows { try body(badRowData()) }
    }

    /// The rows of the bad-row block alone (empty without --bad-rows).
    func badRowData() -> UserData {
        guard settings.badRows else { return UserData() }
        var b = ScenarioBuilder(settings: settings, rng: SeededRandom(seed: SimHash.combine(settings.seed, 0xBAD)),
                                u: settings.users)
        b.badRows()
        return b.data
    }

    static func draw(_ rng: inout SeededRandom) -> Scenario {
        var x = Int.random(in: 0..<1000, using: &rng)
        for s in Scenario.allCases {
            if x < s.perMille { return s }
            x -= s.perMille
        }
        return .cleanConsumable
    }
}

/// Builds the rows of one scenario.
struct ScenarioBuilder {
    let settings: GeneratorSettings
    var rng: SeededRandom
    let u: Int
    var data = UserData()
    private var counters: [Int: (o: Int, r: Int, g: Int, t: Int)] = [:]

    init(settings: GeneratorSettings, rng: SeededRandom, u: Int) {
        self.settings = settings
        self.rng = rng
        self.u = u
    }

    var asOf: Int64 { settings.asOf }
    var cat: Catalog { settings.catalog }

    // MARK: - Row makers

    private mutating func next(_ u: Int, _ field: WritableKeyPath<(o: Int, r: Int, g: Int, t: Int), Int>) -> Int {
        var c = counters[u] ?? (0, 0, 0, 0)
        let k = c[keyPath: field]
        c[keyPath: field] = k + 1
        counters[u] = c
        return k
    }

    mutating func tid(_ u: Int) -> String { IDs.transaction(u, next(u, \.t)) }

    /// A transaction id and a web-order-line-item id from the same counter slot.
    mutating func tidAndWol(_ u: Int) -> (String, String) {
        let k = next(u, \.t)
        return (IDs.transaction(u, k), IDs.webOrderLine(u, k))
    }

    @discardableResult
    mutating func order(_ u: Int, _ product: String, qty: Int = 1, status: String, tid: String?, at: Int64) -> OrderRow {
        let row = OrderRow(orderID: IDs.order(u, next(u, \.o)), userID: IDs.user(u), productID: product, quantity: qty,
                           status: status, transactionID: tid, createdAt: at)
        data.orders.append(row)
        return row
    }

    @discardableResult
    mutating func receipt(_ u: Int, order: String?, tidColumn: String?, at: Int64, verify: Int?,
                          env: AppStoreEnvironment = .production, style: SimReceipt.Style? = nil, st: Int? = nil,
                          bundle: String? = nil, txs: [SimTransaction]) -> ReceiptRow {
        let id = IDs.receipt(u, next(u, \.r))
        let chosenStyle = style ?? defaultStyle(txs)
        let sim = SimReceipt(rid: id, env: env, bundle: bundle ?? cat.bundle, style: chosenStyle, st: st, txs: txs)
        let row = ReceiptRow(receiptID: id, userID: IDs.user(u), orderID: order, transactionID: tidColumn,
                             rawData: nil, submittedAt: at, verifyStatus: verify, sim: sim)
        data.receipts.append(row)
        return row
    }

    @discardableResult
    mutating func grant(_ u: Int, order: String?, _ product: String, tid: String, otid: String?, qty: Int = 1,
                        at: Int64, revoked: Int64? = nil) -> GrantRow {
        let row = GrantRow(grantID: IDs.grant(u, next(u, \.g)), userID: IDs.user(u), orderID: order, productID: product,
                           transactionID: tid, originalTransactionID: otid, quantity: qty, grantedAt: at, revokedAt: revoked)
        data.grants.append(row)
        return row
    }

    func tx(_ tid: String, otid: String? = nil, _ product: String, qty: Int = 1, at: Int64, original: Int64? = nil,
            expires: Int64? = nil, wol: String? = nil, late: Bool? = nil, type: String? = nil) -> SimTransaction {
        SimTransaction(tid: tid, otid: otid ?? tid, pid: product, qty: qty, pd: at, opd: original ?? at, exp: expires,
                       wol: wol, trial: false, type: type ?? cat.type(of: product).rawValue, late: late)
    }

    /// iOS 6 style only shows one transaction (plus the latest one of an auto-renewable), so a
    /// receipt with more transactions is always iOS 7.
    mutating func defaultStyle(_ txs: [SimTransaction]) -> SimReceipt.Style {
        let ios6Shows = txs.count == 1 || (txs.count == 2 && txs[1].isAutoRenewable && txs[0].isAutoRenewable
            && txs[1].pd >= txs[0].pd)
        return ios6Shows && rng.chance(0.3) ? .ios6 : .ios7
    }

    /// An upload status that leaves the receipt unresolved (contract §2): no answer, or a
    /// temporary error.
    mutating func unresolvedStatus() -> Int? {
        rng.pick([nil, nil, nil, nil, 21005, 21009, 21002] as [Int?])
    }

    /// A purchase time inside the window with room after it (refunds, revocations).
    mutating func purchaseTime(minDaysAgo: Int64 = 3, maxDaysAgo: Int64 = 25) -> Int64 {
        asOf - rng.int(minDaysAgo * Span.day...maxDaysAgo * Span.day)
    }

    mutating func seconds(_ range: ClosedRange<Int64>) -> Int64 { rng.int(range) * Span.second + rng.int(0...999) }

    // MARK: - Expected rows

    mutating func expectCompensate(order: String?, user: Int, _ t: SimTransaction, owed: Int, match: String,
                                   reason: String, receipt: String) {
        data.compensate.append([
            order ?? "", IDs.user(user), t.pid, t.type, String(owed), t.tid, t.otid, UTC.timestamp(t.pd), "production",
            match, reason, receipt, settings.firstSeen,
        ])
    }

    mutating func expectDuplicate(_ g: GrantRow, kind: String, kept: GrantRow) {
        data.duplicates.append([
            g.grantID, g.userID ?? "", g.orderID ?? "", g.productID, cat.type(of: g.productID).rawValue, g.transactionID,
            g.originalTransactionID ?? "", kind, kept.grantID, UTC.timestamp(g.grantedAt), settings.firstSeen,
        ])
    }

    mutating func expectClawback(_ g: GrantRow, reason: String, refund: SimRefund? = nil) {
        data.clawback.append([
            g.grantID, g.userID ?? "", g.orderID ?? "", g.productID, cat.type(of: g.productID).rawValue,
            String(g.quantity), g.transactionID, g.originalTransactionID ?? "", UTC.timestamp(g.grantedAt), reason,
            refund.map { UTC.timestamp($0.cancellationDateMs) } ?? "", refund?.reason ?? "", settings.firstSeen,
        ])
    }

    // MARK: - Scenarios

    mutating func build(_ s: Scenario) {
        switch s {
        case .cleanConsumable: cleanConsumable()
        case .cleanNonConsumable: cleanOne(product: rng.pick(cat.nonConsumables))
        case .cleanSubscription: cleanOne(product: cat.vipMonth)
        case .paidNotGrantedReceiptOrder: paidNotGrantedReceiptOrder()
        case .paidNotGrantedOrderTransaction: paidNotGrantedOrderTransaction()
        case .paidNotGrantedEarliestReceipt: paidNotGrantedEarliestReceipt()
        case .inferredSingle: inferredSingle()
        case .inferredClosest: inferredClosest()
        case .inferredWindowEdge: inferredWindowEdge()
        case .inferredEachOrderOnce: inferredEachOrderOnce()
        case .noOrder: noOrder()
        case .partiallyGranted: partiallyGranted()
        case .revokedNotRefunded: revokedNotRefunded()
        case .sameTransaction: sameTransaction()
        case .restoreNonConsumable: restoreGranted(product: rng.pick(cat.nonConsumables))
        case .restoreNonRenewing: restoreGranted(product: cat.seasonPass)
        case .restoreAutoRenewable: restoreGranted(product: cat.vipMonth)
        case .restoreNotGranted: restoreNotGranted()
        case .crossAccount: crossAccount()
        case .refunded: refunded(duplicate: false)
        case .refundedDuplicate: refunded(duplicate: true)
        case .invalidReceipt: invalidReceipt()
        case .wrongBundle: wrongBundle()
        case .transactionNotFound: transactionNotFound()
        case .sandboxGranted: sandboxGranted()
        case .sandboxMissed: sandboxMissed()
        case .outsideWindow: outsideWindow()
        case .renewalNotGranted: renewal(expired: false)
        case .expiredSubscription: renewal(expired: true)
        case .malformedReceipt: malformedReceipt()
        }
    }

    /// One to three consumable purchases, delivered and granted, uploads answered 0: resolved
    /// receipts (never sent) and nothing to report. Some purchases are older than the window.
    private mutating func cleanConsumable() {
        let purchases = Int(rng.int(1...3))
        for _ in 0..<purchases {
            let p = rng.chance(0.2) ? asOf - rng.int(31 * Span.day...80 * Span.day) : purchaseTime(minDaysAgo: 0, maxDaysAgo: 29)
            let product = rng.pick(cat.consumables)
            let qty = rng.chance(0.1) ? 2 : 1
            let t = tid(u)
            let o = order(u, product, qty: qty, status: "delivered", tid: t, at: p - seconds(5...120))
            receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0,
                    txs: [tx(t, product, qty: qty, at: p)])
            grant(u, order: o.orderID, product, tid: t, otid: t, qty: qty, at: p + seconds(31...60))
        }
    }

    /// A non-consumable or a monthly subscription bought once, granted, upload answered 0. The
    /// refund sweep may re-verify its receipt: Apple shows the same granted transaction.
    private mutating func cleanOne(product: String) {
        let p = purchaseTime(minDaysAgo: 1, maxDaysAgo: 25)
        let isSub = cat.type(of: product) == .autoRenewable
        let (t, w) = tidAndWol(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, at: p, expires: isSub ? p + 30 * Span.day : nil, wol: isSub ? w : nil)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0, txs: [x])
        grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
    }

    /// Paid, the upload got no answer; the receipt names the open order.
    private mutating func paidNotGrantedReceiptOrder() {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = rng.chance(0.8) ? rng.pick(cat.consumables) : rng.pick(cat.nonConsumables)
        let qty = cat.type(of: product) == .consumable && rng.chance(0.25) ? 2 : 1
        let t = tid(u)
        let o = order(u, product, qty: qty, status: rng.pick(["created", "paid"]), tid: nil, at: p - seconds(5...300))
        let x = tx(t, product, qty: qty, at: p)
        let r = receipt(u, order: o.orderID, tidColumn: rng.chance(0.5) ? t : nil, at: p + seconds(2...60),
                        verify: unresolvedStatus(), txs: [x])
        expectCompensate(order: o.orderID, user: u, x, owed: qty, match: "exact", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// The server linked the transaction to the order (status paid) and died before granting;
    /// the upload had status 0 but no grant exists, so the receipt is unresolved.
    private mutating func paidNotGrantedOrderTransaction() {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "paid", tid: t, at: p - seconds(5...300))
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: t, at: p + seconds(2...60), verify: 0, txs: [x])
        expectCompensate(order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// The same purchase uploaded twice; the receipt with the higher id was submitted first and
    /// is the transaction's receipt.
    private mutating func paidNotGrantedEarliestReceipt() {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "created", tid: nil, at: p - seconds(5...300))
        let x = tx(t, product, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(120...600), verify: unresolvedStatus(), txs: [x])
        let first = receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...60), verify: unresolvedStatus(),
                            txs: [x])
        expectCompensate(order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "paid_not_granted",
                         receipt: first.receiptID)
    }

    /// The receipt names no order; one open order of the same product shortly before.
    private mutating func inferredSingle() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "created", tid: nil, at: p - rng.int(Span.minute...23 * Span.hour))
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: rng.chance(0.5) ? t : nil, at: p + seconds(2...60),
                        verify: unresolvedStatus(), txs: [x])
        expectCompensate(order: o.orderID, user: u, x, owed: 1, match: "inferred", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// Two candidate orders (2–20 h and 1–20 min before): the closer one wins. A third open
    /// order of another product is no candidate.
    private mutating func inferredClosest() {
        let p = purchaseTime()
        let product = cat.coins100
        let t = tid(u)
        order(u, product, status: "created", tid: nil, at: p - rng.int(2 * Span.hour...20 * Span.hour))
        let near = order(u, product, status: "created", tid: nil, at: p - rng.int(Span.minute...20 * Span.minute))
        order(u, cat.coins500, status: "created", tid: nil, at: p - rng.int(Span.second...50 * Span.second))
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: nil, at: p + seconds(2...60), verify: unresolvedStatus(), txs: [x])
        expectCompensate(order: near.orderID, user: u, x, owed: 1, match: "inferred", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// The edges of [purchase − 24 h, purchase + 5 min]: (a) an order 1–4 min after the purchase
    /// beats one 40–60 min before; (b) an order 5–6 min after is out, the one 40–60 min before
    /// wins; (c) the only order is just over 24 h before: no match.
    private mutating func inferredWindowEdge() {
        let p = purchaseTime()
        let product = cat.gems
        let t = tid(u)
        let variant = Int(rng.int(0...2))
        var match: OrderRow?
        switch variant {
        case 0:
            let before = order(u, product, status: "created", tid: nil, at: p - rng.int(40 * Span.minute...60 * Span.minute))
            let after = order(u, product, status: "created", tid: nil, at: p + rng.int(Span.minute...4 * Span.minute))
            _ = before
            match = after
        case 1:
            let before = order(u, product, status: "created", tid: nil, at: p - rng.int(40 * Span.minute...60 * Span.minute))
            order(u, product, status: "created", tid: nil, at: p + 5 * Span.minute + rng.int(10 * Span.second...Span.minute))
            match = before
        default:
            order(u, product, status: "created", tid: nil, at: p - 24 * Span.hour - rng.int(Span.minute...30 * Span.minute))
            match = nil
        }
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: t, at: p + seconds(2...60), verify: unresolvedStatus(), txs: [x])
        expectCompensate(order: match?.orderID, user: u, x, owed: 1, match: match == nil ? "none" : "inferred",
                         reason: "paid_not_granted", receipt: r.receiptID)
    }

    /// Two purchases 4 min apart, two open orders (1 min after the first, 3 min before it): the
    /// first purchase takes the closer order, the second the one that is left.
    private mutating func inferredEachOrderOnce() {
        let p1 = purchaseTime()
        let p2 = p1 + 4 * Span.minute
        let product = cat.coins500
        let t1 = tid(u), t2 = tid(u)
        let before = order(u, product, status: "created", tid: nil, at: p1 - 3 * Span.minute)
        let after = order(u, product, status: "created", tid: nil, at: p1 + Span.minute)
        let x1 = tx(t1, product, at: p1), x2 = tx(t2, product, at: p2)
        let r = receipt(u, order: nil, tidColumn: nil, at: p2 + seconds(5...60), verify: unresolvedStatus(),
                        style: .ios7, txs: [x1, x2])
        expectCompensate(order: after.orderID, user: u, x1, owed: 1, match: "inferred", reason: "paid_not_granted",
                         receipt: r.receiptID)
        expectCompensate(order: before.orderID, user: u, x2, owed: 1, match: "inferred", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// No order at all, or only an open order of another product.
    private mutating func noOrder() {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = cat.coins100
        if rng.chance(0.5) { order(u, cat.gems, status: "created", tid: nil, at: p - 2 * Span.minute) }
        let t = tid(u)
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: rng.chance(0.5) ? t : nil, at: p + seconds(2...60),
                        verify: unresolvedStatus(), txs: [x])
        expectCompensate(order: nil, user: u, x, owed: 1, match: "none", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// Three units bought, one or two granted.
    private mutating func partiallyGranted() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, qty: 3, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, qty: 3, at: p)
        let r = receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(), txs: [x])
        let grants = Int(rng.int(1...2))
        for i in 0..<grants {
            grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60) + Int64(i) * Span.minute)
        }
        expectCompensate(order: o.orderID, user: u, x, owed: 3 - grants, match: "exact", reason: "partially_granted",
                         receipt: r.receiptID)
    }

    /// Granted, then revoked by support, but Apple shows no refund.
    private mutating func revokedNotRefunded() {
        let p = purchaseTime()
        let product = rng.chance(0.7) ? rng.pick(cat.consumables) : rng.pick(cat.nonConsumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, at: p)
        let r = receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(), txs: [x])
        grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60),
              revoked: p + Span.day + rng.int(0...Span.day))
        expectCompensate(order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "revoked_not_refunded",
                         receipt: r.receiptID)
    }

    /// One transaction granted two or three times (client retry, repeated notification). The
    /// second grant sometimes has the very same granted_at: the grant id decides.
    private mutating func sameTransaction() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(),
                txs: [tx(t, product, at: p)])
        let firstAt = p + seconds(31...60)
        let kept = grant(u, order: o.orderID, product, tid: t, otid: t, at: firstAt)
        let extra = Int(rng.int(1...2))
        for _ in 0..<extra {
            let at = rng.chance(0.25) ? firstAt : firstAt + seconds(1...600)
            let g = grant(u, order: rng.chance(0.5) ? o.orderID : nil, product, tid: t, otid: t, at: at)
            expectDuplicate(g, kind: "same_transaction", kept: kept)
        }
    }

    /// A purchase, then a restore granted as a new purchase: non-consumable (same original),
    /// non-renewing (transaction ≠ original) or auto-renewable (same web order line item).
    private mutating func restoreGranted(product: String) {
        let type = cat.type(of: product)
        let p1 = purchaseTime(minDaysAgo: 15, maxDaysAgo: 28)
        let p2 = p1 + rng.int(Span.day...10 * Span.day)
        let (t1, w1) = tidAndWol(u)
        let t2 = tid(u)
        let isSub = type == .autoRenewable
        let exp = isSub ? p1 + 30 * Span.day : nil
        let x1 = tx(t1, product, at: p1, expires: exp, wol: isSub ? w1 : nil)
        let x2 = tx(t2, otid: t1, product, at: p2, original: p1, expires: exp, wol: isSub ? w1 : nil)
        let o1 = order(u, product, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        receipt(u, order: o1.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: unresolvedStatus(), txs: [x1])
        let kept = grant(u, order: o1.orderID, product, tid: t1, otid: t1, at: p1 + seconds(31...60))
        let o2 = order(u, product, status: "delivered", tid: t2, at: p2 - seconds(5...60))
        receipt(u, order: o2.orderID, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(),
                txs: isSub || rng.chance(0.5) ? [x1, x2] : [x2])
        let g2 = grant(u, order: o2.orderID, product, tid: t2, otid: t1, at: p2 + seconds(31...60))
        expectDuplicate(g2, kind: "restore_as_purchase", kept: kept)
    }

    /// A restore that nobody granted: not a missed order, nothing to report.
    private mutating func restoreNotGranted() {
        let product = rng.pick([cat.noAds, cat.seasonPass, cat.vipMonth])
        let isSub = cat.type(of: product) == .autoRenewable
        let p1 = purchaseTime(minDaysAgo: 15, maxDaysAgo: 28)
        let p2 = p1 + rng.int(Span.day...10 * Span.day)
        let (t1, w1) = tidAndWol(u)
        let t2 = tid(u)
        let exp = isSub ? p1 + 30 * Span.day : nil
        let x1 = tx(t1, product, at: p1, expires: exp, wol: isSub ? w1 : nil)
        let x2 = tx(t2, otid: t1, product, at: p2, original: p1, expires: exp, wol: isSub ? w1 : nil)
        let o1 = order(u, product, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        receipt(u, order: o1.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: unresolvedStatus(), txs: [x1])
        grant(u, order: o1.orderID, product, tid: t1, otid: t1, at: p1 + seconds(31...60))
        receipt(u, order: nil, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(), style: .ios7,
                txs: [x1, x2])
    }

    /// One Apple ID's non-consumable restored onto a second account (the next user slot): both
    /// receipts carry the same original; the second account's grant is a duplicate.
    private mutating func crossAccount() {
        let a = u, b = u + 1
        let product = rng.pick(cat.nonConsumables)
        let p1 = purchaseTime(minDaysAgo: 12, maxDaysAgo: 25)
        let p2 = p1 + rng.int(Span.day...8 * Span.day)
        let t1 = tid(a), t2 = tid(b)
        let x1 = tx(t1, product, at: p1)
        let x2 = tx(t2, otid: t1, product, at: p2, original: p1)
        let oa = order(a, product, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        receipt(a, order: oa.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: unresolvedStatus(), txs: [x1])
        let ga = grant(a, order: oa.orderID, product, tid: t1, otid: t1, at: p1 + seconds(31...60))
        let ob = order(b, product, status: "delivered", tid: t2, at: p2 - seconds(5...120))
        receipt(b, order: ob.orderID, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(), style: .ios7,
                txs: [x1, x2])
        let gb = grant(b, order: ob.orderID, product, tid: t2, otid: t1, at: p2 + seconds(31...60))
        expectDuplicate(gb, kind: "cross_account", kept: ga)
    }

    /// Granted, later refunded by Apple (listed in the refund file). With `duplicate`, the
    /// transaction was granted twice: both grants are clawed back, none is a duplicate.
    private mutating func refunded(duplicate: Bool) {
        let p = purchaseTime(minDaysAgo: 4, maxDaysAgo: 25)
        let product = !duplicate && rng.chance(0.3) ? rng.pick(cat.nonConsumables) : rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(),
                txs: [tx(t, product, at: p)])
        var grants = [grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))]
        if duplicate {
            grants.append(grant(u, order: nil, product, tid: t, otid: t, at: p + seconds(61...600)))
        }
        let refund = SimRefund(cancellationDateMs: p + rng.int(Span.day...2 * Span.day), reason: rng.pick(["0", "1"]))
        data.refunds.append(RefundRow(transactionID: t, refund: refund))
        if settings.refundsServed {
            for g in grants { expectClawback(g, reason: "refunded", refund: refund) }
        } else if duplicate {
            expectDuplicate(grants[1], kind: "same_transaction", kept: grants[0])
        }
    }

    /// Granted on a receipt Apple rejects for good: 21003, 21010 or 211xx not retryable.
    private mutating func invalidReceipt() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let st = rng.pick([21003, 21010, 21100 + Int(rng.int(0...99))])
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: rng.pick([nil, st]), st: st,
                txs: [tx(t, product, at: p)])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "invalid_receipt")
    }

    /// Granted on a valid receipt of another app.
    private mutating func wrongBundle() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(),
                bundle: Catalog.otherBundle, txs: [tx(t, Catalog.otherProduct, at: p, type: "consumable")])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "wrong_bundle")
    }

    /// A grant claims a transaction id that the valid receipt of its order does not contain
    /// (the receipt holds another purchase of the user, which was granted properly).
    private mutating func transactionNotFound() {
        let p = purchaseTime()
        let real = tid(u), fake = tid(u)
        let o0 = order(u, cat.coins100, status: "delivered", tid: real, at: p - seconds(60...120))
        grant(u, order: o0.orderID, cat.coins100, tid: real, otid: real, at: p + seconds(31...60))
        let o1 = order(u, cat.coins500, status: "delivered", tid: fake, at: p - seconds(5...50))
        receipt(u, order: o1.orderID, tidColumn: nil, at: p + seconds(2...30), verify: unresolvedStatus(),
                txs: [tx(real, cat.coins100, at: p)])
        let g = grant(u, order: o1.orderID, cat.coins500, tid: fake, otid: fake, at: p + seconds(61...90))
        expectClawback(g, reason: "transaction_not_found")
    }

    /// A tester's sandbox purchase granted in production.
    private mutating func sandboxGranted() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables + cat.nonConsumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: rng.pick([nil, 21007]),
                env: .sandbox, txs: [tx(t, product, at: p)])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "sandbox_transaction")
    }

    /// A sandbox purchase never granted: never compensated.
    private mutating func sandboxMissed() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "created", tid: nil, at: p - seconds(5...120))
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: nil, env: .sandbox,
                txs: [tx(t, product, at: p)])
    }

    /// A missed purchase older than the window: uploaded then (not verified), or uploaded late
    /// inside the window (verified, but the purchase is out of the window). Nothing to report.
    private mutating func outsideWindow() {
        let p = asOf - rng.int(31 * Span.day...60 * Span.day)
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "created", tid: nil, at: p - seconds(5...120))
        let uploaded = rng.chance(0.5) ? p + seconds(2...30) : asOf - rng.int(Span.day...20 * Span.day)
        receipt(u, order: o.orderID, tidColumn: t, at: uploaded, verify: nil, txs: [tx(t, product, at: p)])
    }

    /// A weekly subscription whose renewal Apple shows only in latest_receipt_info (or, when
    /// `expired`, in an answer with status 21006 / latest_expired_receipt_info) and which was never
    /// granted: paid_not_granted with no order.
    private mutating func renewal(expired: Bool) {
        let product = cat.vipWeek
        let p1 = expired ? asOf - rng.int(15 * Span.day...22 * Span.day) : asOf - rng.int(8 * Span.day...13 * Span.day)
        let p2 = p1 + 7 * Span.day
        let (t1, w1) = tidAndWol(u)
        let (t2, w2) = tidAndWol(u)
        let x1 = tx(t1, product, at: p1, expires: p1 + 7 * Span.day, wol: w1)
        let x2 = tx(t2, otid: t1, product, at: p2, original: p1, expires: p2 + 7 * Span.day, wol: w2, late: true)
        let o1 = order(u, product, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        let r = receipt(u, order: o1.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: unresolvedStatus(),
                        st: expired ? 21006 : nil, txs: [x1, x2])
        grant(u, order: o1.orderID, product, tid: t1, otid: t1, at: p1 + seconds(31...60))
        expectCompensate(order: nil, user: u, x2, owed: 1, match: "none", reason: "paid_not_granted",
                         receipt: r.receiptID)
    }

    /// Granted, but the uploaded receipt is base64 of garbage (Apple: 21002, retryable): on the
    /// first run nothing is definitive, so nothing is reported.
    private mutating func malformedReceipt() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        var garbage = [UInt8]()
        for _ in 0..<48 { garbage.append(UInt8(truncatingIfNeeded: rng.next())) }
        garbage[0] = 0x30  // never "{": not a token
        data.receipts.append(ReceiptRow(receiptID: IDs.receipt(u, next(u, \.r)), userID: IDs.user(u),
                                        orderID: o.orderID, transactionID: t, rawData: base64(garbage),
                                        submittedAt: p + seconds(2...30), verifyStatus: nil, sim: nil))
        grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
    }

    // MARK: - Bad rows (input errors)

    /// Rows that break contract §1, on users after the last scenario user. None of them links to
    /// anything else, so leaving them out of the decisions changes no other finding.
    mutating func badRows() {
        let n = u, n2 = u + 1
        let day = asOf - 2 * Span.day
        func err(_ relation: String, _ key: String, _ column: String, _ problem: String) -> [String] {
            [relation, key, column, problem]
        }
        // iap_products: a type outside the four.
        data.products.append(ProductRow(productID: cat.legacyBundle, productType: "bundle", bundleID: cat.bundle))
        data.inputErrors.append(err("iap_products", cat.legacyBundle, "product_type",
                                    "product_type bundle is not one of consumable, non_consumable, auto_renewable, non_renewing"))
        // iap_orders: null user, unknown product, quantity 0.
        var o = order(n, cat.coins100, status: "created", tid: nil, at: day)
        data.orders[data.orders.count - 1].userID = nil
        data.inputErrors.append(err("iap_orders", o.orderID, "user_id", "user_id is null"))
        o = order(n, cat.unknown, status: "created", tid: nil, at: day + Span.minute)
        data.inputErrors.append(err("iap_orders", o.orderID, "product_id", "unknown product_id \(cat.unknown)"))
        o = order(n, cat.coins500, qty: 0, status: "created", tid: nil, at: day + 2 * Span.minute)
        data.inputErrors.append(err("iap_orders", o.orderID, "quantity", "quantity 0 is below 1"))
        // iap_receipts: not base64; null user (its token is rejected anyway and links to nothing).
        let badData = ReceiptRow(receiptID: IDs.receipt(n, next(n, \.r)), userID: IDs.user(n), orderID: nil,
                                 transactionID: nil, rawData: "@@not base64 at all@@", submittedAt: day,
                                 verifyStatus: nil, sim: nil)
        data.receipts.append(badData)
        data.inputErrors.append(err("iap_receipts", badData.receiptID, "receipt_data", "receipt_data is not base64"))
        let orphan = tid(n)
        let r = receipt(n, order: nil, tidColumn: orphan, at: day + Span.minute, verify: nil, style: .ios7, st: 21003,
                        txs: [tx(orphan, cat.coins100, at: day)])
        data.receipts[data.receipts.count - 1].userID = nil
        data.inputErrors.append(err("iap_receipts", r.receiptID, "user_id", "user_id is null"))
        // iap_grants: null user, unknown product, quantity 0 (transactions nobody ever uploaded).
        var g = grant(n, order: nil, cat.coins100, tid: tid(n), otid: nil, at: day)
        data.grants[data.grants.count - 1].userID = nil
        data.inputErrors.append(err("iap_grants", g.grantID, "user_id", "user_id is null"))
        g = grant(n, order: nil, cat.unknown, tid: tid(n), otid: nil, at: day)
        data.inputErrors.append(err("iap_grants", g.grantID, "product_id", "unknown product_id \(cat.unknown)"))
        g = grant(n, order: nil, cat.gems, tid: tid(n), otid: nil, qty: 0, at: day)
        data.inputErrors.append(err("iap_grants", g.grantID, "quantity", "quantity 0 is below 1"))
        // A duplicated grant_id: a clean consumable purchase whose grant row was inserted twice,
        // one second apart. Whichever row is used, the purchase is clean.
        let t = tid(n2)
        let o2 = order(n2, cat.coins100, status: "delivered", tid: t, at: day)
        receipt(n2, order: o2.orderID, tidColumn: t, at: day + 5 * Span.second, verify: 0,
                txs: [tx(t, cat.coins100, at: day)])
        var dup = grant(n2, order: o2.orderID, cat.coins100, tid: t, otid: t, at: day + 10 * Span.second)
        dup.grantedAt += Span.second
        data.grants.append(dup)
        data.inputErrors.append(err("iap_grants", dup.grantID, "grant_id", "duplicate key (2 rows)"))
    }
}

private let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

func base64(_ bytes: [UInt8]) -> String {
    var out = [UInt8]()
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 2 < bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)],
                base64Alphabet[Int(v >> 6 & 63)], base64Alphabet[Int(v & 63)]]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out += [base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)], 61, 61]
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)], base64Alphabet[Int(v >> 6 & 63)], 61]
    }
    return String(decoding: out, as: UTF8.self)
}
