// The Play Developer API's paths (base `https://androidpublisher.googleapis.com`), built only from
// ids that passed their checks: nothing from a row reaches a URL unchecked (no path injection).

/// Paths of the methods the job calls, and the checks of what goes in them.
public enum PlayPaths {
    /// A purchase token's longest accepted length (Google's tokens are about 150 characters; the
    /// length is unconfirmed, so room is left).
    public static let tokenLimit = 2048

    /// An Android package name: dot-separated segments, each a letter then letters, digits or `_`;
    /// at least two segments, at most 255 characters.
    public static func isPackageName(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        guard name.utf8.count <= 255, segments.count >= 2 else { return false }
        return segments.allSatisfy { s in
            guard let first = s.utf8.first, (first >= 65 && first <= 90) || (first >= 97 && first <= 122) else { return false }
            return s.utf8.allSatisfy { PlayCharacters.isAlphanumeric($0) || $0 == 95 }
        }
    }

    /// A purchase token checked as a token (not as a receipt): 1…`tokenLimit` letters, digits, `.`,
    /// `-`, `_`.
    public static func isPurchaseToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= tokenLimit && token.utf8.allSatisfy(PlayCharacters.isTokenCharacter)
    }

    /// A Play order id (`GPA.1234-5678-9012-34567`): letters, digits, `.`, `-`, at most 64.
    public static func isOrderID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.utf8.allSatisfy(PlayCharacters.isOrderCharacter)
    }

    /// getproductpurchasev2 of `token`; nil when the package or the token fails its check.
    public static func productPurchase(package: String, token: String) -> String? {
        guard isPackageName(package), isPurchaseToken(token) else { return nil }
        return "/androidpublisher/v3/applications/\(package)/purchases/productsv2/tokens/\(token)"
    }

    /// orders.batchget of 1…1,000 distinct ids; nil otherwise.
    public static func batchGetOrders(package: String, orderIDs: [String]) -> String? {
        guard isPackageName(package), (1...1000).contains(orderIDs.count), Set(orderIDs).count == orderIDs.count,
            orderIDs.allSatisfy(isOrderID)
        else { return nil }
        return "/androidpublisher/v3/applications/\(package)/orders:batchGet?" + orderIDs.map { "orderIds=\($0)" }.joined(separator: "&")
    }

    /// orders.reviewrefund of `orderID` (POST, `RefundReview.body`).
    public static func reviewRefund(package: String, orderID: String) -> String? {
        guard isPackageName(package), isOrderID(orderID) else { return nil }
        return "/androidpublisher/v3/applications/\(package)/orders/\(orderID):reviewrefund"
    }

    /// A Pub/Sub subscription's full name: `projects/{project}/subscriptions/{id}`; the project 6–30
    /// lower-case letters, digits and `-` (a letter first), the id 3–255 letters, digits, `-`, `_`,
    /// `.`, `~`, `+` (a letter first; Google also allows `%`, refused here: never in a path).
    public static func isSubscription(_ name: String) -> Bool {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", parts[2] == "subscriptions" else { return false }
        let project = parts[1].utf8, id = parts[3].utf8
        let letter: (UInt8) -> Bool = { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
        guard (6...30).contains(project.count), let p = project.first, p >= 97 && p <= 122,
            project.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 })
        else { return false }
        guard (3...255).contains(id.count), let i = id.first, letter(i),
            id.allSatisfy({ PlayCharacters.isAlphanumeric($0) || [45, 95, 46, 126, 43].contains($0) })
        else { return false }
        return true
    }

    /// `subscriptions.pull` of `subscription` (POST, `PubSubMessage.pullBody`), under Pub/Sub's base URL.
    public static func pubsubPull(subscription: String) -> String? {
        isSubscription(subscription) ? "/v1/\(subscription):pull" : nil
    }

    /// `subscriptions.acknowledge` (POST, `PubSubMessage.acknowledgeBody`).
    public static func pubsubAcknowledge(subscription: String) -> String? {
        isSubscription(subscription) ? "/v1/\(subscription):acknowledge" : nil
    }

    /// voidedpurchases.list from `startTime` to `endTime` (Unix ms; nil: Google's now), in-app
    /// products only, quantity-based partial refunds included, 1,000 a page; `pageToken` for the
    /// next page (Google then ignores the times).
    public static func voidedPurchases(package: String, startTime: Int64, endTime: Int64? = nil, pageToken: String?) -> String? {
        guard isPackageName(package), startTime >= 0, (endTime ?? startTime) >= startTime else { return nil }
        var path =
            "/androidpublisher/v3/applications/\(package)/purchases/voidedpurchases?type=0"
            + "&includeQuantityBasedPartialRefund=true&maxResults=1000&startTime=\(startTime)"
        if let endTime { path += "&endTime=\(endTime)" }
        if let pageToken {
            guard isPurchaseToken(pageToken) else { return nil }
            path += "&token=\(pageToken)"
        }
        return path
    }
}
