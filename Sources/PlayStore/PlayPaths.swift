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

    /// voidedpurchases.list from `startTime` (Unix ms), in-app products only, quantity-based
    /// partial refunds included, 1,000 a page; `pageToken` for the next page.
    public static func voidedPurchases(package: String, startTime: Int64, pageToken: String?) -> String? {
        guard isPackageName(package), startTime >= 0 else { return nil }
        var path =
            "/androidpublisher/v3/applications/\(package)/purchases/voidedpurchases?type=0"
            + "&includeQuantityBasedPartialRefund=true&maxResults=1000&startTime=\(startTime)"
        if let pageToken {
            guard isPurchaseToken(pageToken) else { return nil }
            path += "&token=\(pageToken)"
        }
        return path
    }
}
