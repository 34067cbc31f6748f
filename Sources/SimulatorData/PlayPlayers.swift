// One Play player at a time: the rows, Google's truth and the expected report rows of its family
// (PlayScenarios.swift). Times are relative to --as-of; every one lies before it, and within
// `PlayWorld.oldestDays` of it (Google lists voided purchases 30 days back by the real clock:
// `PlayWorld.clockProblem`).

import AppStoreSimulator
import PlaySimulator
import Reconciliation

/// A Play grant as the generator made it (the expected rows name its cells).
struct PlayGrant {
    var grantID: String
    var userID: String
    var orderID: String?
    var productID: String
    var transactionID: String
    var quantity: Int
    var grantedAt: Int64
}

/// One Play purchase as the generator made it: its token, Google's order id, product and units.
struct PlayBought {
    var token: String
    var orderID: String?
    var productID: String
    var quantity: Int
    var completedAt: Int64?
    /// The `transaction_id` of the shop's rows: Google's order id, else the token.
    var transactionID: String { orderID ?? token }
}

struct PlayPlayer {
    var world: PlayWorld
    let slot: Int
    var rng: SeededRandom
    let family: PlayFamily
    /// The player's next id number (orders, receipts, grants, purchases share it).
    var k = 0

    typealias W = PlayWorld

    init(world: PlayWorld, slot: Int) {
        self.world = world
        self.slot = slot
        // Play's own stream: the App Store's is never drawn from.
        var rng = SeededRandom(seed: SimHash.combine(world.seed, UInt64(slot), 0x504C_4159))
        family = PlayWorld.family(ofSlot: slot, &rng)
        self.rng = rng
    }

    var asOf: Int64 { world.asOf }
    var user: String { "P" + IDs.pad(slot, 9) }
    var firstSeen: String { UTC.date(asOf) }

    // MARK: - Ids

    mutating func next() -> Int {
        k += 1
        return k
    }
    func id(_ prefix: String, _ n: Int) -> String { prefix + IDs.pad(slot, 9) + IDs.pad(n, 2) }
    /// Google's order id form: `GPA.` and 4-4-4-5 digits.
    mutating func googleOrderID(_ n: Int) -> String {
        let d = Array("33" + IDs.pad(slot, 9) + IDs.pad(n, 2) + IDs.pad(Int(rng.int(0...9999)), 4))
        return "GPA." + String(d[0..<4]) + "-" + String(d[4..<8]) + "-" + String(d[8..<12]) + "-" + String(d[12..<17])
    }
    /// An opaque token of Google's alphabet.
    mutating func token(_ n: Int, prefix: String = "gp") -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
        let tail = String((0..<24).map { _ in rng.pick(alphabet) })
        return prefix + IDs.pad(slot, 9) + IDs.pad(n, 2) + "." + tail
    }

    /// A random time `lo`…`hi` before as-of, whole seconds.
    mutating func before(_ lo: Int64, _ hi: Int64) -> Int64 {
        let t = asOf - rng.int(lo...hi)
        return t - ((t % 1000) + 1000) % 1000
    }

    // MARK: - Products and money

    func product(_ name: String) -> String { world.package + "." + name }
    mutating func consumable() -> String { product(rng.pick(["coins100", "coins500"])) }
    mutating func anyProduct() -> String { product(rng.pick(PlayWorld.productNames.map(\.name))) }
    func type(_ productID: String) -> ProductType {
        PlayWorld.productNames.first { product($0.name) == productID }?.type ?? .consumable
    }
    mutating func units(of productID: String) -> Int { type(productID) == .consumable ? Int(rng.int(1...3)) : 1 }

    /// What the buyer paid for `quantity` units, tax (8%) included: Google's order `total`.
    func totalMilli(_ productID: String, _ quantity: Int) -> Int64 {
        let base = (PriceList.list(productID) ?? 0) * Int64(quantity)
        return base + MoneyText.prorated(base, 8, 100, currency: "USD")
    }
    static func money(_ milli: Int64) -> PlayTruth.Money {
        PlayTruth.Money(currency: "USD", units: milli / 1000, nanos: Int32(milli % 1000) * 1_000_000)
    }
    /// `units` of a purchase whose order Google answered: its total prorated, to the cent.
    func orderAmount(_ p: PlayBought, units: Int) -> String {
        MoneyText.text(
            MoneyText.prorated(totalMilli(p.productID, p.quantity), Int64(units), Int64(p.quantity), currency: "USD"), currency: "USD")
    }
    /// `units` at the list price (no order asked: not purchased, no order id, unknown token).
    func listAmount(_ productID: String, units: Int) -> String {
        MoneyText.text((PriceList.list(productID) ?? 0) * Int64(units), currency: "USD")
    }

    // MARK: - Google's truth

    /// A purchase Google knows.
    mutating func buy(
        _ productID: String, quantity: Int, state: PlayTruth.State = .purchased, acknowledged: Bool = true,
        completedAt: Int64?, orderID: Bool = true, test: Bool = false, account: String? = nil,
        refundable: Int? = nil, orderState: String = "PROCESSED"
    ) -> PlayBought {
        let n = next()
        let bought = PlayBought(
            token: token(n), orderID: orderID ? googleOrderID(n) : nil, productID: productID, quantity: quantity,
            completedAt: completedAt)
        let total = totalMilli(productID, quantity), base = (PriceList.list(productID) ?? 0) * Int64(quantity)
        world.truth.purchases.append(
            PlayTruth.Purchase(
                packageName: world.package, purchaseToken: bought.token, orderID: bought.orderID, productID: productID,
                quantity: quantity, state: state, acknowledged: acknowledged, completionTimeMs: completedAt, regionCode: "US",
                obfuscatedAccountID: account, isTest: test, refundableQuantity: refundable, total: Self.money(total),
                tax: Self.money(total - base), developerRevenue: Self.money(MoneyText.prorated(base, 70, 100, currency: "USD")),
                orderState: orderState))
        return bought
    }

    /// A voided record of `p`.
    mutating func void(_ p: PlayBought, at: Int64, source: Int, reason: Int, quantity: Int? = nil) {
        world.truth.voided.append(
            PlayTruth.Voided(
                packageName: world.package, purchaseToken: p.token, orderID: p.orderID, purchaseTimeMs: p.completedAt ?? at,
                voidedTimeMs: at, source: source, reason: reason, voidedQuantity: quantity))
    }

    /// ONE_TIME_PRODUCT_PURCHASED on the app's topic, a few seconds after the purchase.
    mutating func announce(_ p: PlayBought) {
        let at = (p.completedAt ?? asOf) + 5_000
        world.truth.notifications.append(
            PlayTruth.Notification(
                packageName: world.package, eventTimeMs: at, publishTimeMs: at + 2_000,
                kind: .oneTimeProduct(notificationType: 1, purchaseToken: p.token, sku: p.productID)))
    }

    // MARK: - The shop's rows

    /// iap_orders: order_id, user_id, product_id, quantity, status, transaction_id, created_at.
    mutating func order(_ p: PlayBought, user: String? = nil, status: String = "paid", transactionID: String?? = nil, at: Int64) -> String {
        let orderID = id("PO", next())
        let tid: String? = transactionID ?? p.transactionID
        world.orders.append([orderID, user ?? self.user, p.productID, String(p.quantity), status, tid, UTC.sqlTimestamp(at)])
        return orderID
    }

    /// iap_receipts: receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status.
    mutating func upload(_ p: PlayBought, order: String?, user: String? = nil, at: Int64) -> String {
        let receiptID = id("PR", next())
        world.receipts.append([receiptID, user ?? self.user, order, p.transactionID, p.token, UTC.sqlTimestamp(at), nil])
        return receiptID
    }

    /// iap_grants: grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id,
    /// quantity, granted_at, revoked_at (a Play purchase is its own original).
    mutating func grant(
        _ p: PlayBought, order: String?, user: String? = nil, quantity: Int? = nil, at: Int64, revokedAt: Int64? = nil
    ) -> PlayGrant {
        let g = PlayGrant(
            grantID: id("PG", next()), userID: user ?? self.user, orderID: order, productID: p.productID,
            transactionID: p.transactionID, quantity: quantity ?? p.quantity, grantedAt: at)
        world.grants.append([
            g.grantID, g.userID, g.orderID, g.productID, g.transactionID, g.transactionID, String(g.quantity),
            UTC.sqlTimestamp(at), revokedAt.map(UTC.sqlTimestamp),
        ])
        return g
    }

    /// Bought, ordered, uploaded (and granted when `granted`): the usual shape of a purchase.
    mutating func purchase(
        _ p: PlayBought, user: String? = nil, granted: Bool, at: Int64
    ) -> (order: String, receipt: String, grant: PlayGrant?) {
        let order = order(p, user: user, at: at - W.minute)
        let receipt = upload(p, order: order, user: user, at: at + 30_000)
        let g = granted ? grant(p, order: order, user: user, at: at + 2 * W.minute) : nil
        return (order, receipt, g)
    }

    // MARK: - Expected rows (the columns of Expectations.swift's `ExpectedReport`, before the proceeds)

    mutating func expectCompensate(
        _ p: PlayBought, order: String?, user: String? = nil, owed: Int, receipt: String?, amount: String, source: String = "receipt"
    ) {
        world.expected[.compensate, default: []].append([
            order ?? "", user ?? self.user, p.productID, type(p.productID).rawValue, String(owed), p.transactionID,
            p.transactionID, UTC.timestamp(p.completedAt ?? 0), "production", "exact", "paid_not_granted", receipt ?? "",
            firstSeen, amount, "USD", source,
        ])
    }

    mutating func expectClawback(_ g: PlayGrant, units: Int, reason: String, voided: (at: Int64, reason: Int)?, amount: String) {
        world.expected[.clawback, default: []].append([
            g.grantID, g.userID, g.orderID ?? "", g.productID, type(g.productID).rawValue, String(units), g.transactionID,
            g.transactionID, UTC.timestamp(g.grantedAt), reason, voided.map { UTC.timestamp($0.at) } ?? "",
            voided.map { String($0.reason) } ?? "", firstSeen, amount, "USD",
        ])
    }

    mutating func expectDuplicate(_ g: PlayGrant, kind: String, kept: PlayGrant) {
        world.expected[.duplicateGrants, default: []].append([
            g.grantID, g.userID, g.orderID ?? "", g.productID, type(g.productID).rawValue, g.transactionID, g.transactionID, kind,
            kept.grantID, UTC.timestamp(g.grantedAt), firstSeen,
        ])
    }

    /// refunds.csv: the latest voided record's date, reason and source; `voidedUnits` of the purchase.
    mutating func expectRefund(
        _ p: PlayBought, at: Int64, reason: Int, source: Int, voidedUnits: Int, state: String, grants: [PlayGrant]
    ) {
        let share = voidedUnits < p.quantity ? String(voidedUnits * 100_000 / p.quantity) : ""
        world.expected[.refunds, default: []].append([
            p.transactionID, p.transactionID, user, p.productID, type(p.productID).rawValue, UTC.timestamp(at), String(reason),
            String(source), share, orderAmount(p, units: p.quantity), orderAmount(p, units: voidedUnits), "USD", state,
            grants.map(\.grantID).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.joined(separator: " "),
            firstSeen,
        ])
    }

    mutating func expectAcknowledge(_ p: PlayBought, action: String, user: String?, order: String?) {
        let completed = p.completedAt ?? 0, by = completed + 3 * W.day
        let cells = [
            UTC.timestamp(by), action, world.package, p.transactionID, p.token, p.productID, String(p.quantity), user ?? "",
            order ?? "", UTC.timestamp(completed),
        ]
        world.acknowledge.append((by, p.transactionID, cells))
    }
}
