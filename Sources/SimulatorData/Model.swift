// The rows the generator writes, the product catalogue, ids and the seeded random source.

import AppStoreSimulator
import Reconciliation

/// SplitMix64: small, fast, reproducible on every platform.
public struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func int(_ range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &self) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
}

struct ProductRow {
    var productID: String
    var productType: String
    var bundleID: String?

    /// `iap_products.price` and `currency`: the list price of one unit.
    var listPrice: Int64? { PriceList.list(productID) }
    var currency: String? { listPrice == nil ? nil : PriceList.listCurrency }
}

struct OrderRow {
    var orderID: String
    var userID: String?
    var productID: String
    var quantity: Int
    var status: String
    var transactionID: String?
    var createdAt: Int64
}

struct ReceiptRow {
    var receiptID: String
    var userID: String?
    var orderID: String?
    var transactionID: String?
    /// `receipt_data` when it is not a simulator token (garbage, not base64); nil with `sim` nil = NULL.
    var rawData: String?
    var submittedAt: Int64
    var verifyStatus: Int?
    /// The token's content when `receipt_data` is a simulator token.
    var sim: SimReceipt?
    /// A StoreKit 2 upload: `receipt_data` is the signed transaction of `sim`'s one transaction.
    var signed: SignedUpload?

    /// `receipt_data` as uploaded (the token or the JWS is only made by the pass that writes it);
    /// a signed transaction is signed with the price of its storefront (`UserData.storefronts`).
    func receiptData(_ signer: UploadSigner?, storefront: (String) -> SimStorefront) throws -> String? {
        if let signed, let sim, let signer {
            return try signer.jws(sim, kind: signed, signedAt: submittedAt - 1000, storefront: storefront(sim.txs[0].tid))
        }
        if let sim, let receipt = try signer?.appReceipt(sim) { return receipt }
        return sim?.token() ?? rawData
    }
}

/// How a StoreKit 2 upload was made.
enum SignedUpload: Sendable {
    /// Signed by the generator's PKI, as Apple signs.
    case genuine
    /// Signed, then its payload changed (quantity raised): the signature no longer matches.
    case tampered
    /// Signed by a PKI whose root the job does not trust.
    case unknownRoot
}

struct GrantRow {
    var grantID: String
    var userID: String?
    var orderID: String?
    var productID: String
    var transactionID: String
    var originalTransactionID: String?
    var quantity: Int
    var grantedAt: Int64
    var revokedAt: Int64?
}

struct RefundRow {
    var transactionID: String
    var refund: SimRefund
}

/// The products every seeded database has (ids prefixed with the bundle id).
struct Catalog {
    let bundle: String
    var coins100: String { bundle + ".coins100" }
    var coins500: String { bundle + ".coins500" }
    var gems: String { bundle + ".gems_pack" }
    var noAds: String { bundle + ".no_ads" }
    var levelPack: String { bundle + ".level_pack" }
    var vipMonth: String { bundle + ".vip_month" }
    var vipWeek: String { bundle + ".vip_week" }
    var seasonPass: String { bundle + ".season_pass" }
    /// In `iap_products` only with --bad-rows: a product type outside the four.
    var legacyBundle: String { bundle + ".legacy_bundle" }
    /// Never in `iap_products`.
    var unknown: String { bundle + ".unknown_item" }
    /// The other app whose receipts fraudsters replay (never in `iap_products`).
    static let otherBundle = "com.other.app"
    static let otherProduct = "com.other.app.gold"

    var consumables: [String] { [coins100, coins500, gems] }
    var nonConsumables: [String] { [noAds, levelPack] }

    var products: [ProductRow] {
        [
            ProductRow(productID: coins100, productType: "consumable", bundleID: bundle),
            ProductRow(productID: coins500, productType: "consumable", bundleID: bundle),
            ProductRow(productID: gems, productType: "consumable", bundleID: nil),
            ProductRow(productID: noAds, productType: "non_consumable", bundleID: bundle),
            ProductRow(productID: levelPack, productType: "non_consumable", bundleID: bundle),
            ProductRow(productID: vipMonth, productType: "auto_renewable", bundleID: bundle),
            ProductRow(productID: vipWeek, productType: "auto_renewable", bundleID: bundle),
            ProductRow(productID: seasonPass, productType: "non_renewing", bundleID: bundle),
        ]
    }

    /// One of this app's products (in `iap_products` or not: its id starts with the bundle id and a dot).
    func owns(_ productID: String) -> Bool {
        productID.hasPrefix(bundle + ".") && !productID.dropFirst(bundle.count + 1).contains(".")
    }

    func type(of productID: String) -> ProductType {
        if productID == noAds || productID == levelPack { return .nonConsumable }
        if productID == vipMonth || productID == vipWeek { return .autoRenewable }
        if productID == seasonPass { return .nonRenewing }
        return .consumable
    }
}

/// Ids: zero-padded so that they sort well. Every id is derived from the user slot and a
/// per-user counter, so a user's data never depends on another user's.
enum IDs {
    static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
    static func user(_ u: Int) -> String { "U" + pad(u, 9) }
    static func order(_ u: Int, _ k: Int) -> String { "O" + pad(u, 9) + pad(k, 2) }
    static func receipt(_ u: Int, _ k: Int) -> String { "R" + pad(u, 9) + pad(k, 2) }
    static func grant(_ u: Int, _ k: Int) -> String { "G" + pad(u, 9) + pad(k, 2) }
    /// 16-digit numeric like Apple's: 1000000 + 9 digits.
    static func transaction(_ u: Int, _ k: Int) -> String { "1000000" + pad(u * 20 + k, 9) }
    static func webOrderLine(_ u: Int, _ k: Int) -> String { "1000001" + pad(u * 20 + k, 9) }
}
