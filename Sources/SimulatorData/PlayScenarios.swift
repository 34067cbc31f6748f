// Google Play's part of a seed (`iap-sim seed --play-users N`): a shop selling on both stores, as
// the contract's "Two stores in one shop" maps it. Play's rows go into the same four relations
// with `store = 'google_play'` (the App Store's rows get `app_store`); the purchase token is
// `receipt_data`, Google's order id (`GPA.…`) the `transaction_id` of orders and grants, the token
// itself for a purchase without an order id; Play's products are rows of their own, under the same
// product ids as the App Store's (a product sold in both stores is two products).
//
// Every Play player plays one family (`PlayFamily`), each a case of docs/rules.md "Google Play".
// What Google knows (PlayTruth: purchases, orders' money, voided records, notifications) and the
// report rows each family must give are written by the family itself, from what it built: the
// expected rows are the generator's truth, never the job's rules run again.
//
// Play has its own random stream (seeded from --seed and the slot), so the App Store's data stay
// byte for byte what they are without Play.

import AppStoreSimulator
import PlaySimulator
import Reconciliation

/// One case of Play's rules, played by one Play player.
enum PlayFamily: String, CaseIterable {
    /// Bought, uploaded, granted and acknowledged: no finding.
    case clean = "play_clean"
    /// Paid, uploaded, never granted, not acknowledged: compensate.csv and acknowledge.csv
    /// `grant_and_acknowledge`.
    case missedOrder = "play_missed_order"
    /// Granted but nobody acknowledged it (three days not over): acknowledge.csv `acknowledge`.
    case unacknowledged = "play_unacknowledged"
    /// Granted, not acknowledged, three days over (four not): acknowledge.csv `overdue`.
    case overdue = "play_overdue"
    /// One order granted twice to its buyer: duplicate_grants.csv `same_transaction`.
    case duplicateGrant = "play_duplicate_grant"
    /// Two units of a non-consumable, the second granted to another account: `cross_account`.
    case crossAccount = "play_cross_account"
    /// Refunded whole (`voidedReason` 1): claw back `refunded`; refunds.csv.
    case refunded = "play_refunded"
    /// A chargeback (`voidedReason` 7): claw back `chargeback`.
    case chargeback = "play_chargeback"
    /// Refunded by Google because nobody acknowledged it (reason 8) after it was granted: claw back
    /// `unacknowledged`; refunds.csv `sales_lost`.
    case unacknowledgedRefund = "play_unacknowledged_refund"
    /// Ten units, 2 then 3 refunded (`voidedQuantity`): exactly 5 clawed back.
    case partialRefund = "play_partial_refund"
    /// Ten units, 2, then 3, then the rest (a record naming no quantity): all clawed back.
    case partialThenRest = "play_partial_then_rest"
    /// A voided record Google's order contradicts (still `PROCESSED`): refunds.csv `contradicted`.
    case contradicted = "play_contradicted"
    /// CANCELLED, yet granted: claw back `cancelled`.
    case cancelled = "play_cancelled"
    /// PENDING: no payment yet, nothing granted, no finding.
    case pending = "play_pending"
    /// A license tester's purchase (the sandbox), without an order id, granted: claw back
    /// `sandbox_transaction`; never in acknowledge.csv.
    case testPurchase = "play_test_purchase"
    /// A production purchase without an order id, never granted: compensated under its token.
    case noOrderID = "play_no_order_id"
    /// A token Google never issued (404), granted: claw back `invalid_receipt`.
    case forgedToken = "play_forged_token"
    /// A player of the App Store (his user id) buys on Google Play too; never granted there.
    case twoStorePlayer = "play_two_store_player"
    /// No upload: only Pub/Sub's ONE_TIME_PRODUCT_PURCHASED names it, and its account id is our
    /// order's id: compensated (`source` notification), acknowledge.csv.
    case uploadNeverCame = "play_upload_never_came"
    /// No upload and no account id: nothing of ours ties it to a user: unattributed.csv.
    case unattributed = "play_unattributed"
    /// Play rows that break the contract (a token that is not one, quantity 0): input_errors.csv.
    case badRows = "play_bad_rows"
}

/// A Play source row of one of the four relations: its cells in the relation's column order
/// (`PlayWorld.columns`), `store` added by the loader.
typealias PlayRow = [String?]

/// Everything Google Play adds to a seed.
struct PlayWorld {
    /// `iap-sim seed --play-users`, `--play-package`.
    var users: Int
    var package: String
    var asOf: Int64
    var seed: UInt64
    /// User ids of the App Store's players (two-store players reuse them).
    var appleUsers: Int

    var products: [PlayRow] = []
    var orders: [PlayRow] = []
    var receipts: [PlayRow] = []
    var grants: [PlayRow] = []
    var truth = PlayTruth()
    /// Expected rows per report, without the proceeds and `store` cells (the writer adds them).
    var expected: [ExpectedReport: [[String]]] = [:]
    /// acknowledge.csv's rows, without `store`, most urgent first once sorted.
    var acknowledge: [(by: Int64, tid: String, cells: [String])] = []
    /// Players per family.
    var census: [String: Int] = [:]

    /// The Play products (`<package>.<name>`: the App Store's ids when the package is the app's bundle id).
    static let productNames: [(name: String, type: ProductType)] = [
        ("coins100", .consumable), ("coins500", .consumable), ("no_ads", .nonConsumable), ("level_pack", .nonConsumable),
    ]

    /// How far back every Play time may lie from `--as-of`, and how far `--as-of` may lie before the
    /// real clock: Google lists voided purchases 30 days back from its own now.
    static let oldestDays: Int64 = 21
    static let asOfBeforeNowDays: Int64 = 8

    /// Why a Play seed at `asOf` cannot be swept by a night run now (`realNow`), or nil. Google's
    /// voided list and Pub/Sub work by the real clock: every voided record and notification must lie
    /// between 30 days before now and now.
    static func clockProblem(asOf: Int64, realNow: Int64) -> String? {
        if asOf > realNow + 60_000 {
            return "--as-of lies after now: Google Play's voided records and notifications are dated before --as-of, "
                + "and Google lists none after its own now"
        }
        if realNow - asOf > asOfBeforeNowDays * day {
            return "--as-of lies more than \(asOfBeforeNowDays) days before now: Play's voided records (up to "
                + "\(oldestDays) days before --as-of) would fall out of the 30 days Google lists"
        }
        return nil
    }

    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000
    static let minute: Int64 = 60_000

    init(users: Int, package: String, asOf: Int64, seed: UInt64, appleUsers: Int) {
        self.users = users
        self.package = package
        self.asOf = asOf
        self.seed = seed
        self.appleUsers = appleUsers
        for p in Self.productNames {
            let id = package + "." + p.name
            let price = PriceList.list(id)
            products.append([
                id, p.type.rawValue, package, price.map(MoneyText.sqlNumeric), price == nil ? nil : PriceList.listCurrency, nil,
            ])
        }
        // The world moves into each player and back, never copied: a copy shared while a player
        // appends would copy every row so far, once per player.
        var world = self
        for slot in 0..<users {
            var player = PlayPlayer(world: consume world, slot: slot)
            let family = player.family
            player.play(family)
            world = player.world
            world.census[family.rawValue, default: 0] += 1
        }
        self = world
    }

    /// The family of Play slot `slot`: the first slots play every family once, in order; the others
    /// mostly clean, else a family drawn by the slot's own random stream.
    static func family(ofSlot slot: Int, _ rng: inout SeededRandom) -> PlayFamily {
        let all = PlayFamily.allCases.filter { !withheld.contains($0) }
        if slot < all.count { return all[slot] }
        if rng.chance(0.7) { return .clean }
        return rng.pick(all.filter { $0 != .clean && $0 != .badRows })
    }

    /// Families no player plays (none: every family's expected rows are the night's).
    static let withheld: Set<PlayFamily> = []
}
