// Google's 200 bodies, written as the Play Developer API's reference names them and as proto3's
// JSON mapping writes them: an int64 (`*Millis`, Money's `units`) as a string of digits, an
// int32 as a number, an enum as its name. PlayStore's parsers read each one (the tests hold them
// to it).

import Reconciliation
import StrictJSON

enum PlayBodies {
    /// ProductPurchaseV2 of one purchase.
    static func productPurchase(_ p: PlayTruth.Purchase) -> [UInt8] {
        var w = JSONWriter(capacity: 512)
        w.beginObject()
        w.field("kind", "androidpublisher#productPurchaseV2")
        w.key("productLineItem")
        w.beginArray()
        w.beginObject()
        w.field("productId", p.productID)
        w.key("productOfferDetails")
        w.beginObject()
        w.field("quantity", p.quantity)
        // proto3 may leave out a zero; PlayStore reads an absent refundableQuantity as "not said",
        // so the simulator says it always.
        w.field("refundableQuantity", p.refundableQuantity)
        w.field("consumptionState", p.consumptionState)
        w.endObject()
        w.endObject()
        w.endArray()
        w.key("purchaseStateContext")
        w.beginObject()
        w.field("purchaseState", p.state.rawValue)
        w.endObject()
        if p.isTest {
            // TestPurchaseContext's fopType values are unconfirmed: "TEST" stands for them.
            w.key("testPurchaseContext")
            w.beginObject()
            w.field("fopType", "TEST")
            w.endObject()
        }
        w.field("orderId", p.orderID)
        w.field("obfuscatedExternalAccountId", p.obfuscatedAccountID)
        w.field("regionCode", p.regionCode)
        w.field("purchaseCompletionTime", p.completionTimeMs.map(UTC.timestampMillis))
        w.field(
            "acknowledgementState",
            p.acknowledged ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING")
        w.endObject()
        return w.bytes
    }

    /// BatchGetOrdersResponse: the orders in the order asked.
    static func orders(_ purchases: [PlayTruth.Purchase]) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + purchases.count * 400)
        w.beginObject()
        w.key("orders")
        w.beginArray()
        for p in purchases {
            w.beginObject()
            w.field("orderId", p.orderID)
            w.field("purchaseToken", p.purchaseToken)
            w.field("state", p.orderState)
            money(&w, "total", p.total)
            money(&w, "tax", p.tax)
            money(&w, "developerRevenueInBuyerCurrency", p.developerRevenue)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }

    private static func money(_ w: inout JSONWriter, _ name: StaticString, _ m: PlayTruth.Money) {
        w.key(name)
        w.beginObject()
        w.field("currencyCode", m.currency)
        w.field("units", String(m.units))
        w.field("nanos", Int64(m.nanos))
        w.endObject()
    }

    /// VoidedPurchasesListResponse: one page, `nextPageToken` when more remain.
    static func voidedPage(
        _ records: ArraySlice<PlayTruth.Voided>, total: Int, perPage: Int, startIndex: Int, next: String?,
        stringEnums: Bool
    ) -> [UInt8] {
        var w = JSONWriter(capacity: 128 + records.count * 300)
        w.beginObject()
        w.key("pageInfo")
        w.beginObject()
        w.field("totalResults", total)
        w.field("resultPerPage", perPage)
        w.field("startIndex", startIndex)
        w.endObject()
        if let next {
            w.key("tokenPagination")
            w.beginObject()
            w.field("nextPageToken", next)
            w.endObject()
        }
        // proto3 leaves out an empty list.
        if !records.isEmpty {
            w.key("voidedPurchases")
            w.beginArray()
            for v in records {
                w.beginObject()
                w.field("kind", "androidpublisher#voidedPurchase")
                w.field("purchaseToken", v.purchaseToken)
                w.field("purchaseTimeMillis", String(v.purchaseTimeMs))
                w.field("voidedTimeMillis", String(v.voidedTimeMs))
                w.field("orderId", v.orderID)
                if stringEnums {
                    w.field("voidedSource", String(v.source))
                    w.field("voidedReason", String(v.reason))
                } else {
                    w.field("voidedSource", v.source)
                    w.field("voidedReason", v.reason)
                }
                w.field("voidedQuantity", v.voidedQuantity)
                w.endObject()
            }
            w.endArray()
        }
        w.endObject()
        return w.bytes
    }
}
