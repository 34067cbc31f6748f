// What the generated products cost: the shop's list price (`iap_products.price`, USD, one unit)
// and Apple's price of one unit in each simulated storefront. The USA storefront charges exactly
// the list price, so a row's amount is the same whether the job learned Apple's price or fell back
// to the list price; other storefronts are only given to transactions whose Apple price the job
// certainly learns (verified signed uploads, purchases only the Server API shows), so that the
// expected amount and currency never depend on how the job came to know a transaction.

import Reconciliation

/// The list prices of the generated catalogue, per storefront.
package enum PriceList {
    /// One unit, milliunits, per product (the part after the bundle id) and currency.
    private static let units: [String: (usd: Int64, jpy: Int64, eur: Int64)] = [
        "coins100": (990, 160_000, 1_090),
        "coins500": (4_990, 800_000, 5_490),
        "gems_pack": (9_990, 1_600_000, 10_990),
        "no_ads": (2_990, 480_000, 3_290),
        "level_pack": (1_990, 320_000, 2_190),
        "vip_month": (7_990, 1_200_000, 8_990),
        "vip_week": (2_490, 400_000, 2_790),
        "season_pass": (14_990, 2_400_000, 16_990),
        "legacy_bundle": (19_990, 3_200_000, 21_990),
        "gold": (990, 160_000, 1_090),  // the other app's (Catalog.otherProduct)
    ]

    /// The list price's currency (every product of the generated shop is priced in dollars).
    package static let listCurrency = "USD"

    private static func key(_ productID: String) -> String {
        productID.split(separator: ".").last.map(String.init) ?? productID
    }

    /// One unit at `storefront`, milliunits of its currency; nil for a product without a price.
    package static func unit(_ productID: String, at storefront: SimStorefront) -> Int64? {
        guard let p = units[key(productID)] else { return nil }
        switch storefront.currency {
        case "JPY": return p.jpy
        case "EUR": return p.eur
        default: return p.usd
        }
    }

    /// The shop's list price of one unit (`iap_products.price`), milliunits of USD.
    package static func list(_ productID: String) -> Int64? { unit(productID, at: .usa) }
}

/// Amounts as the reports print them (contract, "Money"): in the currency's ISO 4217 minor units,
/// written here for the generated storefronts' currencies only (the job has the whole table).
package enum MoneyText {
    /// Digits after the point: the yen has none, the dollar and the euro two (ISO 4217).
    package static func decimals(_ currency: String) -> Int { currency == "JPY" ? 0 : 2 }

    /// Non-negative milliunits of `currency`, rounded half up to its minor unit.
    package static func text(_ milliunits: Int64, currency: String) -> String {
        let digits = decimals(currency)
        var scale: Int64 = 1
        for _ in digits..<3 { scale *= 10 }
        let minor = scaled(milliunits, 1, scale)
        var one: Int64 = 1
        for _ in 0..<digits { one *= 10 }
        guard digits > 0 else { return String(minor) }
        let f = String(minor % one)
        return String(minor / one) + "." + String(repeating: "0", count: digits - f.count) + f
    }

    /// `a × numerator / denominator` milliunits of `currency`, rounded once, half up, to its
    /// minor unit (a prorated refund); still milliunits.
    package static func prorated(_ a: Int64, _ numerator: Int64, _ denominator: Int64, currency: String) -> Int64 {
        var scale: Int64 = 1
        for _ in decimals(currency)..<3 { scale *= 10 }
        return scaled(a, numerator, denominator * scale) * scale
    }

    /// `a × numerator / denominator` for non-negative numbers, rounded half away from zero.
    static func scaled(_ a: Int64, _ numerator: Int64, _ denominator: Int64) -> Int64 {
        (a * numerator * 2 + denominator) / (2 * denominator)
    }

    /// `iap_products.price` as COPY text (`0.99`): a plain decimal, three places at most.
    package static func sqlNumeric(_ milliunits: Int64) -> String {
        let f = String(milliunits % 1000)
        return String(milliunits / 1000) + "." + String(repeating: "0", count: 3 - f.count) + f
    }
}
