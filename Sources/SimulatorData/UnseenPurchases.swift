// Purchases Apple sold that the shop never saw (`iap-sim seed --unseen-share`):
// no receipt, no upload, no order, no grant, no transaction history of a user of ours and no
// notification (the truth's `notifications` column says `none`), so only Apple's sales report
// shows them. Their buyers are customers unknown to the shop (`S` and nine digits; the shop's
// users are `U…`) and their transaction ids have a prefix of their own (`1000002…`), so nothing
// else the generator writes can name them: the expected reports, the refund list and the source
// tables are those of the same seed without them.
//
// How many: `share` of Apple's production purchases of the plan, rounded (0 turns them off).
// Each is drawn by its own hash of the seed and its number: a consumable (one to three units)
// most of the time, else a non-consumable or the season pass, bought 1 hour to 30 days before
// as-of in the USA, Japan or Germany at Apple's price there, in one of the apps.

import AppStoreSimulator
import Reconciliation

enum UnseenPurchases {
    /// The customer id of the n-th unseen purchase (0-based).
    static func customer(_ n: Int) -> String { "S" + IDs.pad(n, 9) }
    static func transaction(_ n: Int) -> String { "1000002" + IDs.pad(n, 9) }

    /// How many for `sold` production purchases.
    static func count(share: Double, sold: Int) -> Int {
        share > 0 ? Int((Double(sold) * share).rounded()) : 0
    }

    /// The n-th unseen purchase.
    static func row(_ n: Int, settings: GeneratorSettings) -> AppleTruthRow {
        var rng = SeededRandom(seed: SimHash.combine(settings.seed, UInt64(n), 0x0115_EE11))
        let app = settings.apps[Int.random(in: 0..<settings.apps.count, using: &rng)]
        let product: String
        var quantity = 1
        if rng.chance(0.8) {
            product = rng.pick(app.consumables)
            quantity = Int(rng.int(1...3))
        } else {
            product = rng.pick(app.nonConsumables + [app.seasonPass])
        }
        let storefront = rng.pick([SimStorefront.usa, .usa, .usa] + SimStorefront.all.dropFirst())
        let at = settings.asOf - rng.int(Span.hour...30 * Span.day)
        var row = AppleTruthRow(
            transactionID: transaction(n), productID: product, productType: app.type(of: product),
            quantity: quantity, purchaseDateMs: at, bundleID: app.bundle, customer: customer(n),
            storefront: storefront,
            price: PriceList.unit(product, at: storefront).map { $0 * Int64(quantity) })
        row.notified = false
        return row
    }

    static func rows(share: Double, sold: Int, settings: GeneratorSettings) -> [AppleTruthRow] {
        (0..<count(share: share, sold: sold)).map { row($0, settings: settings) }
    }
}
