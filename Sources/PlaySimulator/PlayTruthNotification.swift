// The real-time developer notifications of the truth ("Real-time developer notifications reference
// guide"): what Google publishes on the app's Pub/Sub topic when a one-time purchase is bought or
// cancelled, when a purchase is voided, when a refund asks for the developer's review, and the
// Play Console's test message. Each is published at a time of its own (Pub/Sub delivers it from
// then on), which may lag the event it tells of.

import PlayStore

extension PlayTruth {
    /// One notification published on the app's topic: a DeveloperNotification.
    public struct Notification: Sendable, Equatable {
        /// What the notification tells; exactly one per notification, as in Google's `oneof`.
        public enum Kind: Sendable, Equatable {
            /// OneTimeProductNotification: `notificationType` 1 ONE_TIME_PRODUCT_PURCHASED or 2
            /// ONE_TIME_PRODUCT_CANCELED, the purchase's token and its product id (`sku`).
            case oneTimeProduct(notificationType: Int, purchaseToken: String, sku: String)
            /// VoidedPurchaseNotification: `productType` 1 SUBSCRIPTION or 2 ONE_TIME, `refundType` 1
            /// FULL_REFUND or 2 QUANTITY_BASED_PARTIAL_REFUND (the remaining quantity is FULL_REFUND).
            case voidedPurchase(purchaseToken: String, orderID: String, productType: Int, refundType: Int)
            /// PendingRefundReviewNotification: a refund asks for the developer's answer through
            /// orders.reviewrefund, with this token. Google has not confirmed this object's fields:
            /// they are the ones others have reported (`refundReason` 7 is said to be CHARGEBACK).
            case pendingRefundReview(
                pendingRefundToken: String, orderID: String, refundReason: Int, obfuscatedAccountID: String?)
            /// TestNotification: the Play Console's "send test notification".
            case test
        }

        /// The app's package name.
        public var packageName: String
        /// `eventTimeMillis`: when the event happened, Unix ms.
        public var eventTimeMs: Int64
        /// When Pub/Sub has the message (its `publishTime`; pullable from then on), Unix ms.
        public var publishTimeMs: Int64
        /// What it tells.
        public var kind: Kind

        /// A notification; `publishTimeMs` nil: published at the event's time.
        public init(packageName: String, eventTimeMs: Int64, publishTimeMs: Int64? = nil, kind: Kind) {
            self.packageName = packageName
            self.eventTimeMs = eventTimeMs
            self.publishTimeMs = publishTimeMs ?? eventTimeMs
            self.kind = kind
        }
    }
}

extension PlayTruth.Notification {
    /// What makes this notification one Google would not publish, or nil.
    public var problem: String? {
        guard PlayPaths.isPackageName(packageName) else { return "package \(shown(packageName)) is not a package name" }
        guard PlayTruth.isMillis(eventTimeMs), PlayTruth.isMillis(publishTimeMs) else {
            return "event and publish times are not 2000-9999"
        }
        guard publishTimeMs >= eventTimeMs else { return "it is published before its event" }
        switch kind {
        case .oneTimeProduct(let type, let token, let sku):
            guard (1...2).contains(type) else { return "notification type \(type) is not 1 or 2" }
            guard PlayPaths.isPurchaseToken(token) else { return "the purchase token has a character it may not have" }
            guard PlayTruth.isProductID(sku) else { return "sku \(shown(sku)) is not Google's form" }
        case .voidedPurchase(let token, let order, let productType, let refundType):
            guard PlayPaths.isPurchaseToken(token) else { return "the purchase token has a character it may not have" }
            guard PlayPaths.isOrderID(order) else { return "order id \(shown(order)) is not Google's form" }
            guard (1...2).contains(productType) else { return "product type \(productType) is not 1 or 2" }
            guard (1...2).contains(refundType) else { return "refund type \(refundType) is not 1 or 2" }
        case .pendingRefundReview(let token, let order, let reason, let account):
            // The token's form is unconfirmed: a purchase token's characters stand for it.
            guard PlayPaths.isPurchaseToken(token) else {
                return "the pending refund token has a character it may not have"
            }
            guard PlayPaths.isOrderID(order) else { return "order id \(shown(order)) is not Google's form" }
            // The reasons' values are unconfirmed: any number below 100 is taken.
            guard (0...99).contains(reason) else { return "refund reason \(reason) is not 0-99" }
            if let account, !PlayTruth.isOptionalText(account, limit: 64) {
                return "account id is not 1-64 printable characters without space (nor `-`)"
            }
        case .test:
            break
        }
        return nil
    }
}

extension PlayTruth {
    /// A product id as Google forms one: 1…150 letters, digits, `.` and `_`.
    static func isProductID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 150 && id.utf8.allSatisfy { isAlphanumeric($0) || $0 == 46 || $0 == 95 }
    }
}
