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

    /// A decimal in currency units: 2 decimals when the milliunits are whole hundredths, else 3
    /// (`4.99`, `160.00`, `2.495`). No thousands separator, `-` for a negative amount.
    public var text: String { Money.text(milliunits) }

    public static func text(_ milliunits: Int64) -> String {
        let negative = milliunits < 0
        let m = milliunits.magnitude
        let whole = m / 1000, fraction = m % 1000
        var digits = String(fraction)
        digits = String(repeating: "0", count: 3 - digits.count) + digits
        if fraction % 10 == 0 { digits.removeLast() }
        return (negative ? "-" : "") + String(whole) + "." + digits
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
    public func amount(units: Int, transactionQuantity: Int) -> Money? {
        if let apple {
            return Money(milliunits: Money.scaled(apple.milliunits, Int64(units), Int64(max(1, transactionQuantity))),
                         currency: apple.currency)
        }
        if let listUnit {
            return Money(milliunits: listUnit.milliunits.multipliedReportingOverflow(by: Int64(units)).partialValue,
                         currency: listUnit.currency)
        }
        return nil
    }
}
