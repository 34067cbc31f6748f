// Scenarios only the App Store Server API shows: refunds that only the notification
// history tells (full, prorated, reversed), a purchase only the customer's transaction history
// holds, and first purchases only a ONE_TIME_CHARGE notification reports (with and without an
// appAccountToken). Apple's truth holds them always; the job sees them only when it sweeps the
// Server API, which the generator takes to be exactly when it writes `--apple-truth`
// (`settings.apiSweeps`): without it these scenarios expect nothing beyond what receipts show.
// Apple's price is what the job learns here, so these purchases are made in any storefront.

import AppStoreSimulator
import Reconciliation

extension ScenarioBuilder {
    /// A consumable bought, uploaded (answered 0 at upload, so never sent again) and granted, then
    /// refunded by Apple: verifyReceipt's refund list does not show it, the REFUND notification
    /// does. With `prorated`, Apple returned only a share (REFUND_PRORATED): still a clawback of
    /// the whole grant, but refunds.csv's refunded_amount is the share.
    mutating func notificationRefund(prorated: Bool) {
        let qty = !prorated && rng.chance(0.25) ? 2 : 1
        let (p, product, t, o) = purchase(cat.consumables, qty: qty, daysAgo: 4...25)
        data.storefronts[t] = rng.pick(SimStorefront.all)
        let x = tx(t, product, qty: qty, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0, txs: [x])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, qty: qty, at: p + seconds(31...60))
        let refund = SimRefund(
            cancellationDateMs: p + rng.int(Span.day...2 * Span.day), reason: rng.pick(["0", "1"]),
            type: prorated ? "REFUND_PRORATED" : nil,
            percentage: prorated ? rng.pick([50_000, 25_000, 33_333]) : nil)
        data.appleRefunds[t] = refund
        guard settings.apiSweeps else { return }
        expectClawback(g, reason: "refunded", refund: refund)
        expectRefund(x, user: u, refund, revocationType: refund.revocationType, state: "still_granted", grants: [g])
    }

    /// Granted, refunded, and a day to three later the refund reversed (REFUND_REVERSED): nothing
    /// to claw back; refunds.csv lists it as `reversed`, with the refund's date and type.
    mutating func refundReversed() {
        let (p, product, t, o) = purchase(cat.consumables, daysAgo: 8...25)
        data.storefronts[t] = rng.pick(SimStorefront.all)
        let x = tx(t, product, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: 0, txs: [x])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        let refunded = p + rng.int(Span.day...2 * Span.day)
        let refund = SimRefund(
            cancellationDateMs: refunded, reason: rng.pick(["0", "1"]),
            reversedMs: refunded + rng.int(Span.day...3 * Span.day))
        data.appleRefunds[t] = refund
        guard settings.apiSweeps else { return }
        expectRefund(x, user: u, refund, revocationType: refund.revocationType, state: "reversed", grants: [g])
    }

    /// A purchase the job verifies and grants (the customer's known production transaction), then
    /// a monthly subscription paid at Apple whose upload never came. Auto-renewables get no
    /// ONE_TIME_CHARGE: only the customer's transaction history, asked because the user has an
    /// open order, shows it. Inferred to that order; no receipt.
    mutating func historyOnlyPurchase() {
        let p1 = purchaseTime(minDaysAgo: 8, maxDaysAgo: 25)
        let first = rng.pick(cat.consumables)
        let t1 = tid(u)
        let o1 = order(u, first, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        // No status at upload and a grant: unresolved, so the job verifies it.
        receipt(u, order: o1.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: nil, txs: [tx(t1, first, at: p1)])
        grant(u, order: o1.orderID, first, tid: t1, otid: t1, at: p1 + seconds(31...60))
        let p2 = p1 + rng.int(Span.day...5 * Span.day)
        let product = cat.vipMonth
        let (t2, w2) = tidAndWol(u)
        let o2 = order(u, product, status: rng.pick(["created", "paid"]), tid: nil, at: p2 - seconds(5...120))
        let x2 = tx(t2, product, at: p2, expires: p2 + 30 * Span.day, wol: w2)
        data.storefronts[t2] = rng.pick(SimStorefront.all)
        appleOnly(x2)
        guard settings.apiSweeps else { return }
        expectCompensate(
            order: o2.orderID, user: u, x2, owed: 1, match: "inferred", reason: "paid_not_granted",
            receipt: "", apiSource: .transactionHistory)
    }

    /// The player's very first purchase, never uploaded: the client set appAccountToken to the
    /// order id (a UUID), so the ONE_TIME_CHARGE notification ties it to the order: exact.
    mutating func notificationPurchaseToken() {
        let p = purchaseTime(minDaysAgo: 1, maxDaysAgo: 25)
        let product = rng.pick(cat.consumables + cat.nonConsumables + [cat.seasonPass])
        let t = tid(u)
        let orderID = uuid()
        data.orders.append(
            OrderRow(
                orderID: orderID, userID: IDs.user(u), productID: product, quantity: 1,
                status: rng.pick(["created", "paid"]), transactionID: nil,
                createdAt: p - seconds(5...300)))
        let x = tx(t, product, at: p)
        data.storefronts[t] = rng.pick(SimStorefront.all)
        appleOnly(x, accountToken: orderID)
        guard settings.apiSweeps else { return }
        expectCompensate(
            order: orderID, user: u, x, owed: 1, match: "exact", reason: "paid_not_granted", receipt: "",
            apiSource: .notification)
    }

    /// The same first purchase without appAccountToken: the user's open order exists, but nothing
    /// ties the transaction to any user (no upload, no grant, no history asked), so it is never
    /// compensated blindly: unattributed.csv.
    mutating func notificationPurchaseUnattributed() {
        let (p, product, t, _) = purchase(cat.consumables, status: "created", linked: false, daysAgo: 1...25)
        data.storefronts[t] = rng.pick(SimStorefront.all)
        let x = tx(t, product, at: p)
        appleOnly(x)
        guard settings.apiSweeps else { return }
        expectUnattributed(x)
    }

    /// `--api-bench`: a verified, granted consumable refunded in the notification history only,
    /// and a later abandoned order (open), so the night sweeps one REFUND notification and asks
    /// one customer's history for this user. Bought in the USA.
    mutating func apiBench() {
        let (p, product, t, o) = purchase(cat.consumables, daysAgo: 4...25)
        let x = tx(t, product, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: nil, txs: [x])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        let refund = SimRefund(cancellationDateMs: p + rng.int(Span.day...2 * Span.day), reason: rng.pick(["0", "1"]))
        data.appleRefunds[t] = refund
        order(
            u, rng.pick(cat.consumables), status: "created", tid: nil,
            at: refund.cancellationDateMs + rng.int(Span.hour...Span.day))
        guard settings.apiSweeps else { return }
        expectClawback(g, reason: "refunded", refund: refund)
        expectRefund(x, user: u, refund, revocationType: refund.revocationType, state: "still_granted", grants: [g])
    }

    // MARK: - Helpers

    /// A transaction Apple has that no upload shows, in the user's history (priced when written).
    mutating func appleOnly(_ x: SimTransaction, accountToken: String? = nil) {
        data.appleOnly.append(
            AppleTruthRow(
                transactionID: x.tid, originalTransactionID: x.otid, productID: x.pid, productType: cat.type(of: x.pid),
                quantity: x.qty, purchaseDateMs: x.pd, originalPurchaseDateMs: x.opd, expiresDateMs: x.exp,
                webOrderLineItemID: x.wol, environment: .production, bundleID: cat.bundle, customer: IDs.user(u),
                appAccountToken: accountToken))
    }

    /// A version 4 UUID, lower case (as Apple gives back an appAccountToken).
    mutating func uuid() -> String {
        let hi = (rng.next() & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let lo = (rng.next() & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let h = Array(SimNotification.hex(hi) + SimNotification.hex(lo))
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-"
            + String(h[20..<32])
    }
}
