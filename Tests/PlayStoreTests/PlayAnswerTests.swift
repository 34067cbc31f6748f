import PlayStore
import Reconciliation
import Testing

/// A productsv2 body as Google's reference shapes it, with `replace` applied to its text.
func purchaseBody(_ replace: [(String, String)] = []) -> [UInt8] {
    var text = """
        {"kind": "androidpublisher#productPurchaseV2",
         "productLineItem": [{"productId": "gems_100",
           "productOfferDetails": {"quantity": 3, "refundableQuantity": 3, "consumptionState": "CONSUMPTION_STATE_YET_TO_BE_CONSUMED"}}],
         "purchaseStateContext": {"purchaseState": "PURCHASED"},
         "orderId": "GPA.3312-4455-6677-88990",
         "obfuscatedExternalAccountId": "O-000123",
         "regionCode": "JP",
         "purchaseCompletionTime": "2026-11-20T08:15:00.123456789Z",
         "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING"}
        """
    for (from, to) in replace {
        precondition(text.contains(from), "the body has no \(from)")
        text = text.replacingOccurrences(of: from, with: to)
    }
    return Array(text.utf8)
}

@Suite("Google Play answers, read strictly")
struct PlayAnswerTests {
    @Test("a purchase: every field the job keeps")
    func purchase() throws {
        let p = try PlayPurchase.read(purchaseBody()).get()
        #expect(p.orderID == "GPA.3312-4455-6677-88990")
        #expect(
            p.lineItems == [
                PlayPurchase.LineItem(
                    productID: "gems_100", quantity: 3, refundableQuantity: 3,
                    consumptionState: "CONSUMPTION_STATE_YET_TO_BE_CONSUMED")
            ])
        #expect(p.state == .purchased && p.acknowledgement == .pending && !p.isTest)
        #expect(p.completionTime == UTC.millis(year: 2026, month: 11, day: 20, hour: 8, minute: 15) + 123)
        #expect(p.regionCode == "JP" && p.storefront == "JPN")
        #expect(p.obfuscatedAccountID == "O-000123" && p.obfuscatedProfileID == nil)
        // A test purchase without an order; a pending one without a completion time; an absent
        // quantity is one unit; a null field is an absent one.
        let test = try PlayPurchase.read(
            purchaseBody([
                (#""orderId": "GPA.3312-4455-6677-88990","#, #""orderId": null, "testPurchaseContext": {"fopType": "TEST"},"#),
                (#""quantity": 3, "refundableQuantity": 3, "#, ""),
            ])
        ).get()
        #expect(test.orderID == nil && test.isTest && test.lineItems[0].quantity == 1 && test.lineItems[0].refundableQuantity == nil)
        let pending = try PlayPurchase.read(
            purchaseBody([
                (#""PURCHASED""#, #""PENDING""#), (#""purchaseCompletionTime": "2026-11-20T08:15:00.123456789Z","#, ""),
            ])
        ).get()
        #expect(pending.state == .pending && pending.completionTime == nil)
        // An offset is read as the instant it names.
        let offset = try PlayPurchase.read(purchaseBody([("08:15:00.123456789Z", "17:15:00+09:00")])).get()
        #expect(offset.completionTime == UTC.millis(year: 2026, month: 11, day: 20, hour: 8, minute: 15))
    }

    @Test("a purchase body that fails a check is garbage, and says where")
    func hostilePurchases() {
        let cases: [(String, [(String, String)], String)] = [
            ("more refundable than bought", [(#""refundableQuantity": 3"#, #""refundableQuantity": 4"#)], "more than its quantity"),
            ("a negative quantity", [(#""quantity": 3"#, #""quantity": -3"#)], "quantity"),
            ("a quantity in exponent form", [(#""quantity": 3"#, #""quantity": 3e0"#)], "quantity"),
            ("a huge quantity", [(#""quantity": 3"#, #""quantity": 99999999999999999999"#)], "quantity"),
            ("a fractional quantity", [(#""quantity": 3"#, #""quantity": 2.5"#)], "quantity"),
            ("a quantity of zero", [(#""quantity": 3"#, #""quantity": 0"#)], "out of range"),
            ("an unknown state", [(#""PURCHASED""#, #""REFUNDED""#)], "purchaseState"),
            ("an unspecified state", [(#""PURCHASED""#, #""PURCHASE_STATE_UNSPECIFIED""#)], "unspecified"),
            ("no state", [(#""purchaseStateContext": {"purchaseState": "PURCHASED"},"#, "")], "purchaseState is missing"),
            (
                "purchased without a completion time", [(#""purchaseCompletionTime": "2026-11-20T08:15:00.123456789Z","#, "")],
                "purchaseCompletionTime"
            ),
            ("a time without a zone", [("08:15:00.123456789Z", "08:15:00")], "RFC 3339"),
            ("a date that does not exist", [("2026-11-20T", "2026-02-30T")], "RFC 3339"),
            ("a time as a number", [(#""2026-11-20T08:15:00.123456789Z""#, "1790000000000")], "not a string"),
            ("a three-letter region", [(#""JP""#, #""JPN""#)], "regionCode"),
            ("a lower-case region", [(#""JP""#, #""jp""#)], "regionCode"),
            ("no line item", [(#""productLineItem": [{"#, #""productLineItem": [], "x": [{"#)], "productLineItem"),
            ("a product id with a slash", [("gems_100", "gems/../100")], "productId"),
            ("a product id as a number", [(#""gems_100""#, "100")], "productId"),
            ("an order id with a space", [("GPA.3312-4455", "GPA 3312-4455")], "orderId"),
            ("an account id over 64", [("O-000123", String(repeating: "a", count: 65))], "obfuscatedExternalAccountId"),
            ("another kind", [("productPurchaseV2", "productPurchase")], "kind"),
            ("a repeated key", [(#""regionCode": "JP","#, #""regionCode": "JP", "regionCode": "US","#)], "duplicate key"),
            ("an unknown acknowledgement", [("ACKNOWLEDGEMENT_STATE_PENDING", "ACKED")], "acknowledgementState"),
            ("a line item that is a string", [(#"[{"productId""#, #"["x", {"productId""#)], "not an object"),
        ]
        for (name, replace, expected) in cases {
            switch PlayPurchase.read(purchaseBody(replace)) {
            case .success(let p): Issue.record("\(name): believed \(p)")
            case .failure(let garbage): #expect(garbage.problem.contains(expected), "\(name): \(garbage.problem)")
            }
        }
        let body = purchaseBody()
        for (name, bytes) in [
            ("truncated", Array(body.prefix(body.count / 2))), ("invalid UTF-8", body.dropLast() + [0xC3, 0x28, 0x7D]),
            ("trailing", body + Array(" {}".utf8)), ("empty", []), ("null", Array("null".utf8)),
            ("an array", Array("[]".utf8)),
        ] {
            if case .success = PlayPurchase.read(bytes) { Issue.record("\(name): believed") }
        }
    }

    @Test("voided purchases: numbers or strings for source and reason, pages, partial refunds")
    func voided() throws {
        let body = Array(
            """
            {"pageInfo": {"totalResults": 2, "resultPerPage": 1000},
             "tokenPagination": {"nextPageToken": "next-1"},
             "voidedPurchases": [
              {"kind": "androidpublisher#voidedPurchase", "purchaseToken": "tok.A-1", "purchaseTimeMillis": "1790000000000",
               "voidedTimeMillis": "1790086400000", "orderId": "GPA.1111-2222-3333-44444", "voidedSource": "0", "voidedReason": "7"},
              {"purchaseToken": "tok.B-2", "purchaseTimeMillis": 1790000000000, "voidedTimeMillis": "1790086400001",
               "voidedSource": 2, "voidedReason": 8, "voidedQuantity": 2}]}
            """.utf8)
        let page = try PlayVoidedPage.read(body).get()
        #expect(page.nextPageToken == "next-1")
        #expect(page.voided.count == 2)
        #expect(page.voided[0].reasonName == "chargeback" && page.voided[0].sourceName == "user" && page.voided[0].voidedQuantity == nil)
        #expect(page.voided[1].reasonName == "unacknowledged_purchase" && page.voided[1].sourceName == "google")
        #expect(page.voided[1].voidedQuantity == 2 && page.voided[1].orderID == nil)
        // A reason or a source Google adds later is kept by its number: one new value must not stop
        // the sweep (the list keeps 30 days).
        let newer = String(decoding: body, as: UTF8.self).replacingOccurrences(of: #""voidedReason": "7""#, with: #""voidedReason": "9""#)
            .replacingOccurrences(of: #""voidedSource": 2"#, with: #""voidedSource": 3"#)
        let read = try PlayVoidedPage.read(Array(newer.utf8)).get()
        #expect(read.voided[0].reasonName == "reason_9" && read.voided[1].sourceName == "source_3")
        // The last page: no token; an empty list.
        #expect(try PlayVoidedPage.read(Array("{}".utf8)).get() == PlayVoidedPage(voided: [], nextPageToken: nil))
        let hostile: [(String, String)] = [
            (#""voidedReason": "7""#, #""voidedReason": "1001""#), (#""voidedReason": "7""#, #""voidedReason": -1"#),
            (#""voidedSource": 2"#, #""voidedSource": 1001"#), (#""voidedQuantity": 2"#, #""voidedQuantity": 0"#),
            (#""voidedReason": "7""#, #""voidedReason": 7.0"#),
            (#""purchaseTimeMillis": 1790000000000"#, #""purchaseTimeMillis": "-1""#),
            (#""purchaseTimeMillis": 1790000000000"#, #""purchaseTimeMillis": "99999999999999999""#),
            (#""purchaseToken": "tok.B-2""#, #""purchaseToken": "tok/B 2""#),
            (#""purchaseToken": "tok.B-2""#, #""purchaseToken": null"#),
            (#""nextPageToken": "next-1""#, #""nextPageToken": 1"#),
            (#""voidedTimeMillis": "1790086400001","#, ""),
        ]
        let text = String(decoding: body, as: UTF8.self)
        for (from, to) in hostile {
            #expect(text.contains(from), "\(from)")
            if case .success = PlayVoidedPage.read(Array(text.replacingOccurrences(of: from, with: to).utf8)) {
                Issue.record("believed with \(to)")
            }
        }
    }

    @Test("orders: Google's money exact, as units and nanos")
    func orders() throws {
        let body = Array(
            """
            {"orders": [{"orderId": "GPA.1", "purchaseToken": "tok", "state": "PROCESSED",
              "total": {"currencyCode": "JPY", "units": "480"},
              "tax": {"currencyCode": "EUR", "units": "-1", "nanos": -500000000},
              "developerRevenueInBuyerCurrency": {"currencyCode": "USD", "units": "12", "nanos": 990000000}},
             {"orderId": "GPA.2", "total": {"currencyCode": "USD", "nanos": 5}}]}
            """.utf8)
        let orders = try PlayOrder.readBatch(body).get()
        #expect(orders.map(\.orderID) == ["GPA.1", "GPA.2"])
        #expect(orders[0].total?.decimal == "480" && orders[0].tax?.decimal == "-1.5" && orders[0].developerRevenue?.decimal == "12.99")
        #expect(orders[1].total?.decimal == "0.000000005" && orders[1].tax == nil)
        #expect(try PlayOrder.readBatch(Array("{}".utf8)).get().isEmpty)
        let text = String(decoding: body, as: UTF8.self)
        for (from, to) in [
            (#""nanos": -500000000"#, #""nanos": 500000000"#), (#""nanos": 990000000"#, #""nanos": 1000000000"#),
            (#""currencyCode": "JPY""#, #""currencyCode": "jpy""#), (#""currencyCode": "JPY""#, #""currencyCode": "JPYY""#),
            (#""units": "480""#, #""units": "4.8e2""#), (#""units": "480""#, #""units": "9999999999999999999""#),
            (#""orderId": "GPA.2""#, #""orderId": "GPA.1""#), (#""orderId": "GPA.2", "#, ""),
        ] {
            #expect(text.contains(from), "\(from)")
            if case .success = PlayOrder.readBatch(Array(text.replacingOccurrences(of: from, with: to).utf8)) {
                Issue.record("believed with \(to)")
            }
        }
    }

    @Test("paths are built only from ids that pass their checks")
    func paths() {
        #expect(
            PlayPaths.productPurchase(package: "com.example.game", token: "abc.DEF-12_3")
                == "/androidpublisher/v3/applications/com.example.game/purchases/productsv2/tokens/abc.DEF-12_3")
        for token in ["", "a/b", "a%2Fb", "a b", "a?x=1", "é", String(repeating: "a", count: 2049)] {
            #expect(PlayPaths.productPurchase(package: "com.example.game", token: token) == nil, "\(token.prefix(10))")
        }
        for package in [
            "", "game", "com..game", "com.1game", "com.example/game", "com.example.game.", String(repeating: "a.b", count: 100),
        ] {
            #expect(!PlayPaths.isPackageName(package), "\(package.prefix(10))")
        }
        #expect(
            PlayPaths.batchGetOrders(package: "com.example.game", orderIDs: ["GPA.1", "GPA.2"])
                == "/androidpublisher/v3/applications/com.example.game/orders:batchGet?orderIds=GPA.1&orderIds=GPA.2")
        #expect(PlayPaths.batchGetOrders(package: "com.example.game", orderIDs: []) == nil)
        #expect(PlayPaths.batchGetOrders(package: "com.example.game", orderIDs: ["GPA.1", "GPA.1"]) == nil)
        #expect(PlayPaths.batchGetOrders(package: "com.example.game", orderIDs: (0...1000).map { "GPA.\($0)" }) == nil)
        #expect(PlayPaths.batchGetOrders(package: "com.example.game", orderIDs: ["GPA.1&x=2"]) == nil)
        #expect(
            PlayPaths.voidedPurchases(package: "com.example.game", startTime: 5, pageToken: "n-1")?.hasSuffix("startTime=5&token=n-1")
                == true)
        #expect(PlayPaths.voidedPurchases(package: "com.example.game", startTime: 5, pageToken: "n&1") == nil)
        #expect(Storefronts.storefront(country: "US") == "USA" && Storefronts.storefront(country: "XK") == "XKS")
        #expect(Storefronts.storefront(country: "ZZ") == nil)
    }
}
