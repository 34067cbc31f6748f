import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import Reconciliation
import SimulatorData
import Testing
import X509

/// StoreKit 2 signed transactions, with real certificates and real ES256 (the simulator's test
/// PKI): what verifies, and every way it must not.
@Suite("signed transactions")
struct SignedTransactionTests {
    static let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    static let nowMs = EpochMillis(now.timeIntervalSince1970 * 1000)
    static let hour: EpochMillis = 3_600_000
    static let day: EpochMillis = 24 * hour
    static let bundle = "com.example.game"

    let pki: TestPKI
    let verifier: SignedDataVerifier

    init() throws {
        pki = try TestPKI.create(now: Self.now)
        verifier = SignedDataVerifier(roots: [pki.root])
    }

    static func payload(_ change: (inout SignedTransactionPayload) -> Void = { _ in }) -> SignedTransactionPayload {
        var p = SignedTransactionPayload(
            transactionId: "2000000812345678", originalTransactionId: "2000000800000001",
            webOrderLineItemId: "2000000055555555", bundleId: bundle, productId: "com.example.game.gems100",
            purchaseDate: nowMs - 2 * day, originalPurchaseDate: nowMs - 30 * day, expiresDate: nowMs + 28 * day,
            quantity: 3, type: SignedTransactionPayload.autoRenewable, signedDate: nowMs - hour,
            transactionReason: "RENEWAL", storefront: "FRA", storefrontId: "143442", price: 5970, currency: "EUR",
            appAccountToken: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        change(&p)
        return p
    }

    /// `json` with `"<key>":<value>` spliced in before the closing brace (keys the encoder cannot
    /// write: a duplicate, a null, a number id).
    static func payloadBytes(_ extra: String, dropping: String? = nil) -> [UInt8] {
        var text = String(decoding: payload().json(), as: UTF8.self)
        if let dropping, let range = text.range(of: dropping) { text.removeSubrange(range) }
        text.removeLast()
        return Array((text + "," + extra + "}").utf8)
    }

    func header(alg: String = "ES256", x5c: [String]? = nil) -> String {
        let chain = (x5c ?? pki.x5c).map { "\"\($0)\"" }.joined(separator: ",")
        return #"{"alg":"\#(alg)","x5c":[\#(chain)]}"#
    }

    func expectRejected(_ jws: String, _ expected: SignedDataRejection, bundleIDs: Set<String>? = nil,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        let result = verifier.verifyTransaction(jws, bundleIDs: bundleIDs)
        #expect(result == .failure(expected), sourceLocation: sourceLocation)
    }

    func expectMalformed(_ jws: String, mentions: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let result = verifier.verifyTransaction(jws, bundleIDs: nil)
        guard case .failure(.malformed(let text)) = result else {
            Issue.record("expected malformed mentioning '\(mentions)', got \(result)", sourceLocation: sourceLocation)
            return
        }
        #expect(text.contains(mentions), "'\(text)' does not mention '\(mentions)'", sourceLocation: sourceLocation)
        #expect(SignedDataRejection.malformed(text).code == "malformed")
    }

    // MARK: Accepted

    @Test func aValidTransactionIsReadWhole() throws {
        let p = Self.payload {
            $0.revocationDate = Self.nowMs - 3 * Self.hour
            $0.revocationReason = 1
            $0.revocationType = "REFUND_PRORATED"
            $0.revocationPercentage = 67932
            $0.inAppOwnershipType = "FAMILY_SHARED"
        }
        let signed = try verifier.verifyTransaction(pki.signTransaction(p), bundleIDs: [Self.bundle]).get()
        let t = signed.transaction
        #expect(t.transactionID == "2000000812345678")
        #expect(t.originalTransactionID == "2000000800000001")
        #expect(t.webOrderLineItemID == "2000000055555555")
        #expect(t.productID == "com.example.game.gems100")
        #expect(t.bundleID == Self.bundle)
        #expect(t.quantity == 3)
        #expect(t.purchaseDate == Self.nowMs - 2 * Self.day)
        #expect(t.originalPurchaseDate == Self.nowMs - 30 * Self.day)
        #expect(t.expiresDate == Self.nowMs + 28 * Self.day)
        #expect(t.environment == .production)
        #expect(t.isTrialPeriod == nil)
        #expect(t.cancellationDate == Self.nowMs - 3 * Self.hour)
        #expect(t.cancellationReason == "1")
        #expect(signed.environmentName == "Production")
        #expect(signed.signedDate == Self.nowMs - Self.hour)
        #expect(signed.type == "Auto-Renewable Subscription")
        #expect(signed.price == 5970)
        #expect(signed.currency == "EUR")
        #expect(signed.storefront == "FRA")
        #expect(signed.storefrontID == "143442")
        #expect(signed.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(signed.inAppOwnershipType == "FAMILY_SHARED")
        #expect(signed.transactionReason == "RENEWAL")
        #expect(signed.revocationDate == Self.nowMs - 3 * Self.hour)
        #expect(signed.revocationReason == 1)
        #expect(signed.revocationType == "REFUND_PRORATED")
        #expect(signed.revocationPercentage == 67932)
    }

    @Test(arguments: [("Production", AppStoreEnvironment.production), ("Sandbox", .sandbox), ("Xcode", .sandbox),
                      ("LocalTesting", .sandbox)])
    func environments(_ name: String, _ expected: AppStoreEnvironment) throws {
        let signed = try verifier.verifyTransaction(pki.signTransaction(Self.payload { $0.environment = name }),
                                                    bundleIDs: nil).get()
        #expect(signed.transaction.environment == expected)
        #expect(signed.environmentName == name)
    }

    @Test(arguments: [(nil as String?, true), ("REFUND_FULL", true), ("REFUND_PRORATED", true), ("FAMILY_REVOKE", false)])
    func onlyARefundIsACancellation(_ type: String?, _ cancelled: Bool) throws {
        let p = Self.payload {
            $0.revocationDate = Self.nowMs - Self.hour
            $0.revocationReason = 0
            $0.revocationType = type
        }
        let t = try verifier.verifyTransaction(pki.signTransaction(p), bundleIDs: nil).get().transaction
        #expect(t.cancellationDate == (cancelled ? Self.nowMs - Self.hour : nil))
        #expect(t.cancellationReason == (cancelled ? "0" : nil))
    }

    @Test func unknownFieldsAreIgnoredAndEscapedSlashesRead() throws {
        // JSONEncoder writes "/" as "\/" in x5c-like text; Apple may add fields at any time.
        let jws = pki.sign(payload: Self.payloadBytes(#""offerType":1,"deviceVerification":"a\/b","isUpgraded":null"#),
                           headerJSON: header(x5c: pki.x5c.map { $0.replacingOccurrences(of: "/", with: "\\/") }))
        #expect(throws: Never.self) { try verifier.verifyTransaction(jws, bundleIDs: nil).get() }
    }

    @Test func signedObjectGivesPayloadAndSignedDate() throws {
        let p = Self.payload()
        let object = try verifier.verifySignedObject(pki.signTransaction(p)).get()
        #expect(object.payload == p.json())
        #expect(object.signedDate == p.signedDate)
    }

    // MARK: Malformed

    @Test func malformedShapes() {
        let good = pki.signTransaction(Self.payload())
        let parts = good.split(separator: ".").map(String.init)
        expectMalformed(parts[0] + "." + parts[1], mentions: "2 segments")
        expectMalformed(good + ".x", mentions: "segments")
        expectMalformed("", mentions: "empty")
        expectMalformed(parts[0] + "=." + parts[1] + "." + parts[2], mentions: "header is not base64url")
        expectMalformed(parts[0] + "." + parts[1] + "+." + parts[2], mentions: "payload is not base64url")
        expectMalformed(parts[0] + " ." + parts[1] + "." + parts[2], mentions: "header is not base64url")
        expectMalformed(ES256Signer.base64URL(Array("not json".utf8)) + "." + parts[1] + "." + parts[2],
                        mentions: "header is not JSON")
        expectMalformed(pki.withDERSignature(good), mentions: "signature is not 64-byte r‖s")
        // 64 bytes take 86 characters; the last one carries 4 unused bits, which must be zero, so
        // that each signature has exactly one text.
        let last = parts[2].last!
        let next = ["A": "B", "Q": "R", "g": "h", "w": "x"][String(last)]!
        expectMalformed(parts[0] + "." + parts[1] + "." + parts[2].dropLast() + next,
                        mentions: "signature is not base64url (unused bits are not zero)")
        expectMalformed(parts[0] + "." + parts[1] + "." + ES256Signer.base64URL([UInt8](repeating: 1, count: 63)),
                        mentions: "signature is not 64-byte r‖s (63 bytes)")
    }

    @Test func malformedHeaders() {
        let body = Self.payload().json()
        expectMalformed(pki.sign(payload: body, headerJSON: header(alg: "HS256")), mentions: "alg is \"HS256\", not ES256")
        expectMalformed(pki.sign(payload: body, headerJSON: header(alg: "none")), mentions: "not ES256")
        expectMalformed(pki.sign(payload: body, headerJSON: header(x5c: Array(pki.x5c.prefix(2)))),
                        mentions: "x5c has 2 certificates, not 3")
        expectMalformed(pki.sign(payload: body, headerJSON: header(x5c: pki.x5c + [pki.x5c[2]])), mentions: "x5c has 4")
        expectMalformed(pki.sign(payload: body, headerJSON: #"{"alg":"ES256"}"#), mentions: "no x5c")
        expectMalformed(pki.sign(payload: body, headerJSON: #"{"alg":"ES256","alg":"ES256","x5c":[]}"#),
                        mentions: "duplicate key alg")
        expectMalformed(pki.sign(payload: body, headerJSON: header(x5c: [pki.x5c[0], "AAAA", pki.x5c[2]])),
                        mentions: "x5c[1] is not a DER X.509 certificate")
        expectMalformed(pki.sign(payload: body, headerJSON: header(x5c: [pki.x5c[0], pki.x5c[1], "%%%%"])),
                        mentions: "x5c[2] is not base64")
    }

    @Test func malformedPayloads() {
        expectMalformed(pki.sign(payload: Self.payloadBytes(#""quantity":2"#)), mentions: "duplicate key quantity")
        expectMalformed(pki.sign(payload: Self.payloadBytes(#""appAccountToken":null"#, dropping: #""appAccountToken":"7e3fb20b-4cdb-47cc-936d-99d65f608138","#)),
                        mentions: "appAccountToken is null")
        expectMalformed(pki.signTransaction(Self.payload { $0.quantity = 0 }), mentions: "quantity 0 is out of range 1-10000")
        expectMalformed(pki.signTransaction(Self.payload { $0.price = 10_000_000_000_000_000 }),
                        mentions: "price 10000000000000000 is out of range")
        expectMalformed(pki.signTransaction(Self.payload { $0.currency = "eur" }), mentions: "currency")
        expectMalformed(pki.signTransaction(Self.payload { $0.transactionId = "12a" }), mentions: "transactionId \"12a\"")
        expectMalformed(pki.signTransaction(Self.payload { $0.revocationPercentage = 100_001 }),
                        mentions: "revocationPercentage 100001 is out of range")
        var ids = String(decoding: Self.payload().json(), as: UTF8.self)
        ids = ids.replacingOccurrences(of: #""transactionId":"2000000812345678""#, with: #""transactionId":2000000812345678"#)
        expectMalformed(pki.sign(payload: Array(ids.utf8)), mentions: "transactionId is a number, not a string")
        var utf8 = Self.payload().json()
        let at = utf8.firstIndex(of: UInt8(ascii: "g"))!  // inside "com.example.game…"
        utf8[at] = 0xFF
        expectMalformed(pki.sign(payload: utf8), mentions: "payload is not valid UTF-8")
        expectMalformed(pki.sign(payload: Array("[1]".utf8)), mentions: "payload is an array, not a JSON object")
        expectMalformed(pki.sign(payload: Array(#"{"transactionId":"1"}"#.utf8)), mentions: "payload has no signedDate")
        var noBundle = String(decoding: Self.payload().json(), as: UTF8.self)
        noBundle = noBundle.replacingOccurrences(of: #""bundleId":"com.example.game","#, with: "")
        expectMalformed(pki.sign(payload: Array(noBundle.utf8)), mentions: "payload has no bundleId")
        expectMalformed(pki.signTransaction(Self.payload { $0.signedDate = -1 }), mentions: "signedDate -1")
        expectMalformed(pki.signTransaction(Self.payload { $0.purchaseDate = 253_402_300_800_000 }),
                        mentions: "purchaseDate 253402300800000 is out of range")
    }

    // MARK: The chain

    @Test func aStrangersRootIsUnknown() throws {
        let stranger = try TestPKI.stranger(now: Self.now)
        expectRejected(stranger.signTransaction(Self.payload()), .unknownRoot)
        #expect(SignedDataRejection.unknownRoot.code == "unknown_root")
    }

    @Test func aRootWithTheSameNameButAnotherKeyIsUnknown() throws {
        let impostor = try pki.impostor(now: Self.now)
        #expect(impostor.root.subject == pki.root.subject)
        #expect(impostor.root.publicKey != pki.root.publicKey)
        expectRejected(impostor.signTransaction(Self.payload()), .unknownRoot)
    }

    @Test func anAppleLookalikeIsUnknownToApplesRoot() throws {
        let forger = try TestPKI.create(now: Self.now, names: .appleLookalike())
        #expect(forger.root.subject == SignedDataVerifier.appleRootCAG3.subject)
        let apple = SignedDataVerifier(roots: [SignedDataVerifier.appleRootCAG3])
        #expect(apple.verifyTransaction(forger.signTransaction(Self.payload()), bundleIDs: nil) == .failure(.unknownRoot))
    }

    @Test func brokenChains() throws {
        func expectBroken(_ other: TestPKI, _ mentions: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let result = verifier.verifyTransaction(other.signTransaction(Self.payload()), bundleIDs: nil)
            guard case .failure(.brokenChain(let text)) = result else {
                Issue.record("expected broken_chain, got \(result)", sourceLocation: sourceLocation)
                return
            }
            #expect(text.contains(mentions), "'\(text)'", sourceLocation: sourceLocation)
            #expect(text.count <= 160 && !text.contains("Certificate("), sourceLocation: sourceLocation)
        }
        expectBroken(try pki.reissuingLeaf(now: Self.now, .init(signedByIntermediate: false)),
                     "the leaf is not signed by the intermediate")
        expectBroken(try pki.reissuingIntermediate(now: Self.now, hasMarker: false), "WWDR marker OID 1.2.840.113635.100.6.2.1")
        expectBroken(try pki.reissuingLeaf(now: Self.now, .init(hasMarker: false)), "marker OID 1.2.840.113635.100.6.11.1")
        #expect(SignedDataRejection.brokenChain("x").code == "broken_chain")
    }

    @Test func aTamperedPayloadHasABadSignature() {
        let jws = pki.signTransaction(Self.payload())
        expectRejected(pki.tampered(jws, payload: Self.payload { $0.quantity = 300 }), .badSignature)
        // And an honest one next to it, from the same (cached) chain, still verifies.
        #expect((try? verifier.verifyTransaction(jws, bundleIDs: nil).get()) != nil)
        #expect(SignedDataRejection.badSignature.code == "bad_signature")
    }

    @Test func xcodeTransactionsGetEveryCheck() throws {
        // Apple's library skips chain and signature for Xcode and LocalTesting; the job never does.
        for environment in ["Xcode", "LocalTesting"] {
            let jws = pki.signTransaction(Self.payload { $0.environment = environment })
            expectRejected(pki.tampered(jws, payload: Self.payload { $0.environment = environment; $0.quantity = 9 }),
                           .badSignature)
            let stranger = try TestPKI.stranger(now: Self.now)
            expectRejected(stranger.signTransaction(Self.payload { $0.environment = environment }), .unknownRoot)
        }
    }

    // MARK: Dates

    /// A leaf that expired 30 days ago. Offline verification judges it at `signedDate`.
    func expiredLeaf() throws -> TestPKI {
        try pki.reissuingLeaf(now: Self.now, .init(notBefore: Self.now - 400 * 86_400, notAfter: Self.now - 30 * 86_400))
    }

    @Test func signedBeforeTheLeafExpiredStillVerifies() throws {
        let old = try expiredLeaf()
        let signed = try verifier.verifyTransaction(old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 60 * Self.day }),
                                                    bundleIDs: nil).get()
        #expect(signed.signedDate == Self.nowMs - 60 * Self.day)
    }

    @Test func signedAfterTheLeafExpiredIsExpired() throws {
        let old = try expiredLeaf()
        let result = verifier.verifyTransaction(old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 10 * Self.day }),
                                                bundleIDs: nil)
        guard case .failure(.expired(let text)) = result else {
            Issue.record("expected expired, got \(result)")
            return
        }
        #expect(text.contains("leaf certificate is valid"))
        #expect(text.contains(UTC.timestamp(Self.nowMs - 30 * Self.day)))
        #expect(text.contains("signedDate " + UTC.timestamp(Self.nowMs - 10 * Self.day)))
        #expect(SignedDataRejection.expired(text).code == "expired")
    }

    @Test func theCacheKeepsTheDateCheckExact() throws {
        // Same chain, both orders: a verdict kept from one JWS never decides another's dates.
        let old = try expiredLeaf()
        let before = old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 60 * Self.day })
        let after = old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 10 * Self.day })
        let notYet = old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 500 * Self.day })
        for order in [[before, after, notYet], [after, notYet, before], [notYet, before, after]] {
            let v = SignedDataVerifier(roots: [pki.root])
            for _ in 0..<2 {
                for jws in order {
                    let result = v.verifyTransaction(jws, bundleIDs: nil)
                    if jws == before {
                        #expect((try? result.get()) != nil)
                    } else if case .failure(.expired) = result {
                    } else {
                        Issue.record("expected expired, got \(result)")
                    }
                }
            }
            #expect(v.cachedChainCount == 1)
        }
    }

    @Test func aRememberedHeaderDecidesWhatReadingItDecides() throws {
        // The header memo skips reading a header whose bytes it has seen: every verdict must be
        // the one a verifier without memo or cache gives, whatever came before, and a header one
        // byte away from a remembered one is read (and refused) on its own.
        let genuine = pki.signTransaction(Self.payload())
        let head = String(genuine.prefix { $0 != "." })
        let rest = String(genuine.dropFirst(head.count))
        var flipped = Array(head.utf8)
        flipped[flipped.count / 2] = flipped[flipped.count / 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let stranger = try TestPKI.stranger(now: Self.now)
        let old = try expiredLeaf()
        var texts = [genuine, pki.tampered(genuine, payload: Self.payload { $0.quantity = 300 }),
                     String(decoding: flipped, as: UTF8.self) + rest, String(head.dropLast()) + rest,
                     head + "!" + rest, stranger.signTransaction(Self.payload()),
                     old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 10 * Self.day }),
                     old.signTransaction(Self.payload { $0.signedDate = Self.nowMs - 60 * Self.day }),
                     CompactJWSTestText.withHeader(header(alg: "ES384"), of: genuine),
                     // A remembered header followed by other shapes: the dots still count.
                     head, head + ".", head + rest.prefix { $0 != "." || rest.first == $0 }, head + rest + ".x",
                     head + ".." + rest.split(separator: ".").last!, head + rest.replacingOccurrences(of: "A", with: "*")]
        // More headers than the memo keeps (each a leaf of its own).
        for _ in 0..<10 { texts.append(try pki.reissuingLeaf(now: Self.now, .init()).signTransaction(Self.payload())) }
        let plain = SignedDataVerifier(roots: [pki.root], cacheCapacity: 0)
        let expected = texts.map { plain.verifyTransaction($0, bundleIDs: nil) }
        let remembering = SignedDataVerifier(roots: [pki.root])
        for order in [Array(texts.indices), texts.indices.reversed(), texts.indices.map { ($0 * 7) % texts.count }] {
            for _ in 0..<2 {
                for i in order {
                    #expect(remembering.verifyTransaction(texts[i], bundleIDs: nil) == expected[i], "text \(i)")
                }
            }
        }
        #expect((try? expected[0].get()) != nil)
        #expect(expected[1] == .failure(.badSignature))
    }

    // MARK: Bundle

    @Test func bundles() throws {
        let jws = pki.signTransaction(Self.payload())
        guard case .failure(.wrongBundle(let text)) = verifier.verifyTransaction(jws, bundleIDs: ["com.example.other"]) else {
            Issue.record("expected wrong_bundle")
            return
        }
        #expect(text.contains(Self.bundle))
        #expect(SignedDataRejection.wrongBundle(text).code == "wrong_bundle")
        #expect((try? verifier.verifyTransaction(jws, bundleIDs: [Self.bundle, "com.example.other"]).get()) != nil)
        #expect((try? verifier.verifyTransaction(jws, bundleIDs: nil).get()) != nil)
        #expect((try? verifier.verifyTransaction(jws, bundleIDs: []).get()) != nil)
    }
}

/// A JWS with its header replaced (the signature no longer matches, which is not what is tested).
enum CompactJWSTestText {
    static func withHeader(_ json: String, of jws: String) -> String {
        let header = Data(json.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return header + String(jws.drop { $0 != "." })
    }
}
