// `orders.batchget`: the money of up to 1,000 orders. Google's Money is a currency code, whole
// `units` (an int64, as a string) and `nanos` (billionths, the same sign); kept exactly, as
// Google's units and nanos, until the contract's one rounding rule.

import Reconciliation
import StrictJSON

/// An amount as Google gives it.
public struct PlayMoney: Sendable, Equatable {
    /// ISO 4217, three capital letters.
    public var currency: String
    public var units: Int64
    /// -999,999,999…999,999,999, of the sign of `units` (or either sign when `units` is 0).
    public var nanos: Int32

    /// The exact decimal: `12.99`, `-0.5`, `3` (no trailing zeros, no exponent).
    public var decimal: String {
        let negative = units < 0 || nanos < 0
        var text = (negative ? "-" : "") + String(units.magnitude)
        var fraction = String(nanos.magnitude)
        guard nanos != 0 else { return text }
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        text += "." + fraction
        return text
    }

    fileprivate static func read(_ o: PlayObject?) throws(PlayGarbage) -> PlayMoney? {
        guard let o else { return nil }
        let currency = try o.required("currencyCode", limit: 3, allowed: { $0 >= 65 && $0 <= 90 })
        guard currency.utf8.count == 3 else { throw PlayGarbage("\(o.path).currencyCode is not three capital letters") }
        let units = try o.integer("units", in: -999_999_999_999_999_999...999_999_999_999_999_999) ?? 0
        let nanos = try o.integer("nanos", in: -999_999_999...999_999_999) ?? 0
        guard !(units > 0 && nanos < 0), !(units < 0 && nanos > 0) else {
            throw PlayGarbage("\(o.path) has units and nanos of opposite signs")
        }
        return PlayMoney(currency: currency, units: units, nanos: Int32(nanos))
    }
}

/// The parts of an order the job keeps.
public struct PlayOrder: Sendable, Equatable {
    public var orderID: String
    public var purchaseToken: String?
    /// Google's `state` name (its values are unconfirmed; kept as said).
    public var state: String?
    public var total: PlayMoney?
    public var tax: PlayMoney?
    /// `developerRevenueInBuyerCurrency`: what Google pays the developer, the reports' `proceeds`.
    public var developerRevenue: PlayMoney?

    /// Reads a 200 body of batchget: `orders[]` (the list's name is unconfirmed by Google; a body
    /// without it has no orders, and the caller counts each id asked as unanswered).
    public static func readBatch(_ body: [UInt8]) -> Result<[PlayOrder], PlayGarbage> {
        PlayObject.reading(body) { (o) throws(PlayGarbage) -> [PlayOrder] in
            var out: [PlayOrder] = []
            var seen: Set<String> = []
            for order in try o.objects("orders", limit: 1000) {
                let id = try order.required("orderId", limit: 64, allowed: PlayCharacters.isOrderCharacter)
                guard seen.insert(id).inserted else { throw PlayGarbage("order \(id) is in the answer twice") }
                out.append(
                    PlayOrder(
                        orderID: id,
                        purchaseToken: try order.string(
                            "purchaseToken", limit: PlayPaths.tokenLimit, allowed: PlayCharacters.isTokenCharacter),
                        state: try order.string("state", limit: 64, allowed: { PlayCharacters.isAlphanumeric($0) || $0 == 95 }),
                        total: try PlayMoney.read(order.object("total")), tax: try PlayMoney.read(order.object("tax")),
                        developerRevenue: try PlayMoney.read(order.object("developerRevenueInBuyerCurrency"))))
            }
            return out
        }
    }
}
