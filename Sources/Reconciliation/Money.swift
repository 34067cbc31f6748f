// Money in the reports (contract §6, docs/rules.md "Money"): exact integers of milliunits of one
// currency, never floating point. Apple signs a transaction's `price` in milliunits for the whole
// transaction (quantity included); the shop's optional list price (`iap_products.price`) is one
// unit's. Apple's price wins when it is known.

/// An amount in milliunits of `currency` (ISO 4217).
public struct Money: Sendable, Equatable, Hashable {
    public var milliunits: Int64
    public var currency: String

    public init(milliunits: Int64, currency: String) {
        self.milliunits = milliunits
        self.currency = currency
    }

    /// A decimal in currency units with the currency's ISO 4217 minor units (`4.99` USD, `160`
    /// JPY, `1.250` KWD), rounded half away from zero to them. No thousands separator, `-` for a
    /// negative amount.
    public var text: String { Money.text(milliunits, currency: currency) }

    public static func text(_ milliunits: Int64, currency: String) -> String {
        let digits = Currencies.minorUnits(currency)
        let step = Currencies.milliunitsPerMinorUnit(currency)
        let rounded = scaled(milliunits, 1, step)
        let negative = rounded < 0
        let m = rounded.magnitude
        let perUnit = UInt64(1000 / step)
        let whole = m / perUnit, fraction = m % perUnit
        guard digits > 0 else { return (negative ? "-" : "") + String(whole) }
        let f = String(fraction)
        return (negative ? "-" : "") + String(whole) + "." + String(repeating: "0", count: digits - f.count) + f
    }

    /// `milliunits` rounded half away from zero to the currency's minor unit (still milliunits).
    public static func rounded(_ milliunits: Int64, currency: String) -> Int64 {
        let step = Currencies.milliunitsPerMinorUnit(currency)
        return scaled(milliunits, 1, step) * step
    }

    /// Reads `text` (what `text` writes, or any plain decimal with at most 3 decimals); nil otherwise.
    public static func milliunits(_ text: Substring) -> Int64? {
        var s = text
        var negative = false
        if s.first == "-" { negative = true; s = s.dropFirst() }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].utf8.count <= 15,
              parts[0].utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let whole = Int64(parts[0]) else { return nil }
        var fraction: Int64 = 0
        if parts.count == 2 {
            let f = parts[1]
            guard (1...3).contains(f.utf8.count), f.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            fraction = Int64(f)! * [100, 10, 1][f.utf8.count - 1]
        }
        let value = whole * 1000 + fraction
        return negative ? -value : value
    }

    /// `a × numerator / denominator`, rounded half away from zero (exact in 128 bits).
    public static func scaled(_ a: Int64, _ numerator: Int64, _ denominator: Int64) -> Int64 {
        guard denominator != 0 else { return 0 }
        let product = a.multipliedFullWidth(by: numerator)
        let wide = (Int128(product.high) << 64) | Int128(product.low)
        let d = Int128(denominator)
        let (quotient, r) = wide.quotientAndRemainder(dividingBy: d)
        var q = quotient
        if r.magnitude * 2 >= d.magnitude { q += (wide < 0) != (d < 0) ? -1 : 1 }
        return Int64(clamping: q)
    }
}

/// What the job knows of a transaction's price.
public struct PriceFacts: Sendable, Equatable {
    /// Apple's signed price and currency: the whole transaction, quantity included.
    public var apple: Money?
    /// The shop's list price of one unit (`iap_products.price`, `currency`).
    public var listUnit: Money?

    public init(apple: Money? = nil, listUnit: Money? = nil) {
        self.apple = apple
        self.listUnit = listUnit
    }

    /// The amount of `units` of a transaction of `transactionQuantity` units: Apple's price
    /// prorated by units when Apple signed one, else the list price × units; nil when neither is known.
    /// A prorated amount is rounded once, half away from zero, to the currency's minor unit.
    public func amount(units: Int, transactionQuantity: Int) -> Money? {
        if let apple {
            let step = Currencies.milliunitsPerMinorUnit(apple.currency)
            let minor = Money.scaled(apple.milliunits, Int64(units), Int64(max(1, transactionQuantity)) * step)
            return Money(milliunits: minor.multipliedReportingOverflow(by: step).partialValue, currency: apple.currency)
        }
        if let listUnit {
            return Money(milliunits: listUnit.milliunits.multipliedReportingOverflow(by: Int64(units)).partialValue,
                         currency: listUnit.currency)
        }
        return nil
    }
}

/// ISO 4217 minor units (the digits after the decimal point) of the currencies that have other
/// than two: ISO 4217 "List one: Currency, fund and precious metal codes" (SIX Financial
/// Information, the maintenance agency), column "Minor unit". Every other code, and a code that
/// is not ISO 4217, gets two. Codes with four (CLF, UYW: funds, no storefront sells in them)
/// are kept at three, the milliunits the job counts in. The job schema's `minor_units` function
/// (migration 15) holds the same lists; a test compares the two.
public enum Currencies {
    public static let zeroDecimals: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    public static let threeDecimals: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND", "CLF", "UYW"]

    /// Digits after the decimal point for `currency` (its ISO 4217 code, upper case).
    public static func minorUnits(_ currency: String) -> Int {
        if zeroDecimals.contains(currency) { return 0 }
        if threeDecimals.contains(currency) { return 3 }
        return 2
    }

    /// Milliunits in one minor unit: 1000 (no decimals), 10 (two), 1 (three).
    public static func milliunitsPerMinorUnit(_ currency: String) -> Int64 {
        [1000, 100, 10, 1][minorUnits(currency)]
    }
}
