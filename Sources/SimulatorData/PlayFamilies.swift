// What each Play family builds and what the night must list for it (docs/rules.md "Google Play";
// contract "Google Play's lists", "acknowledge.csv"). Amounts: Google's order `total` (tax
// included) prorated by units when Google answered for the order, else the list price.

import AppStoreSimulator
import PlaySimulator
import Reconciliation

extension PlayPlayer {
    mutating func play(_ family: PlayFamily) {
        switch family {
        case .clean:
            let product = anyProduct()
            let p = buy(product, quantity: units(of: product), completedAt: before(2 * W.hour, 20 * W.day))
            _ = purchase(p, granted: true, at: p.completedAt!)

        case .missedOrder:
            let p = buy(consumable(), quantity: 1 + Int(rng.int(0...2)), acknowledged: false, completedAt: before(2 * W.hour, 60 * W.hour))
            let made = purchase(p, granted: false, at: p.completedAt!)
            expectCompensate(p, order: made.order, owed: p.quantity, receipt: made.receipt, amount: orderAmount(p, units: p.quantity))
            expectAcknowledge(p, action: "grant_and_acknowledge", user: user, order: made.order)

        case .unacknowledged, .overdue:
            let overdue = family == .overdue
            let at = overdue ? before(3 * W.day + W.hour, 3 * W.day + 20 * W.hour) : before(2 * W.hour, 60 * W.hour)
            let product = anyProduct()
            let p = buy(product, quantity: units(of: product), acknowledged: false, completedAt: at)
            let made = purchase(p, granted: true, at: at)
            expectAcknowledge(p, action: overdue ? "overdue" : "acknowledge", user: user, order: made.order)

        case .duplicateGrant:
            let p = buy(consumable(), quantity: 1, completedAt: before(W.day, 20 * W.day))
            let made = purchase(p, granted: true, at: p.completedAt!)
            let again = grant(p, order: made.order, at: p.completedAt! + 7 * W.minute)
            expectDuplicate(again, kind: "same_transaction", kept: made.grant!)

        case .crossAccount:
            // Two units of a non-consumable; the second unit granted to another account of ours.
            let p = buy(product("no_ads"), quantity: 2, completedAt: before(2 * W.day, 20 * W.day))
            let order = order(p, at: p.completedAt! - W.minute)
            _ = upload(p, order: order, at: p.completedAt! + 30_000)
            let first = grant(p, order: order, quantity: 1, at: p.completedAt! + 2 * W.minute)
            let other = grant(p, order: nil, user: "Q" + IDs.pad(slot, 9), quantity: 1, at: p.completedAt! + W.day)
            expectDuplicate(other, kind: "cross_account", kept: first)

        case .refunded, .chargeback, .contradicted:
            refunded(family)

        case .unacknowledgedRefund:
            // Granted, never acknowledged: Google refunds it after three days (reason 8, by Google).
            let product = anyProduct()
            let at = before(5 * W.day, 20 * W.day)
            let p = buy(product, quantity: units(of: product), acknowledged: false, completedAt: at, refundable: 0, orderState: "REFUNDED")
            let g = purchase(p, granted: true, at: at).grant!
            let voidedAt = at + 3 * W.day + rng.int(W.hour...6 * W.hour)
            void(p, at: voidedAt, source: 2, reason: 8)
            expectClawback(g, units: g.quantity, reason: "unacknowledged", voided: (voidedAt, 8), amount: orderAmount(p, units: g.quantity))
            expectRefund(p, at: voidedAt, reason: 8, source: 2, voidedUnits: p.quantity, state: "sales_lost", grants: [g])

        case .partialRefund, .partialThenRest:
            // Ten coins: 2 refunded, then 3 (quantity-based partial refunds), then (…ThenRest) the rest.
            let rest = family == .partialThenRest
            let at = before(5 * W.day, 20 * W.day)
            let p = buy(
                product("coins100"), quantity: 10, completedAt: at, refundable: rest ? 0 : 5,
                orderState: rest ? "REFUNDED" : "PARTIALLY_REFUNDED")
            let g = purchase(p, granted: true, at: at).grant!
            let reason = rng.pick([0, 1, 4])
            void(p, at: at + W.day, source: 0, reason: reason, quantity: 2)
            void(p, at: at + 2 * W.day, source: 0, reason: reason, quantity: 3)
            var latest = at + 2 * W.day, voided = 5
            if rest {
                latest = at + 3 * W.day
                voided = 10
                void(p, at: latest, source: 0, reason: reason)
            }
            // Exactly the units voided, taken from the grant's ten.
            expectClawback(g, units: voided, reason: "refunded", voided: (latest, reason), amount: orderAmount(p, units: voided))
            expectRefund(p, at: latest, reason: reason, source: 0, voidedUnits: voided, state: "still_granted", grants: [g])

        case .cancelled:
            // The payment never went through, yet the app granted it: no order money, the list price.
            let product = anyProduct()
            let at = before(W.day, 10 * W.day)
            let p = buy(product, quantity: units(of: product), state: .cancelled, acknowledged: false, completedAt: nil)
            let order = order(p, status: "created", at: at - W.minute)
            _ = upload(p, order: order, at: at)
            let g = grant(p, order: order, at: at + W.minute)
            expectClawback(g, units: g.quantity, reason: "cancelled", voided: nil, amount: listAmount(product, units: g.quantity))

        case .pending:
            let at = before(W.hour, 5 * W.day)
            let p = buy(consumable(), quantity: 1, state: .pending, acknowledged: false, completedAt: nil, orderID: false)
            let order = order(p, status: "created", transactionID: .some(nil), at: at - W.minute)
            _ = upload(p, order: order, at: at)

        case .testPurchase:
            // A license tester's purchase has no order id: the shop's rows name its token.
            let product = anyProduct()
            let p = buy(
                product, quantity: units(of: product), acknowledged: false, completedAt: before(W.hour, 2 * W.day), orderID: false,
                test: true)
            let g = purchase(p, granted: true, at: p.completedAt!).grant!
            expectClawback(g, units: g.quantity, reason: "sandbox_transaction", voided: nil, amount: listAmount(product, units: g.quantity))

        case .noOrderID:
            let p = buy(consumable(), quantity: 1, completedAt: before(2 * W.hour, 20 * W.day), orderID: false)
            let made = purchase(p, granted: false, at: p.completedAt!)
            expectCompensate(p, order: made.order, owed: 1, receipt: made.receipt, amount: listAmount(p.productID, units: 1))

        case .forgedToken:
            // A token Google never issued, uploaded and granted: Google answers 404.
            let product = anyProduct()
            let n = next()
            let p = PlayBought(token: token(n, prefix: "forged"), orderID: nil, productID: product, quantity: 1, completedAt: nil)
            let g = purchase(p, granted: true, at: before(W.hour, 10 * W.day)).grant!
            expectClawback(g, units: 1, reason: "invalid_receipt", voided: nil, amount: listAmount(product, units: 1))

        case .twoStorePlayer:
            // An App Store player's user id: the same person buys on both stores.
            let player = IDs.user(world.appleUsers > 0 ? slot % world.appleUsers : 0)
            let p = buy(consumable(), quantity: 1, completedAt: before(2 * W.hour, 20 * W.day))
            let made = purchase(p, user: player, granted: false, at: p.completedAt!)
            expectCompensate(p, order: made.order, user: player, owed: 1, receipt: made.receipt, amount: orderAmount(p, units: 1))

        case .uploadNeverCame:
            // The app never uploaded the token; its account id is our order's id.
            let orderID = id("PO", next())
            let p = buy(
                consumable(), quantity: 1, acknowledged: false, completedAt: before(2 * W.hour, 60 * W.hour), account: orderID)
            world.orders.append([orderID, user, p.productID, "1", "created", nil, UTC.sqlTimestamp(p.completedAt! - W.minute)])
            announce(p)
            expectCompensate(p, order: orderID, owed: 1, receipt: nil, amount: orderAmount(p, units: 1), source: "notification")
            expectAcknowledge(p, action: "grant_and_acknowledge", user: user, order: orderID)

        case .unattributed:
            let p = buy(consumable(), quantity: 1, acknowledged: false, completedAt: before(2 * W.hour, 60 * W.hour))
            announce(p)
            world.expected[.unattributed, default: []].append([
                p.transactionID, p.productID, UTC.timestamp(p.completedAt!), orderAmount(p, units: 1), "USD", "", firstSeen,
            ])
            expectAcknowledge(p, action: "grant_and_acknowledge", user: nil, order: nil)

        case .badRows:
            let at = before(W.hour, 5 * W.day)
            let n = next()
            let p = PlayBought(token: "aGVsbG8=", orderID: googleOrderID(n), productID: product("coins100"), quantity: 1, completedAt: nil)
            let orderID = id("PO", next())
            world.orders.append([orderID, user, p.productID, "0", "paid", p.transactionID, UTC.sqlTimestamp(at - W.minute)])
            let receipt = upload(p, order: orderID, at: at)
            world.expected[.inputErrors, default: []] += [
                ["iap_orders", orderID, "quantity", "google_play: quantity 0 is below 1"],
                [
                    "iap_receipts", receipt, "receipt_data",
                    #"google_play: receipt_data is not a Google Play purchase token (1 to 2,048 letters, digits, ".", "-", "_")"#,
                ],
            ]
        }
    }

    /// Refunded whole after it was granted: by the buyer (`refunded`: the grant still active,
    /// revoked by customer service, or never made), a chargeback (reason 7), or a chargeback whose
    /// order Google still calls PROCESSED (`contradicted`).
    private mutating func refunded(_ family: PlayFamily) {
        let product = anyProduct()
        let at = before(3 * W.day, 20 * W.day)
        let contradicted = family == .contradicted
        let p = buy(
            product, quantity: units(of: product), completedAt: at, refundable: 0, orderState: contradicted ? "PROCESSED" : "REFUNDED")
        let voidedAt = at + rng.int(W.hour...2 * W.day)
        let (source, reason) = family == .refunded ? (rng.pick([0, 1]), rng.pick([0, 1, 2, 3, 4, 5, 6])) : (2, 7)
        let shape = family == .refunded ? rng.pick(["granted", "revoked", "never_granted"]) : "granted"
        let made = purchase(p, granted: false, at: at)
        void(p, at: voidedAt, source: source, reason: reason)
        var grants: [PlayGrant] = []
        var state = contradicted ? "contradicted" : "still_granted"
        switch shape {
        case "revoked":
            grants = [grant(p, order: made.order, at: at + 2 * W.minute, revokedAt: voidedAt + W.hour)]
            state = "clawed_back"
        case "never_granted":
            state = "never_granted"
        default:
            let g = grant(p, order: made.order, at: at + 2 * W.minute)
            grants = [g]
            expectClawback(
                g, units: g.quantity, reason: reason == 7 ? "chargeback" : "refunded", voided: (voidedAt, reason),
                amount: orderAmount(p, units: g.quantity))
        }
        expectRefund(p, at: voidedAt, reason: reason, source: source, voidedUnits: p.quantity, state: state, grants: grants)
    }
}
