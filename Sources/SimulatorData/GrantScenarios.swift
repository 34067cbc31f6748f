// Scenarios of grants that should not stand (duplicates, restores, other accounts, refunds,
// rejections, the sandbox) and the block of bad rows (input errors).

import AppStoreSimulator
import Reconciliation

extension ScenarioBuilder {
    /// One transaction granted two or three times (client retry, repeated notification). The
    /// second grant sometimes has the very same granted_at: the grant id decides.
    mutating func sameTransaction() {
        let (p, product, t, o) = purchase(cat.consumables)
        receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(),
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
    mutating func restoreGranted(product: String) {
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
        receipt(
            u, order: o2.orderID, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(),
            txs: isSub || rng.chance(0.5) ? [x1, x2] : [x2])
        let g2 = grant(u, order: o2.orderID, product, tid: t2, otid: t1, at: p2 + seconds(31...60))
        expectDuplicate(g2, kind: "restore_as_purchase", kept: kept)
    }

    /// A restore that nobody granted: not a missed order, nothing to report.
    mutating func restoreNotGranted() {
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
        receipt(
            u, order: nil, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(), style: .ios7,
            txs: [x1, x2])
    }

    /// One Apple ID's non-consumable restored onto a second account (the next user slot): both
    /// receipts carry the same original; the second account's grant is a duplicate.
    mutating func crossAccount() {
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
        receipt(
            b, order: ob.orderID, tidColumn: t2, at: p2 + seconds(2...30), verify: unresolvedStatus(), style: .ios7,
            txs: [x1, x2])
        let gb = grant(b, order: ob.orderID, product, tid: t2, otid: t1, at: p2 + seconds(31...60))
        expectDuplicate(gb, kind: "cross_account", kept: ga)
    }

    /// Granted, later refunded by Apple (listed in the refund file). With `duplicate`, the
    /// transaction was granted twice: both grants are clawed back, none is a duplicate. The refund
    /// is in refunds.csv, still granted; its revocation_type is REFUND_FULL when the job also
    /// swept the REFUND notification, empty when only verifyReceipt showed it.
    mutating func refunded(duplicate: Bool) {
        let p = purchaseTime(minDaysAgo: 4, maxDaysAgo: 25)
        let product = !duplicate && rng.chance(0.3) ? rng.pick(cat.nonConsumables) : rng.pick(cat.consumables)
        let t = tid(u)
        let o = order(u, product, status: "delivered", tid: t, at: p - seconds(5...120))
        let x = tx(t, product, at: p)
        receipt(u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(), txs: [x])
        var grants = [grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))]
        if duplicate {
            grants.append(grant(u, order: nil, product, tid: t, otid: t, at: p + seconds(61...600)))
        }
        let refund = SimRefund(cancellationDateMs: p + rng.int(Span.day...2 * Span.day), reason: rng.pick(["0", "1"]))
        data.refunds.append(RefundRow(transactionID: t, refund: refund))
        if settings.refundsServed {
            for g in grants { expectClawback(g, reason: "refunded", refund: refund) }
            expectRefund(
                x, user: u, refund, revocationType: settings.apiSweeps ? "REFUND_FULL" : "",
                state: "still_granted", grants: grants)
        } else if duplicate {
            expectDuplicate(grants[1], kind: "same_transaction", kept: grants[0])
        }
    }

    /// Granted on a receipt Apple rejects for good: 21003, 21010 or 211xx not retryable.
    mutating func invalidReceipt() {
        let (p, product, t, o) = purchase(cat.consumables)
        let st = rng.pick([21003, 21010, 21100 + Int(rng.int(0...99))])
        receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: rng.pick([nil, st]), st: st,
            txs: [tx(t, product, at: p)])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "invalid_receipt")
    }

    /// Granted on a valid receipt of another app.
    mutating func wrongBundle() {
        let (p, product, t, o) = purchase(cat.consumables)
        receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: unresolvedStatus(),
            bundle: Catalog.otherBundle, txs: [tx(t, Catalog.otherProduct, at: p, type: "consumable")])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "wrong_bundle")
    }

    /// A grant claims a transaction id that the valid receipt of its order does not contain
    /// (the receipt holds another purchase of the user, which was granted properly).
    mutating func transactionNotFound() {
        let p = purchaseTime()
        let real = tid(u), fake = tid(u)
        let o0 = order(u, cat.coins100, status: "delivered", tid: real, at: p - seconds(60...120))
        grant(u, order: o0.orderID, cat.coins100, tid: real, otid: real, at: p + seconds(31...60))
        let o1 = order(u, cat.coins500, status: "delivered", tid: fake, at: p - seconds(5...50))
        receipt(
            u, order: o1.orderID, tidColumn: nil, at: p + seconds(2...30), verify: unresolvedStatus(),
            txs: [tx(real, cat.coins100, at: p)])
        let g = grant(u, order: o1.orderID, cat.coins500, tid: fake, otid: fake, at: p + seconds(61...90))
        expectClawback(g, reason: "transaction_not_found")
    }

    /// A tester's sandbox purchase granted in production.
    mutating func sandboxGranted() {
        let (p, product, t, o) = purchase(cat.consumables + cat.nonConsumables)
        receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: rng.pick([nil, 21007]),
            env: .sandbox, txs: [tx(t, product, at: p)])
        let g = grant(u, order: o.orderID, product, tid: t, otid: t, at: p + seconds(31...60))
        expectClawback(g, reason: "sandbox_transaction")
    }

    /// A sandbox purchase never granted: never compensated.
    mutating func sandboxMissed() {
        let (p, product, t, o) = purchase(cat.consumables, status: "created", linked: false)
        receipt(
            u, order: o.orderID, tidColumn: t, at: p + seconds(2...30), verify: nil, env: .sandbox,
            txs: [tx(t, product, at: p)])
    }

    /// A missed purchase older than the window: uploaded then (not verified), or uploaded late
    /// inside the window (verified, but the purchase is out of the window). Nothing to report.
    mutating func outsideWindow() {
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
    mutating func renewal(expired: Bool) {
        let product = cat.vipWeek
        let p1 = expired ? asOf - rng.int(15 * Span.day...22 * Span.day) : asOf - rng.int(8 * Span.day...13 * Span.day)
        let p2 = p1 + 7 * Span.day
        let (t1, w1) = tidAndWol(u)
        let (t2, w2) = tidAndWol(u)
        let x1 = tx(t1, product, at: p1, expires: p1 + 7 * Span.day, wol: w1)
        let x2 = tx(t2, otid: t1, product, at: p2, original: p1, expires: p2 + 7 * Span.day, wol: w2, late: true)
        let o1 = order(u, product, status: "delivered", tid: t1, at: p1 - seconds(5...120))
        let r = receipt(
            u, order: o1.orderID, tidColumn: t1, at: p1 + seconds(2...30), verify: unresolvedStatus(),
            st: expired ? 21006 : nil, txs: [x1, x2])
        grant(u, order: o1.orderID, product, tid: t1, otid: t1, at: p1 + seconds(31...60))
        expectCompensate(
            order: nil, user: u, x2, owed: 1, match: "none", reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    /// Granted, but the uploaded receipt is base64 of garbage (Apple: 21002, retryable): on the
    /// first run nothing is definitive, so nothing is reported.
    mutating func malformedReceipt() {
        let (p, product, t, o) = purchase(cat.consumables)
        var garbage = [UInt8]()
        for _ in 0..<48 { garbage.append(UInt8(truncatingIfNeeded: rng.next())) }
        garbage[0] = 0x30  // never "{": not a token
        data.receipts.append(
            ReceiptRow(
                receiptID: IDs.receipt(u, next(u, \.r)), userID: IDs.user(u),
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
        data.inputErrors.append(
            err(
                "iap_products", cat.legacyBundle, "product_type",
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
        let badData = ReceiptRow(
            receiptID: IDs.receipt(n, next(n, \.r)), userID: IDs.user(n), orderID: nil,
            transactionID: nil, rawData: "@@not base64 at all@@", submittedAt: day,
            verifyStatus: nil, sim: nil)
        data.receipts.append(badData)
        data.inputErrors.append(
            err(
                "iap_receipts", badData.receiptID, "receipt_data",
                "receipt_data is neither base64 (an app receipt) nor a JWS (a signed transaction)"))
        let orphan = tid(n)
        let r = receipt(
            n, order: nil, tidColumn: orphan, at: day + Span.minute, verify: nil, style: .ios7, st: 21003,
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
        receipt(
            n2, order: o2.orderID, tidColumn: t, at: day + 5 * Span.second, verify: 0,
            txs: [tx(t, cat.coins100, at: day)])
        var dup = grant(n2, order: o2.orderID, cat.coins100, tid: t, otid: t, at: day + 10 * Span.second)
        dup.grantedAt += Span.second
        data.grants.append(dup)
        data.inputErrors.append(err("iap_grants", dup.grantID, "grant_id", "duplicate key (2 rows)"))
    }
}
