// productsv2 and orders.batchget over HTTP: what the simulator says parses with PlayStore's own
// readers and says what the truth holds; Google's 404, 410 and whole-call failures.

import Foundation
import PlaySimulator
import PlayStore
import Reconciliation
import Testing

@Suite("Google Play simulator: productsv2 and orders")
struct PlayPurchaseTests {
    @Test("a purchased purchase parses and matches the truth")
    func purchased() throws {
        let w = try PlayWorld()
        let r = try w.get(PlayWorld.purchasePath("tok-several"))
        #expect(r.status == 200)
        #expect(r.headers["content-type"]?.hasPrefix("application/json") == true)
        let p = try PlayPurchase.read(r.body).get()
        let truth = PlayWorld.several
        #expect(p.orderID == truth.orderID)
        #expect(p.state == .purchased)
        #expect(p.acknowledgement == .acknowledged)
        #expect(p.completionTime == truth.completionTimeMs)
        #expect(p.regionCode == "DE")
        #expect(p.isTest == false)
        #expect(
            p.lineItems == [
                .init(
                    productID: "coins_500", quantity: 3, refundableQuantity: 1,
                    consumptionState: "CONSUMPTION_STATE_YET_TO_BE_CONSUMED")
            ])
        let bought = try PlayPurchase.read(try w.get(PlayWorld.purchasePath("tok-bought-1")).body).get()
        #expect(bought.obfuscatedAccountID == "acct-1")
        #expect(bought.lineItems.first?.quantity == 1)
    }

    @Test("a test purchase still pending: no order id, no completion time, not acknowledged")
    func pendingTest() throws {
        let w = try PlayWorld()
        let r = try w.get(PlayWorld.purchasePath("tok-pending-test"))
        #expect(r.status == 200)
        let json = try #require(jsonObject(r.body))
        #expect(json["orderId"] == nil)
        #expect(json["purchaseCompletionTime"] == nil)
        #expect((json["testPurchaseContext"] as? [String: Any])?["fopType"] as? String == "TEST")
        let p = try PlayPurchase.read(r.body).get()
        #expect(p.isTest)
        #expect(p.state == .pending)
        #expect(p.orderID == nil)
        #expect(p.completionTime == nil)
        #expect(p.acknowledgement == .pending)
        #expect(p.lineItems.first?.quantity == 2)
        #expect(p.obfuscatedAccountID == nil)
        let bought = try #require(jsonObject(try w.get(PlayWorld.purchasePath("tok-bought-1")).body))
        #expect(bought["testPurchaseContext"] == nil)
        #expect((bought["purchaseCompletionTime"] as? String)?.hasSuffix("Z") == true)
    }

    @Test("an unknown token is 404, another app's token too, a gone one 410")
    func notFoundAndGone() throws {
        let w = try PlayWorld { $0.goneTokens = ["tok-gone"] }
        let unknown = try w.get(PlayWorld.purchasePath("tok-never-sold"))
        #expect(unknown.status == 404)
        let error = try #require(jsonObject(unknown.body)?["error"] as? [String: Any])
        #expect(error["message"] as? String == "The purchase token was not found.")
        let detail = try #require((error["errors"] as? [[String: Any]])?.first)
        #expect(detail["reason"] as? String == "purchaseTokenNotFound")
        #expect(detail["location"] as? String == "token")
        #expect(detail["locationType"] as? String == "parameter")
        #expect(try w.get(PlayWorld.purchasePath("tok-other-app")).status == 404)
        let gone = try w.get(PlayWorld.purchasePath("tok-gone"))
        #expect(gone.status == 410)
        let goneDetail = (jsonObject(gone.body)?["error"] as? [String: Any])?["errors"] as? [[String: Any]]
        #expect(goneDetail?.first?["reason"] as? String == "purchaseTokenNoLongerValid")
        #expect(
            w.service.calls.filter { $0.endpoint == .productPurchase }.map(\.ids) == [
                ["tok-never-sold"], ["tok-other-app"], ["tok-gone"],
            ])
    }

    @Test("batchGet: the orders asked, their money exactly")
    func orders() throws {
        let w = try PlayWorld()
        let ids = ["GPA.1111-2222-3333-55555", "GPA.1111-2222-3333-44444"]
        let r = try w.get(PlayWorld.ordersPath(ids))
        #expect(r.status == 200)
        let orders = try PlayOrder.readBatch(r.body).get()
        #expect(orders.map(\.orderID) == ids)
        #expect(orders.map(\.purchaseToken) == ["tok-several", "tok-bought-1"])
        #expect(orders.map(\.state) == ["PARTIALLY_REFUNDED", "PROCESSED"])
        #expect(orders[0].total?.decimal == "12.99")
        #expect(orders[0].total?.currency == "EUR")
        #expect(orders[0].tax?.decimal == "2.07")
        #expect(orders[0].developerRevenue?.decimal == "9.05")
        #expect(orders[1].total?.decimal == "0.99")
        #expect(orders[1].developerRevenue?.decimal == "0.69")
        let json = try #require(jsonObject(r.body)?["orders"] as? [[String: Any]])
        #expect((json[0]["total"] as? [String: Any])?["units"] as? String == "12")
    }

    @Test("batchGet fails whole for one unknown id or another app's; refuses 0, repeated or 1001 ids")
    func ordersRefused() throws {
        let w = try PlayWorld()
        let good = "GPA.1111-2222-3333-44444"
        let oneUnknown = try w.get(PlayWorld.ordersPath([good, "GPA.0000-0000-0000-00000"]))
        #expect(oneUnknown.status == 404)
        #expect(jsonObject(oneUnknown.body)?["orders"] == nil)
        #expect(try w.get(PlayWorld.ordersPath([good, "GPA.9999-8888-7777-66666"])).status == 404)
        #expect(try w.get(PlayWorld.ordersPath([])).status == 400)
        #expect(try w.get(PlayWorld.ordersPath([good, good])).status == 400)
        let many = (0...1000).map { "GPA.\($0)" }
        let tooMany = try w.get(PlayWorld.ordersPath(many))
        #expect(tooMany.status == 400)
        #expect((jsonObject(tooMany.body)?["error"] as? [String: Any])?["status"] as? String == "INVALID_ARGUMENT")
        #expect(try w.get(PlayWorld.ordersPath([good])).status == 200)
    }
}
