// The scenarios the generator plays, one per user (two users for cross_account), and the
// report rows the job must write for each on its first run (docs/rules.md). The expected rows
// come from what each scenario built, not from a rule engine.

import AppStoreSimulator
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
    // StoreKit 2 uploads (signed transactions); only with a PKI (`iap-sim seed --pki`), else clean.
    case signedMissed = "signed_paid_not_granted"
    case signedTampered = "signed_tampered"
    case signedOtherBundle = "signed_other_bundle"
    case signedUnknownRoot = "signed_unknown_root"
    case signedSandbox = "signed_sandbox_granted"
    // Seen only through the App Store Server API: expected rows only with
    // `--apple-truth`, the generator's sign that the job sweeps notification and transaction history.
    case notificationRefund = "notification_refund_consumable"
    case notificationRefundProrated = "notification_refund_prorated"
    case refundReversed = "refund_reversed"
    case historyOnlyPurchase = "history_only_purchase"
    case notificationPurchaseToken = "notification_purchase_account_token"
    case notificationPurchaseUnattributed = "notification_purchase_unattributed"
    /// `iap-sim seed --api-bench N` only (never drawn): a verified purchase refunded in the
    /// notification history and a later open order, so the night asks one customer's history.
    case apiBench = "api_bench"

    /// Chance per user slot, in thousandths (they add up to 1000).
    public var perMille: Int {
        switch self {
        case .cleanConsumable: return 594
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
        case .refundedDuplicate, .malformedReceipt, .signedMissed: return 6
        case .signedTampered, .signedOtherBundle, .signedUnknownRoot, .signedSandbox: return 4
        case .notificationRefund, .notificationRefundProrated, .refundReversed, .historyOnlyPurchase,
            .notificationPurchaseToken, .notificationPurchaseUnattributed:
            return 4
        case .apiBench: return 0
        }
    }

    /// How many user slots the scenario uses.
    var userSlots: Int { self == .crossAccount ? 2 : 1 }

    var isClean: Bool { self == .cleanConsumable || self == .cleanNonConsumable || self == .cleanSubscription }

    /// Its uploads are signed transactions: it needs the generator's PKI.
    var isSigned: Bool {
        switch self {
        case .signedMissed, .signedTampered, .signedOtherBundle, .signedUnknownRoot, .signedSandbox: return true
        default: return false
        }
    }
}

/// Everything the generator needs to know, shared by every pass.
struct GeneratorSettings {
    var users: Int
    var seed: UInt64
    var asOf: Int64
    /// The first app's products (the only app's, unless `otherApps` names more).
    var catalog: Catalog
    /// More apps (`iap-sim seed --bundle` repeated): every user slot plays in one app, chosen
    /// by a hash of the seed and the slot (`app(ofSlot:)`), with that app's products.
    var otherApps: [Catalog] = []
    /// Refunds are served (the refund list is written): refund scenarios expect clawbacks.
    var refundsServed: Bool
    var badRows: Bool
    /// Signed transactions can be made (`iap-sim seed --pki`): the signed scenarios play, and
    /// `storeKit2Share` of the users upload signed transactions instead of receipts.
    var signing = false
    var storeKit2Share = 0.0
    /// The job sweeps the Server API's notification and transaction history (the generator writes
    /// `--apple-truth`, and the job gets API credentials exactly then): what only Apple's
    /// notifications and histories show is expected too.
    var apiSweeps = false
    /// `--api-bench N`: N more users of the `api_bench` scenario after the others.
    var apiBench = 0
    /// `--extra-findings N`: every `clean_consumable` user makes N more purchases, each a finding
    /// (`ScenarioBuilder.extraFindings`).
    var extraFindings = 0
    /// `--unseen-share P`: purchases the shop never saw, P of Apple's production purchases, in the
    /// truth only (UnseenPurchases.swift).
    var unseenShare = 0.0

    var firstSeen: String { UTC.date(asOf) }

    /// Every app, the first one first.
    var apps: [Catalog] { [catalog] + otherApps }

    /// The app user slot `u` plays in: always the first with one app (so a one-app seed is what it
    /// always was), else a hash of the seed and the slot. A cross-account pair plays in its first
    /// slot's app; the bad-row block in the first app.
    func app(ofSlot u: Int) -> Catalog {
        guard !otherApps.isEmpty else { return catalog }
        let apps = self.apps
        return apps[Int(SimHash.combine(seed, UInt64(u), 0xA995) % UInt64(apps.count))]
    }

    /// The app whose products these are (by `Catalog.owns`); nil for none.
    func app(ofProduct productID: String) -> Catalog? { apps.first { $0.owns(productID) } }

    /// `iap_products` of every app. With several apps every product names its app in
    /// `bundle_id` (the job ties a product to its app by it); with one, the gems pack keeps its
    /// NULL as always.
    var productRows: [ProductRow] {
        guard !otherApps.isEmpty else { return catalog.products }
        return apps.flatMap { app in
            app.products.map { p in
                var p = p
                p.bundleID = app.bundle
                return p
            }
        }
    }
}

/// One scenario's rows and expected findings.
struct UserData {
    var scenario: Scenario?
    var orders: [OrderRow] = []
    var receipts: [ReceiptRow] = []
    var grants: [GrantRow] = []
    var products: [ProductRow] = []
    /// Refunds verifyReceipt shows (the refund list `--refunds`).
    var refunds: [RefundRow] = []
    /// Refunds only the Server API shows (the truth's, always written): by transaction id.
    var appleRefunds: [String: SimRefund] = [:]
    /// Transactions Apple has that no upload shows (API-only purchases).
    var appleOnly: [AppleTruthRow] = []
    /// The storefront of a transaction, decided once by the scenario (absent: USA).
    var storefronts: [String: SimStorefront] = [:]
    /// The app the user plays in (`GeneratorSettings.app(ofSlot:)`).
    var bundle = ""
    /// Findings waiting for facts decided after the scenario (StoreKit 2 uploads), then rendered.
    var pending = PendingFindings()
    var compensate: [[String]] = []
    var duplicates: [[String]] = []
    var clawback: [[String]] = []
    var inputErrors: [[String]] = []
    var refundRows: [[String]] = []
    var unattributed: [[String]] = []

    func storefront(of transactionID: String) -> SimStorefront { storefronts[transactionID] ?? .usa }
}

/// Walks the user slots in order and builds each scenario; every pass sees the same data.
struct ScenarioPlan {
    let settings: GeneratorSettings

    /// The scenarios that every database of at least `4 × count` users contains once at its start.
    private var guaranteed: [Scenario] {
        Scenario.allCases.filter { !$0.isClean && $0 != .apiBench && (settings.signing || !$0.isSigned) }
    }

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
            if scenario.isSigned && !settings.signing { scenario = .cleanConsumable }
            try body(user(u, scenario, rng: rng))
            u += scenario.userSlots
        }
        if settings.badRows { try body(badRowData()) }
        // The bench users come after the bad-row block's two slots, so adding them changes no id.
        for i in 0..<settings.apiBench {
            let slot = n + 2 + i
            try body(user(slot, .apiBench, rng: SeededRandom(seed: SimHash.combine(settings.seed, UInt64(slot), 0xBE4C))))
        }
    }

    private func user(_ u: Int, _ scenario: Scenario, rng: SeededRandom) -> UserData {
        var b = ScenarioBuilder(settings: settings, rng: rng, u: u)
        b.build(scenario)
        b.data.scenario = scenario
        // A StoreKit 2 client: decided by its own hash, so the scenario's draws stay the same.
        if settings.signing
            && Double(SimHash.combine(settings.seed, UInt64(u), 0x5C2) % 10_000)
                < settings.storeKit2Share * 10_000
        {
            b.uploadSignedTransactions()
        }
        b.finish()
        return b.data
    }

    /// The rows of the bad-row block alone (empty without --bad-rows).
    func badRowData() -> UserData {
        guard settings.badRows else { return UserData(bundle: settings.catalog.bundle) }
        var b = ScenarioBuilder(
            settings: settings, rng: SeededRandom(seed: SimHash.combine(settings.seed, 0xBAD)),
            u: settings.users, app: settings.catalog)
        b.badRows()
        b.finish()
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
    /// The products of the app the user plays in.
    let cat: Catalog
    private var counters: [Int: (o: Int, r: Int, g: Int, t: Int)] = [:]

    /// `app`: the app played in; default the slot's (`GeneratorSettings.app(ofSlot:)`).
    init(settings: GeneratorSettings, rng: SeededRandom, u: Int, app: Catalog? = nil) {
        self.settings = settings
        self.rng = rng
        self.u = u
        cat = app ?? settings.app(ofSlot: u)
        data.bundle = cat.bundle
    }

    var asOf: Int64 { settings.asOf }

    // MARK: - Row makers

    mutating func next(_ u: Int, _ field: WritableKeyPath<(o: Int, r: Int, g: Int, t: Int), Int>) -> Int {
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
        let row = OrderRow(
            orderID: IDs.order(u, next(u, \.o)), userID: IDs.user(u), productID: product, quantity: qty,
            status: status, transactionID: tid, createdAt: at)
        data.orders.append(row)
        return row
    }

    @discardableResult
    mutating func receipt(
        _ u: Int, order: String?, tidColumn: String?, at: Int64, verify: Int?,
        env: AppStoreEnvironment = .production, style: SimReceipt.Style? = nil, st: Int? = nil,
        bundle: String? = nil, txs: [SimTransaction]
    ) -> ReceiptRow {
        let id = IDs.receipt(u, next(u, \.r))
        let chosenStyle = style ?? defaultStyle(txs)
        let sim = SimReceipt(rid: id, env: env, bundle: bundle ?? cat.bundle, style: chosenStyle, st: st, txs: txs)
        let row = ReceiptRow(
            receiptID: id, userID: IDs.user(u), orderID: order, transactionID: tidColumn,
            rawData: nil, submittedAt: at, verifyStatus: verify, sim: sim)
        data.receipts.append(row)
        return row
    }

    @discardableResult
    mutating func grant(
        _ u: Int, order: String?, _ product: String, tid: String, otid: String?, qty: Int = 1,
        at: Int64, revoked: Int64? = nil
    ) -> GrantRow {
        let row = GrantRow(
            grantID: IDs.grant(u, next(u, \.g)), userID: IDs.user(u), orderID: order, productID: product,
            transactionID: tid, originalTransactionID: otid, quantity: qty, grantedAt: at, revokedAt: revoked)
        data.grants.append(row)
        return row
    }

    func tx(
        _ tid: String, otid: String? = nil, _ product: String, qty: Int = 1, at: Int64, original: Int64? = nil,
        expires: Int64? = nil, wol: String? = nil, late: Bool? = nil, type: String? = nil
    ) -> SimTransaction {
        SimTransaction(
            tid: tid, otid: otid ?? tid, pid: product, qty: qty, pd: at, opd: original ?? at, exp: expires,
            wol: wol, trial: false, type: type ?? cat.type(of: product).rawValue, late: late)
    }

    /// iOS 6 style only shows one transaction (plus the latest one of an auto-renewable), so a
    /// receipt with more transactions is always iOS 7.
    mutating func defaultStyle(_ txs: [SimTransaction]) -> SimReceipt.Style {
        let ios6Shows =
            txs.count == 1
            || (txs.count == 2 && txs[1].isAutoRenewable && txs[0].isAutoRenewable
                && txs[1].pd >= txs[0].pd)
        return ios6Shows && rng.chance(0.3) ? .ios6 : .ios7
    }

    /// An upload status that leaves the receipt unresolved (contract §2): no answer, or a
    /// temporary error.
    mutating func unresolvedStatus() -> Int? {
        rng.pick([nil, nil, nil, nil, 21005, 21009, 21002] as [Int?])
    }

    /// A purchase time inside the window with room after it (refunds, revocations).
    /// The usual start of a scenario: a purchase of one of `products` at a time in the window, its
    /// transaction id, and its order, created 5 s to 2 min before and linked to the transaction
    /// unless `linked` is false. (The random draws come in this order, always.)
    mutating func purchase(
        _ products: [String], qty: Int = 1, status: String = "delivered", linked: Bool = true,
        daysAgo: ClosedRange<Int64> = 3...25, orderLead: ClosedRange<Int64> = 5...120
    )
        -> (p: Int64, product: String, t: String, o: OrderRow)
    {
        let p = purchaseTime(minDaysAgo: daysAgo.lowerBound, maxDaysAgo: daysAgo.upperBound)
        let product = rng.pick(products)
        let t = tid(u)
        let o = order(u, product, qty: qty, status: status, tid: linked ? t : nil, at: p - seconds(orderLead))
        return (p, product, t, o)
    }

    /// A missed purchase uploaded 2 s to 1 min after it was made, without an answer at upload
    /// (or a temporary one), naming no order; and the compensation row it must give (one unit).
    mutating func uploadMissed(_ x: SimTransaction, tidColumn: String?, order: OrderRow?, match: String) {
        let r = receipt(
            u, order: nil, tidColumn: tidColumn, at: x.pd + seconds(2...60), verify: unresolvedStatus(),
            txs: [x])
        expectCompensate(
            order: order?.orderID, user: u, x, owed: 1, match: match, reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    mutating func purchaseTime(minDaysAgo: Int64 = 3, maxDaysAgo: Int64 = 25) -> Int64 {
        asOf - rng.int(minDaysAgo * Span.day...maxDaysAgo * Span.day)
    }

    mutating func seconds(_ range: ClosedRange<Int64>) -> Int64 { rng.int(range) * Span.second + rng.int(0...999) }
}

private let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

func base64(_ bytes: [UInt8]) -> String {
    var out = [UInt8]()
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 2 < bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [
            base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)],
            base64Alphabet[Int(v >> 6 & 63)], base64Alphabet[Int(v & 63)],
        ]
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
