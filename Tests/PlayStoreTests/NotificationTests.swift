import Foundation
import PlayStore
import Testing

/// A pull body with one message whose data is `notification` (base64 as Google sends it).
func pullBody(_ notification: String, messageID: String = "4242", attempt: String = #","deliveryAttempt":1"#) -> [UInt8] {
    let data = Data(notification.utf8).base64EncodedString()
    return Array(
        """
        {"receivedMessages":[{"ackId":"ack-1:abc","message":{"data":"\(data)","messageId":"\(messageID)",
          "publishTime":"2026-11-20T08:15:00.123Z","attributes":{}}\(attempt)}]}
        """.utf8)
}

@Suite("Real-time developer notifications, read strictly")
struct NotificationTests {
    static let voided = #"""
        {"version":"1.0","packageName":"com.example.game","eventTimeMillis":"1790000000000",
         "voidedPurchaseNotification":{"purchaseToken":"tok.A-1","orderId":"GPA.1-2","productType":2,"refundType":2}}
        """#

    @Test("a pull: messages with their data; a pull with nothing; each kind of notification")
    func reads() throws {
        let messages = try PubSubMessage.readPull(pullBody(Self.voided)).get()
        #expect(messages.count == 1 && messages[0].ackID == "ack-1:abc" && messages[0].messageID == "4242")
        #expect(messages[0].deliveryAttempt == 1)
        #expect(try PubSubMessage.readPull(Array("{}".utf8)).get().isEmpty)
        #expect(
            try PlayNotification.read(messages[0].data).get()
                == PlayNotification(
                    packageName: "com.example.game", eventTime: 1_790_000_000_000,
                    kind: .voided(purchaseToken: "tok.A-1", orderID: "GPA.1-2", productType: 2, refundType: 2)))
        let kinds: [(String, PlayNotification.Kind)] = [
            (
                #""oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"t1","sku":"gems_100"}"#,
                .oneTimeProduct(type: 1, purchaseToken: "t1", productID: "gems_100")
            ),
            (
                #""pendingRefundReviewNotification":{"pendingRefundToken":"prt-1","orderId":"GPA.9","refundReason":7}"#,
                .pendingRefundReview(pendingRefundToken: "prt-1", orderID: "GPA.9", refundReason: 7, obfuscatedAccountID: nil)
            ),
            (#""testNotification":{"version":"1.0"}"#, .test),
            (#""subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"s"}"#, .subscription),
        ]
        for (member, kind) in kinds {
            let text = #"{"version":"1.0","packageName":"com.example.game","eventTimeMillis":1790000000000,"# + member + "}"
            #expect(try PlayNotification.read(Array(text.utf8)).get().kind == kind, "\(member)")
        }
        // The bodies the job sends.
        #expect(String(decoding: PubSubMessage.acknowledgeBody(["a\"b", "c"]), as: UTF8.self) == #"{"ackIds":["a\"b","c"]}"#)
        #expect(
            String(decoding: PubSubMessage.pullBody(maxMessages: 5000), as: UTF8.self) == #"{"maxMessages":1000,"returnImmediately":true}"#)
        let review = RefundReview(
            pendingRefundToken: "prt-1", sampleContentProvided: true, preference: .decline,
            consumptionMilliunits: 250_000)
        #expect(
            String(decoding: review.body, as: UTF8.self)
                == #"{"pendingRefundToken":"prt-1","sampleContentProvided":true,"refundPreference":"DECLINE","consumptionPercentageMilliunits":100000}"#
        )
    }

    @Test("hostile pulls and notifications are garbage, never a token to act on")
    func hostile() {
        let pulls: [[UInt8]] = [
            pullBody(Self.voided).dropLast(3) + [],
            Array(
                #"{"receivedMessages":[{"ackId":"a","message":{"data":"!!notbase64","messageId":"1","publishTime":"2026-11-20T08:15:00Z"}}]}"#
                    .utf8),
            Array(#"{"receivedMessages":[{"ackId":"a","message":{"data":"e30=","messageId":"1"}}]}"#.utf8),
            Array(#"{"receivedMessages":[{"ackId":"a"}]}"#.utf8),
            Array(#"{"receivedMessages":{"ackId":"a"}}"#.utf8),
            Array(#"{"receivedMessages":[],"receivedMessages":[]}"#.utf8),
            pullBody(Self.voided, attempt: #","deliveryAttempt":-1"#),
            pullBody(Self.voided, messageID: "12 34"),
            Array(
                #"{"receivedMessages":[{"ackId":"a","message":{"data":"e30=","messageId":"1","publishTime":"2026-11-20T08:15:00Z"}},{"ackId":"b","message":{"data":"e30=","messageId":"1","publishTime":"2026-11-20T08:15:00Z"}}]}"#
                    .utf8),
            [0xFF, 0xFE] + Array("{}".utf8),
        ]
        for (i, body) in pulls.enumerated() {
            if case .success(let m) = PubSubMessage.readPull(body) { Issue.record("pull \(i) believed: \(m)") }
        }
        let head = #"{"version":"1.0","packageName":"com.example.game","eventTimeMillis":"1790000000000","#
        let notifications = [
            head + #""testNotification":{},"voidedPurchaseNotification":{"purchaseToken":"t","productType":2,"refundType":1}}"#,
            #"{"version":"1.0","packageName":"com.example.game","eventTimeMillis":"1790000000000"}"#,
            head + #""voidedPurchaseNotification":{"purchaseToken":"t/../x","productType":2,"refundType":1}}"#,
            head + #""voidedPurchaseNotification":{"purchaseToken":"t","productType":3,"refundType":1}}"#,
            head + #""oneTimeProductNotification":{"notificationType":9,"purchaseToken":"t","sku":"a"}}"#,
            head + #""pendingRefundReviewNotification":{"pendingRefundToken":"p"}}"#,
            #"{"packageName":"../etc","eventTimeMillis":"1790000000000","testNotification":{}}"#,
            #"{"packageName":"com.example.game","eventTimeMillis":"-5","testNotification":{}}"#,
            #"{"packageName":"com.example.game","eventTimeMillis":"1790000000000","testNotification":{}"#,
            "[]",
        ]
        for text in notifications {
            if case .success(let n) = PlayNotification.read(Array(text.utf8)) { Issue.record("believed: \(n)") }
        }
        #expect(
            PlayPaths.pubsubPull(subscription: "projects/my-project/subscriptions/play-rtdn")
                == "/v1/projects/my-project/subscriptions/play-rtdn:pull")
        for name in [
            "projects/p/subscriptions/s", "projects/My-Project/subscriptions/play", "projects/my-project/topics/play",
            "projects/my-project/subscriptions/1play", "projects/my-project/subscriptions/pl%2F", "x",
        ] {
            #expect(PlayPaths.pubsubPull(subscription: name) == nil, "\(name)")
        }
        #expect(
            PlayPaths.reviewRefund(package: "com.example.game", orderID: "GPA.1-2")
                == "/androidpublisher/v3/applications/com.example.game/orders/GPA.1-2:reviewrefund")
        #expect(PlayPaths.reviewRefund(package: "com.example.game", orderID: "GPA.1/x") == nil)
    }
}
