// Scenarios of purchases and missed orders: clean purchases, paid and not granted, the order
// matches, partial and revoked grants. Each builds the rows of one user and the report rows the
// job must produce for them.

import AppStoreSimulator
import Reconciliation

extension ScenarioBuilder {
    // MARK: - Scenarios

    mutating func build(_ s: Scenario) {
        switch s {
        case .cleanConsumable:
            cleanConsumable()
            extraFindings(settings.extraFindings)
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
        case .signedMissed: signedMissed()
        case .signedTampered: signedTampered()
        case .signedOtherBundle: signedOtherBundle()
        case .signedUnknownRoot: signedUnknownRoot()
        case .signedSandbox: signedSandbox()
        case .notificationRefund: notificationRefund(prorated: false)
        case .notificationRefundProrated: notificationRefund(prorated: true)
        case .refundReversed: refundReversed()
        case .historyOnlyPurchase: historyOnlyPurchase()
        case .notificationPurchaseToken: notificationPurchaseToken()
        case .notificationPurchaseUnattributed: notificationPurchaseUnattributed()
        case .apiBench: apiBench()
        }
    }

    /// One to three consumable purchases, delivered and granted, uploads answered 0: resolved
    /// receipts (never sent) and nothing to report. Some purchases are older than the window.
    mutating func cleanConsumable() {
        let purchases = Int(rng.int(1...3))
        for _ in 0..<purchases {
            let p = rng.chance(0.2) ? asOf - rng.int(31 * Span.day...80 * Span.day) : purchaseTime(minDaysAgo: 0, maxDaysAgo: 29)
            let product = rng.pick(cat.consumables)
            let qty = rng.chance(0.1) ? 2 : 1
            let t = tid(u)
            let o = order(u, product, qty: qty, status: "delivered", tid: t, at: p - seconds(5...120))
            receipt(
                u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0,
                txs: [tx(t, product, qty: qty, at: p)])
            grant(u, order: o.orderID, product, tid: t, otid: t, qty: qty, at: p + seconds(31...60))
        }
    }

    /// `iap-sim seed --extra-findings N`: N more purchases of a clean consumable user, each a
    /// finding, alternating a missed order (k even: `paidNotGrantedReceiptOrder`) and a duplicated
    /// grant (k odd: `sameTransaction`). Consumables only, so that no purchase is a restore of
    /// another; with N = 0 nothing is drawn, and the user is exactly as before.
    mutating func extraFindings(_ n: Int) {
        for k in 0..<n {
            if k % 2 == 0 { paidNotGrantedReceiptOrder(consumable: true) } else { sameTransaction() }
        }
    }

    /// A non-consumable or a monthly subscription bought once, granted, upload answered 0. The
    /// refund sweep may re-verify its receipt: Apple shows the same granted transaction.
    mutating func cleanOne(product: String) {
        let p = purchaseTime(minDaysAgo: 1, maxDaysAgo: 25)
        let isSub = cat.type(of: product) == .autoRenewable
        let (t, w) = tidAndWol(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, at: p, expires: isSub ? p + 30 * Span.day : nil, wol: isSub ? w : nil)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0, txs: [x])
        grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
    }

    /// Paid, the upload got no answer; the receipt names the open order. A consumable, or with
    /// `consumable` false one time in five a non-consumable.
    mutating func paidNotGrantedReceiptOrder(consumable: Bool = false) {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = consumable || rng.chance(0.8) ? rng.pick(cat.consumables) : rng.pick(cat.nonConsumables)
        let qty = cat.type(of: product) == .consumable && rng.chance(0.25) ? 2 : 1
        let t = tid(u)
        let o = order(u, product, qty: qty, status: rng.pick(["created", "paid"]), tid: nil, at: p - seconds(5...300))
        let x = tx(t, product, qty: qty, at: p)
        let r = receipt(
            u, order: o.orderID, tidColumn: rng.chance(0.5) ? t : nil, at: p + seconds(2...60),
            verify: unresolvedStatus(), txs: [x])
        expectCompensate(
            order: o.orderID, user: u, x, owed: qty, match: "exact", reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    /// The server linked the transaction to the order (status paid) and died before granting;
    /// the upload had status 0 but no grant exists, so the receipt is unresolved.
    mutating func paidNotGrantedOrderTransaction() {
        let (p, product, t, o) = purchase(cat.consumables, status: "paid", daysAgo: 0...28, orderLead: 5...300)
        let x = tx(t, product, at: p)
        let r = receipt(u, order: nil, tidColumn: t, at: p + seconds(2...60), verify: 0, txs: [x])
        expectCompensate(
            order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    /// The same purchase uploaded twice; the receipt with the higher id was submitted first and
    /// is the transaction's receipt.
    mutating func paidNotGrantedEarliestReceipt() {
        let (p, product, t, o) = purchase(
            cat.consumables, status: "created", linked: false, daysAgo: 0...28,
            orderLead: 5...300)
        let x = tx(t, product, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(120...600), verify: unresolvedStatus(), txs: [x])
        let first = receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...60), verify: unresolvedStatus(),
            txs: [x])
        expectCompensate(
            order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "paid_not_granted",
            receipt: first.receiptID)
    }

    /// The receipt names no order; one open order of the same product shortly before.
    mutating func inferredSingle() {
        let p = purchaseTime()
        let product = rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "created", tid: nil, at: p - rng.int(Span.minute...23 * Span.hour))
        uploadMissed(tx(t, product, at: p), tidColumn: rng.chance(0.5) ? t : nil, order: o, match: "inferred")
    }

    /// Two candidate orders (2–20 h and 1–20 min before): the closer one wins. A third open
    /// order of another product is no candidate.
    mutating func inferredClosest() {
        let p = purchaseTime()
        let product = cat.coins100
        let t = tid(u)
        order(u, product, status: "created", tid: nil, at: p - rng.int(2 * Span.hour...20 * Span.hour))
        let near = order(u, product, status: "created", tid: nil, at: p - rng.int(Span.minute...20 * Span.minute))
        order(u, cat.coins500, status: "created", tid: nil, at: p - rng.int(Span.second...50 * Span.second))
        uploadMissed(tx(t, product, at: p), tidColumn: nil, order: near, match: "inferred")
    }

    /// The edges of [purchase − 24 h, purchase + 5 min]: (a) an order 1–4 min after the purchase
    /// beats one 40–60 min before; (b) an order 5–6 min after is out, the one 40–60 min before
    /// wins; (c) the only order is just over 24 h before: no match.
    mutating func inferredWindowEdge() {
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
        expectCompensate(
            order: match?.orderID, user: u, x, owed: 1, match: match == nil ? "none" : "inferred",
            reason: "paid_not_granted", receipt: r.receiptID)
    }

    /// Two purchases 4 min apart, two open orders (1 min after the first, 3 min before it): the
    /// first purchase takes the closer order, the second the one that is left.
    mutating func inferredEachOrderOnce() {
        let p1 = purchaseTime()
        let p2 = p1 + 4 * Span.minute
        let product = cat.coins500
        let t1 = tid(u), t2 = tid(u)
        let before = order(u, product, status: "created", tid: nil, at: p1 - 3 * Span.minute)
        let after = order(u, product, status: "created", tid: nil, at: p1 + Span.minute)
        let x1 = tx(t1, product, at: p1), x2 = tx(t2, product, at: p2)
        let r = receipt(
            u, order: nil, tidColumn: nil, at: p2 + seconds(5...60), verify: unresolvedStatus(),
            style: .ios7, txs: [x1, x2])
        expectCompensate(
            order: after.orderID, user: u, x1, owed: 1, match: "inferred", reason: "paid_not_granted",
            receipt: r.receiptID)
        expectCompensate(
            order: before.orderID, user: u, x2, owed: 1, match: "inferred", reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    /// No order at all, or only an open order of another product.
    mutating func noOrder() {
        let p = purchaseTime(minDaysAgo: 0, maxDaysAgo: 28)
        let product = cat.coins100
        if rng.chance(0.5) { order(u, cat.gems, status: "created", tid: nil, at: p - 2 * Span.minute) }
        let t = tid(u)
        let x = tx(t, product, at: p)
        let r = receipt(
            u, order: nil, tidColumn: rng.chance(0.5) ? t : nil, at: p + seconds(2...60),
            verify: unresolvedStatus(), txs: [x])
        expectCompensate(
            order: nil, user: u, x, owed: 1, match: "none", reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    /// Three units bought, one or two granted.
    mutating func partiallyGranted() {
        let (p, product, t, o) = purchase(cat.consumables, qty: 3)
        let x = tx(t, product, qty: 3, at: p)
        let r = receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(), txs: [x])
        let grants = Int(rng.int(1...2))
        for i in 0..<grants {
            grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60) + Int64(i) * Span.minute)
        }
        expectCompensate(
            order: o.orderID, user: u, x, owed: 3 - grants, match: "exact", reason: "partially_granted",
            receipt: r.receiptID)
    }

    /// Granted, then revoked by support, but Apple shows no refund.
    mutating func revokedNotRefunded() {
        let p = purchaseTime()
        let product = rng.chance(0.7) ? rng.pick(cat.consumables) : rng.pick(cat.nonConsumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, at: p)
        let r = receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(), txs: [x])
        grant(
            u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60),
            revoked: p + Span.day + rng.int(0...Span.day))
        expectCompensate(
            order: o.orderID, user: u, x, owed: 1, match: "exact", reason: "revoked_not_refunded",
            receipt: r.receiptID)
    }
}
