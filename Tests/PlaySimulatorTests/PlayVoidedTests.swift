// voidedpurchases.list over HTTP: pages read with PlayStore's reader, every record once and oldest
// first, partial refunds only when asked, the 30-day horizon, the quota of 30 calls in 30 s.

import Foundation
import PlaySimulator
import PlayStore
import Testing

@Suite("Google Play simulator: voided purchases")
struct PlayVoidedTests {
    static let day: Int64 = 86_400_000

    /// 2,500 records of the game over the last 29 days (every 125th a partial refund) and three of
    /// the other app. The times are shuffled: the list must sort them.
    static let truth: PlayTruth = {
        var voided: [PlayTruth.Voided] = []
        for n in 0..<2500 {
            let at = PlayWorld.start - 29 * day + Int64((n * 7919) % 2500) * 1_000_000
            voided.append(
                PlayTruth.Voided(
                    packageName: PlayWorld.game, purchaseToken: "tok-v\(n)", orderID: "GPA.0000-0000-0000-\(10000 + n)",
                    purchaseTimeMs: at - day, voidedTimeMs: at, source: n % 3, reason: n % 9,
                    voidedQuantity: n % 125 == 0 ? 1 : nil))
        }
        for n in 0..<3 {
            voided.append(
                PlayTruth.Voided(
                    packageName: PlayWorld.otherApp, purchaseToken: "tok-o\(n)", orderID: nil,
                    purchaseTimeMs: PlayWorld.start - 3 * day, voidedTimeMs: PlayWorld.start - day))
        }
        return PlayTruth(purchases: PlayWorld.truth.purchases, voided: voided)
    }()

    /// Every page from the first, following nextPageToken.
    static func allPages(_ w: PlayWorld, query: String, token: String) throws -> [PlayVoidedPage] {
        var pages: [PlayVoidedPage] = []
        var next: String?
        repeat {
            let q = next.map { query + "&token=" + $0 } ?? query
            let r = try w.get(PlayWorld.voidedPath(q), authorization: "Bearer " + token)
            guard r.status == 200 else { throw RawHTTPError(description: "page \(pages.count): \(r.status) \(r.text)") }
            let page = try PlayVoidedPage.read(r.body).get()
            pages.append(page)
            next = page.nextPageToken
        } while next != nil && pages.count < 10
        return pages
    }

    @Test("over 1,000 records come in pages of maxResults, each once, oldest first")
    func paging() throws {
        let w = try PlayWorld(truth: Self.truth)
        let token = try w.accessToken()
        let pages = try Self.allPages(w, query: "includeQuantityBasedPartialRefund=true", token: token)
        #expect(pages.map(\.voided.count) == [1000, 1000, 500])
        let all = pages.flatMap(\.voided)
        #expect(Set(all.map(\.purchaseToken)).count == 2500)
        #expect(zip(all, all.dropFirst()).allSatisfy { $0.voidedTime <= $1.voidedTime })
        #expect(pages.last?.nextPageToken == nil)
        let small = try Self.allPages(w, query: "includeQuantityBasedPartialRefund=true&maxResults=700", token: token)
        #expect(small.map(\.voided.count) == [700, 700, 700, 400])
        #expect(small.flatMap(\.voided) == all)
        // Opaque, and made only of a token's characters (letters, digits, `-`, `_`, `.`).
        #expect(small.compactMap(\.nextPageToken).count == 3)
        #expect(small.compactMap(\.nextPageToken).allSatisfy(PlayPaths.isPurchaseToken))
        let first = PlayWorld.voidedPath("maxResults=700")
        let tampered = try w.get(first + "&token=v1.0.0.700.0.zz", authorization: "Bearer " + token)
        #expect(tampered.status == 400)
    }

    @Test("a record's fields as the truth says; quantity-based partial refunds only when asked")
    func partialRefunds() throws {
        let w = try PlayWorld(truth: Self.truth)
        let token = try w.accessToken()
        let without = try Self.allPages(w, query: "", token: token).flatMap(\.voided)
        #expect(without.count == 2480)
        #expect(without.allSatisfy { $0.voidedQuantity == nil })
        let with = try Self.allPages(w, query: "includeQuantityBasedPartialRefund=true", token: token).flatMap(\.voided)
        #expect(with.filter { $0.voidedQuantity == 1 }.count == 20)
        let v7 = try #require(with.first { $0.purchaseToken == "tok-v7" })
        let truth = Self.truth.voided[7]
        #expect(v7.orderID == truth.orderID)
        #expect(v7.purchaseTime == truth.purchaseTimeMs)
        #expect(v7.voidedTime == truth.voidedTimeMs)
        #expect(v7.source == 1 && v7.reason == 7)
    }

    @Test("startTime older than 30 days is 400; the window filters on voided time")
    func window() throws {
        let w = try PlayWorld(truth: Self.truth)
        let token = try w.accessToken()
        let old = try w.get(
            PlayWorld.voidedPath("startTime=\(PlayWorld.start - 31 * Self.day)"), authorization: "Bearer " + token)
        #expect(old.status == 400)
        #expect(old.text == #"{"error":{"code":400,"message":"startTime is too old","status":"INVALID_ARGUMENT"}}"#)
        let (from, to) = (PlayWorld.start - 10 * Self.day, PlayWorld.start - 5 * Self.day)
        let listed = try Self.allPages(w, query: "startTime=\(from)&endTime=\(to)", token: token).flatMap(\.voided)
        let expected = Self.truth.voided.filter {
            $0.packageName == PlayWorld.game && $0.voidedQuantity == nil && (from...to).contains($0.voidedTimeMs)
        }
        #expect(!listed.isEmpty)
        #expect(Set(listed.map(\.purchaseToken)) == Set(expected.map(\.purchaseToken)))
        let other = try w.get(PlayWorld.voidedPath("", package: PlayWorld.otherApp), authorization: "Bearer " + token)
        #expect(
            try PlayVoidedPage.read(other.body).get().voided.map(\.purchaseToken) == ["tok-o0", "tok-o1", "tok-o2"])
    }

    @Test("the 31st call in 30 s is 429; the window and the other app are unaffected")
    func voidedQuota() throws {
        let w = try PlayWorld(truth: Self.truth)
        let token = try w.accessToken()
        let path = PlayWorld.voidedPath("maxResults=1")
        for n in 1...30 {
            let r = try w.get(path, authorization: "Bearer " + token)
            #expect(r.status == 200, "call \(n)")
            w.clock.advance(ms: 900)
        }
        let refused = try w.get(path, authorization: "Bearer " + token)
        #expect(refused.status == 429)
        #expect(
            refused.text == #"{"error":{"code":429,"message":"Rate limit exceeded","status":"RESOURCE_EXHAUSTED"}}"#)
        let other = try w.get(PlayWorld.voidedPath("", package: PlayWorld.otherApp), authorization: "Bearer " + token)
        #expect(other.status == 200)
        w.clock.advance(ms: 3_000)
        #expect(try w.get(path, authorization: "Bearer " + token).status == 200)
        #expect(w.service.stats.tooManyRequests == 1)
    }

    @Test("the day's quota: refused until midnight Pacific")
    func dayQuota() throws {
        let w = try PlayWorld(truth: Self.truth) { $0.voidedPerDay = 3 }
        let token = try w.accessToken(scopes: [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope])
        let path = PlayWorld.voidedPath("maxResults=1")
        for _ in 1...3 { #expect(try w.get(path, authorization: "Bearer " + token).status == 200) }
        w.clock.advance(ms: 60_000)
        #expect(try w.get(path, authorization: "Bearer " + token).status == 429)
        // PlayWorld.start is 2026-11-18T...: the next Pacific midnight is at most a day away.
        w.clock.advance(ms: Self.day)
        let fresh = try w.accessToken()
        #expect(try w.get(path, authorization: "Bearer " + fresh).status == 200)
    }

    @Test("string enums: voidedSource and voidedReason as \"0\" still parse")
    func stringEnums() throws {
        let w = try PlayWorld(truth: Self.truth) { $0.stringEnums = true }
        let r = try w.get(PlayWorld.voidedPath("maxResults=50"))
        #expect(r.status == 200)
        #expect(r.text.contains(#""voidedSource":""#) && r.text.contains(#""voidedReason":""#))
        let records = try #require(jsonObject(r.body)?["voidedPurchases"] as? [[String: Any]])
        #expect(records.allSatisfy { $0["voidedSource"] is String && $0["voidedReason"] is String })
        let page = try PlayVoidedPage.read(r.body).get()
        let byToken = Dictionary(uniqueKeysWithValues: Self.truth.voided.map { ($0.purchaseToken, $0) })
        #expect(page.voided.count == 50)
        #expect(
            page.voided.allSatisfy {
                $0.source == byToken[$0.purchaseToken]?.source && $0.reason == byToken[$0.purchaseToken]?.reason
            })
        let numbers = try PlayWorld(truth: Self.truth)
        let plain = try numbers.get(PlayWorld.voidedPath("maxResults=5"))
        let plainRecords = try #require(jsonObject(plain.body)?["voidedPurchases"] as? [[String: Any]])
        #expect(plainRecords.allSatisfy { $0["voidedSource"] is NSNumber && !($0["voidedSource"] is String) })
    }
}
