// App receipts verified offline: two real receipts Apple signed (Fixtures/receipts/README.md says
// where they come from and under which license), their fields against golden values decoded
// independently (Fixtures/receipts/decode_receipts.py), and every kind of hostile receipt made from
// them. Nothing here talks to a network.

import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import AppStore
import AppStoreSimulator
@testable import Reconciliation

@Suite("App receipts verified on our own machine")
struct AppReceiptTests {
    static func receipt(_ name: String) throws -> [UInt8] {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "b64", subdirectory: "Fixtures/receipts"))
        let text = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return try #require(Data(base64Encoded: text)).map { $0 }
    }

    static func golden(_ name: String) throws -> [String: Any] {
        let url = try #require(Bundle.module.url(forResource: "golden", withExtension: "json", subdirectory: "Fixtures/receipts"))
        let all = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let receipts = try #require(all["receipts"] as? [String: Any])
        let one = try #require(receipts[name] as? [String: Any])
        return try #require(one["receipt"] as? [String: Any])
    }

    static let verifier = AppReceiptVerifier()
    static let names = ["sandbox-2015", "production-2024"]

    @Test("the embedded Apple Root CA is Apple's: its SHA-256 fingerprint as Apple publishes it")
    func embeddedRoot() throws {
        var serializer = DER.Serializer()
        try serializer.serialize(AppReceiptVerifier.appleRootCA)
        let hex = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined()
        #expect(hex == "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024")
    }

    @Test("both real receipts verify with the embedded root, every field as decoded apart", arguments: names)
    func realReceipts(_ name: String) throws {
        let golden = try Self.golden(name)
        let verified = try Self.verifier.verify(try Self.receipt(name), bundleIDs: nil).get()
        #expect(verified.environment == (golden["environment"] as? String == "Production" ? .production : .sandbox))
        #expect(verified.bundleID == golden["bundle_id"] as? String)
        #expect(verified.creationDate == (golden["creation_date_unix"] as? Int).map { EpochMillis($0) * 1000 })
        let entries = try #require(golden["in_app"] as? [[String: Any]])
        #expect(verified.transactions.count == Set(entries.compactMap { $0["transaction_id"] as? String }).count)
        for entry in entries {
            let id = try #require(entry["transaction_id"] as? String)
            let t = try #require(verified.transactions.first { $0.transactionID == id }, "\(id)")
            #expect(t.productID == entry["product_id"] as? String)
            #expect(t.originalTransactionID == entry["original_transaction_id"] as? String)
            #expect(t.quantity == entry["quantity"] as? Int)
            #expect(t.purchaseDate == UTC.parse(entry["purchase_date"] as? String ?? "x"))
            #expect(t.originalPurchaseDate == UTC.parse(entry["original_purchase_date"] as? String ?? "x"))
            #expect(t.expiresDate == UTC.parse(entry["expires_date"] as? String ?? ""))
            #expect(t.cancellationDate == UTC.parse(entry["cancellation_date"] as? String ?? ""))
            let line = entry["web_order_line_item_id"] as? Int
            #expect(t.webOrderLineItemID == (line == 0 ? nil : line.map(String.init)))
            #expect(t.environment == verified.environment && t.bundleID == verified.bundleID)
        }
        // Its own bundle passes the bundle check; another app's does not.
        #expect((try? Self.verifier.verify(try Self.receipt(name), bundleIDs: [verified.bundleID ?? ""]).get()) != nil)
        #expect(rejection(Self.verifier.verify(try Self.receipt(name), bundleIDs: ["com.example.other"])) == "wrong_bundle")
    }

    @Test("another root configured (IAP_RECEIPT_ROOT_CERTIFICATES): both real receipts fail on the root", arguments: names)
    func otherRoot(_ name: String) throws {
        let verifier = AppReceiptVerifier(roots: [SignedDataVerifier.appleRootCAG3])
        #expect(rejection(verifier.verify(try Self.receipt(name), bundleIDs: nil)) == "unknown_root")
    }

    @Test("one byte changed in the payload or in the signature: bad_signature, nothing read", arguments: names)
    func changedByte(_ name: String) throws {
        let bytes = try Self.receipt(name)
        let container = try ReceiptContainer(bytes)
        let content = try #require(bytes.firstRange(of: container.content))
        var payload = bytes
        // A digit of a transaction id, deep inside the payload: still well-formed, no longer Apple's.
        payload[content.lowerBound + container.content.count / 2] ^= 0x01
        #expect(rejection(Self.verifier.verify(payload, bundleIDs: nil)) == "bad_signature")
        let signature = try #require(bytes.firstRange(of: container.signature))
        var signed = bytes
        signed[signature.lowerBound + 100] ^= 0x80
        #expect(rejection(Self.verifier.verify(signed, bundleIDs: nil)) == "bad_signature")
    }

    @Test("hostile containers: each a one-line malformed reason", arguments: names)
    func hostile(_ name: String) throws {
        let bytes = try Self.receipt(name)
        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("truncated", Array(bytes.dropLast())),
            ("cut in half", Array(bytes.prefix(bytes.count / 2))),
            ("trailing byte", bytes + [0]),
            ("oversized", bytes + [UInt8](repeating: 0, count: ReceiptContainer.maxBytes)),
            ("json text", Array(#"{"signature":"AApp","purchase-info":"ewo="}"#.utf8)),
            ("a lone integer", [0x02, 0x01, 0x05]),
            ("indefinite length on a primitive", [0x04, 0x80, 0x01, 0x00, 0x00]),
            ("unterminated indefinite length", [0x30, 0x80, 0x30, 0x80, 0x02, 0x01, 0x01]),
            ("a length past its parent", [0x30, 0x03, 0x04, 0x05, 0x01]),
            ("nested 17 deep", Self.nested(17)),
            ("nested 60 deep", Self.nested(60)),
        ]
        for (what, hostile) in cases {
            let result = Self.verifier.verify(hostile, bundleIDs: nil)
            #expect(rejection(result) == "malformed", "\(what): \(result)")
            if case .failure(let reason) = result {
                #expect(!reason.description.contains("\n") && reason.description.count < 240, "\(what): \(reason)")
            }
        }
    }

    @Test("the depth read from the bytes is the parsed tree's, on real receipts, their payloads and nested hostile forms")
    func depthFromTheBytes() throws {
        var encodings: [[UInt8]] = [Self.nested(1), Self.nested(16), Self.nested(17), Self.nested(49)]
        for name in Self.names {
            let bytes = try Self.receipt(name)
            encodings.append(bytes)
            if case .success(let container) = Result(catching: { () throws(SignedDataRejection) in try ReceiptContainer(bytes) }) {
                encodings.append(Array(container.content))
            }
        }
        // BER's own forms: an indefinite length closed by two zero bytes, a long-form length, a
        // multi-byte tag, an empty constructed element.
        encodings += [
            [0x30, 0x80, 0x30, 0x80, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00],
            [0x30, 0x81, 0x03, 0x02, 0x01, 0x07], [0x30, 0x05, 0x1F, 0x81, 0x01, 0x01, 0x00], [0x31, 0x00],
        ]
        for bytes in encodings {
            let tree = try BER.parse(bytes)
            #expect(ReceiptContainer.depth(of: bytes[...]) == ReceiptContainer.depth(of: tree), "\(bytes.prefix(12))")
        }
        // Not whole encodings: no depth (the verifier rejects them).
        for broken: [UInt8] in [[0x30, 0x80, 0x02, 0x01, 0x01], [0x30, 0x03, 0x04, 0x05, 0x01], [0x04, 0x05, 0x01], [0x30]] {
            #expect(ReceiptContainer.depth(of: broken[...]) == nil, "\(broken)")
        }
    }

    @Test("a field's string read from its bytes is what BER.parse reads as a primitive string, on every form")
    func stringsFromTheBytes() {
        let forms: [[UInt8]] = [
            [0x0C, 0x03, 0x61, 0x62, 0x63], [0x16, 0x00], [0x0C, 0x81, 0x01, 0x61], [0x0C, 0x82, 0x00, 0x01, 0x61],
            [0x0C, 0x80, 0x61, 0x00, 0x00], [0x2C, 0x03, 0x0C, 0x01, 0x61], [0x0C, 0x02, 0x61], [0x0C, 0x01, 0x61, 0x62],
            [0x04, 0x01, 0x61], [0x13, 0x01, 0x61], [0x0C], [0x0C, 0x85, 0, 0, 0, 0, 1, 0x61], [0x0C, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x61],
            [0x0C, 0x88, 0xFF, 0, 0, 0, 0, 0, 0, 1, 0x61], [0x1F, 0x0C, 0x01, 0x61],
        ]
        for form in forms {
            let byParse: ArraySlice<UInt8>? = {
                guard let node = try? BER.parse(form), node.identifier == .utf8String || node.identifier == .ia5String,
                    case .primitive(let bytes) = node.content
                else { return nil }
                return bytes
            }()
            #expect(ReceiptPayload.primitiveString(form[...]).map(Array.init) == byParse.map(Array.init), "\(form)")
        }
    }

    @Test("the payload's attributes read from DER bytes are what BER.parse reads, and any other form is left to it")
    func attributesFromTheBytes() throws {
        var sets: [[UInt8]] = []
        for name in Self.names {
            let bytes = try Self.receipt(name)
            guard case .success(let container) = Result(catching: { () throws(SignedDataRejection) in try ReceiptContainer(bytes) })
            else { continue }
            sets.append(Array(container.content))
            try ReceiptPayload.attributes(container.content, part: "p") { (type, value) throws(SignedDataRejection) in
                if type == 17 { sets.append(Array(value)) }
            }
        }
        #expect(sets.count > 10)
        for set in sets {
            let fast = try #require(DERAttributes.read(set[...]), "a real receipt's SET is DER")
            let tree = try BER.parse(set)
            guard case .constructed(let children) = tree.content else { Issue.record("not constructed"); continue }
            var slow: [(Int, [UInt8])] = []
            for child in children {
                guard case .constructed(let fields) = child.content else { continue }
                let parts = Array(fields)
                guard case .primitive(let value) = parts[2].content else { continue }
                slow.append((try Int(berEncoded: parts[0]), Array(value)))
            }
            #expect(fast.map(\.0) == slow.map(\.0) && fast.map { Array($0.1) } == slow.map(\.1))
        }
        // Forms only BER.parse reads (or refuses): left to it.
        let others: [[UInt8]] = [
            [0x31, 0x80, 0x00, 0x00],  // indefinite length
            [0x31, 0x81, 0x05, 0x30, 0x03, 0x02, 0x01, 0x01],  // a long-form length under 128
            [0x31, 0x0B, 0x30, 0x09, 0x02, 0x01, 0xFF, 0x02, 0x01, 0x01, 0x04, 0x01, 0x61],  // a negative type
            [0x31, 0x0C, 0x30, 0x0A, 0x02, 0x02, 0x00, 0x05, 0x02, 0x01, 0x01, 0x04, 0x01, 0x61],  // a type not minimal
            [0x31, 0x0D, 0x30, 0x0B, 0x02, 0x01, 0x05, 0x02, 0x01, 0x01, 0x24, 0x03, 0x04, 0x01, 0x61],  // a constructed value
            [0x31, 0x0B, 0x30, 0x09, 0x02, 0x01, 0x05, 0x02, 0x01, 0x01, 0x04, 0x02, 0x61],  // a value past its end
            [0x30, 0x00], [0x31, 0x00, 0x00],
        ]
        for form in others { #expect(DERAttributes.read(form[...]) == nil, "\(form)") }
        #expect(DERAttributes.read([0x31, 0x00][...])?.isEmpty == true)
    }

    @Test("the container read from DER bytes is what BER.parse reads, on Apple's receipts and ours; other forms are left to it")
    func containerFromTheBytes() throws {
        var receipts = try Self.names.map { try Self.receipt($0) }
        for digest in [ReceiptSigning.Digest.sha1, .sha256] {
            receipts.append(try Self.pki.sign(try Self.fields().payload(), digest: digest))
        }
        for bytes in receipts {
            let fast = try #require(ReceiptContainer.der(bytes[...]), "a receipt in Apple's form is read from its bytes")
            let slow = try ReceiptContainer.ber(bytes)
            #expect(fast.certificates.map(Array.init) == slow.certificates.map(Array.init))
            #expect(Array(fast.signerID) == Array(slow.signerID) && Array(fast.signerIssuer) == Array(slow.signerIssuer))
            #expect(Array(fast.signerSerial) == Array(slow.signerSerial) && fast.digest == slow.digest)
            #expect(Array(fast.signature) == Array(slow.signature) && Array(fast.content) == Array(slow.content))
            #expect(slow.signedAttributes == nil && fast.certificates.count == 3)
        }
        // The same receipt in BER's other forms: declined from the bytes, read by BER.parse, still valid.
        let apple = receipts[1]
        #expect(apple[0] == 0x30 && apple[1] == 0x82)
        let body = Array(apple[4...])
        let longer = [0x30, 0x83, 0x00, apple[2], apple[3]] + body
        let indefinite = [0x30, 0x80] + body + [0x00, 0x00]
        for form in [longer, indefinite] {
            #expect(ReceiptContainer.der(form[...]) == nil)
            #expect((try? Self.verifier.verify(form, bundleIDs: nil).get()) != nil, "\(form.prefix(6))")
        }
        // Not whole: declined, then malformed.
        for form in [apple + [0], Array(apple.dropLast()), Array(apple.prefix(apple.count / 3))] {
            #expect(ReceiptContainer.der(form[...]) == nil)
            #expect(rejection(Self.verifier.verify(form, bundleIDs: nil)) == "malformed")
        }
    }

    @Test("a certificate broken inside, in Apple's form: read, then malformed when its chain is judged, never cached")
    func certificateBrokenInside() throws {
        let verifier = AppReceiptVerifier(roots: [Self.pki.root])
        let good = try Self.pki.sign(try Self.fields().payload(), digest: .sha256)
        let leaf = try ReceiptContainer(good).certificates[0]
        // The tbsCertificate's two-byte length, after the certificate's own header, run past the certificate.
        var broken = good
        #expect(broken[leaf.startIndex + 4] == 0x30 && broken[leaf.startIndex + 5] == 0x82)
        broken[leaf.startIndex + 6] = 0x7F
        let read = try ReceiptContainer(broken)
        #expect(!read.certificatesWalked, "Apple's form is read without walking the certificates' insides")
        #expect(ReceiptContainer.depth(of: broken[...]) == nil)
        for _ in 0..<2 {
            let result = verifier.verify(broken, bundleIDs: nil)
            #expect(rejection(result) == "malformed", "\(result)")
        }
        // The good receipt: walked whole, valid, and its verdict cached; the broken one still malformed after it.
        #expect((try? verifier.verify(good, bundleIDs: nil).get()) != nil)
        #expect((try? verifier.verify(good, bundleIDs: nil).get()) != nil)
        #expect(rejection(verifier.verify(broken, bundleIDs: nil)) == "malformed")
        #expect(try ReceiptContainer.ber(good).certificatesWalked)
    }

    @Test("a receipt's chain key: equal only when signer and certificates are byte for byte; kept in the cache as a copy")
    func chainKey() throws {
        let a = try ReceiptContainer(try Self.pki.sign(try Self.fields().payload(), digest: .sha256))
        let b = try ReceiptContainer(try Self.pki.sign(try Self.fields(bundle: "com.example.other").payload(), digest: .sha1))
        let keyA = ReceiptChainKey(signer: a.signerID, certificates: a.certificates)
        let keyB = ReceiptChainKey(signer: b.signerID, certificates: b.certificates)
        #expect(keyA == keyB && keyA.hashValue == keyB.hashValue && keyA.compacted == keyA)
        // One byte of the middle of a certificate (the hash does not read it): no longer equal.
        var changed = a.certificates
        var middle = Array(changed[1])
        middle[middle.count / 2] ^= 0x01
        changed[1] = middle[...]
        #expect(ReceiptChainKey(signer: a.signerID, certificates: changed) != keyA)
        #expect(ReceiptChainKey(signer: a.signerID, certificates: Array(a.certificates.prefix(2))) != keyA)
        #expect(ReceiptChainKey(signer: a.signerID.dropLast(), certificates: a.certificates) != keyA)
        // The cached copy holds its own bytes, not the receipt's.
        #expect(keyA.compacted.certificates.allSatisfy { $0.startIndex == 0 })
    }

    // MARK: Receipts of our own PKI (AppStoreSimulator/PKI/ReceiptPKI.swift)

    static let created = "2026-11-20T10:00:00Z"
    static let now = Date(timeIntervalSince1970: Double(UTC.parse(created) ?? 0) / 1000)
    static let pki = try! ReceiptPKI.create(now: now)

    static func fields(bundle: String = "com.example.game", environment: String = "ProductionSandbox") -> ReceiptFields {
        var fields = ReceiptFields(bundleID: bundle, creationDate: created, environment: environment)
        var coins = ReceiptFields.Purchase(
            productID: "com.example.game.coins100", transactionID: "2000000000001", purchaseDate: "2026-11-19T08:00:00Z")
        coins.quantity = 2
        var sub = ReceiptFields.Purchase(
            productID: "com.example.game.monthly", transactionID: "2000000000003", originalTransactionID: "2000000000002",
            purchaseDate: "2026-11-01T08:00:00Z", originalPurchaseDate: "2026-10-01T08:00:01Z")
        sub.expiresDate = "2026-12-01T08:00:00Z"
        sub.webOrderLineItemID = 2_000_000_000_777
        fields.purchases = [coins, sub]
        return fields
    }

    @Test(
        "a receipt of our own PKI, SHA-1 and SHA-256: verified with its root configured, each field read; unknown_root with Apple's",
        arguments: [ReceiptSigning.Digest.sha1, .sha256])
    func ownPKI(_ digest: ReceiptSigning.Digest) throws {
        let signed = try Self.pki.sign(try Self.fields().payload(), digest: digest)
        let verifier = AppReceiptVerifier(roots: [Self.pki.root])
        let receipt = try verifier.verify(signed, bundleIDs: ["com.example.game"]).get()
        #expect(receipt.environment == .sandbox && receipt.bundleID == "com.example.game")
        #expect(receipt.creationDate == UTC.parse(Self.created))
        #expect(receipt.transactions.map(\.transactionID) == ["2000000000001", "2000000000003"])
        let coins = receipt.transactions[0], sub = receipt.transactions[1]
        #expect(coins.quantity == 2 && coins.expiresDate == nil && coins.webOrderLineItemID == nil && coins.cancellationDate == nil)
        #expect(coins.originalTransactionID == "2000000000001" && coins.productID == "com.example.game.coins100")
        #expect(sub.originalTransactionID == "2000000000002" && sub.expiresDate == UTC.parse("2026-12-01T08:00:00Z"))
        #expect(sub.webOrderLineItemID == "2000000000777" && sub.originalPurchaseDate == UTC.parse("2026-10-01T08:00:01Z"))
        #expect(rejection(Self.verifier.verify(signed, bundleIDs: nil)) == "unknown_root")
    }

    @Test("a root that takes Apple's name with another key: unknown_root under the embedded Apple root")
    func appleLookalike() throws {
        let forger = try ReceiptPKI.create(now: Self.now, names: .appleLookalike())
        #expect(forger.root.subject == AppReceiptVerifier.appleRootCA.subject)
        let signed = try forger.sign(try Self.fields().payload())
        #expect(rejection(Self.verifier.verify(signed, bundleIDs: nil)) == "unknown_root")
    }

    @Test("a chain shift: a leaf signed by a genuine leaf (not a CA), carried with it and the intermediate: broken_chain")
    func chainShift() throws {
        let (forged, forgedKey) = try ReceiptPKI.issueLeaf(
            issuer: Self.pki.leaf, issuerKey: Self.pki.leafKey, name: Self.pki.leaf.subject,
            validity: (Self.now - 86_400)...(Self.now + 86_400))
        let signed = try ReceiptSigning.sign(
            try Self.fields().payload(), digest: .sha256, signer: forged, key: forgedKey,
            carried: [forged, Self.pki.leaf, Self.pki.intermediate, Self.pki.root])
        let result = AppReceiptVerifier(roots: [Self.pki.root]).verify(signed, bundleIDs: nil)
        #expect(rejection(result) == "broken_chain", "\(result)")
    }

    @Test("a leaf expired at the receipt's creation date: expired, naming the leaf and both dates")
    func expiredLeaf() throws {
        let old = try Self.pki.reissuingLeaf(validity: (Self.now - 400 * 86_400)...(Self.now - 86_400))
        let result = AppReceiptVerifier(roots: [old.root]).verify(try old.sign(try Self.fields().payload()), bundleIDs: nil)
        #expect(rejection(result) == "expired")
        if case .failure(let reason) = result {
            #expect(reason.description.contains("leaf certificate is valid") && reason.description.contains(Self.created.prefix(10)))
        }
    }

    @Test("signed, yet not readable: an unknown environment, a bad date, a quantity of 0, a transaction id of letters")
    func signedButMalformed() throws {
        let verifier = AppReceiptVerifier(roots: [Self.pki.root])
        var xcode = Self.fields(environment: "Xcode")
        #expect(rejection(verifier.verify(try Self.pki.sign(try xcode.payload()), bundleIDs: nil)) == "malformed")
        xcode = Self.fields()
        xcode.purchases[0].purchaseDate = "yesterday"
        #expect(rejection(verifier.verify(try Self.pki.sign(try xcode.payload()), bundleIDs: nil)) == "malformed")
        xcode = Self.fields()
        xcode.purchases[0].quantity = 0
        #expect(rejection(verifier.verify(try Self.pki.sign(try xcode.payload()), bundleIDs: nil)) == "malformed")
        xcode = Self.fields()
        xcode.purchases[1].transactionID = "ABC"
        #expect(rejection(verifier.verify(try Self.pki.sign(try xcode.payload()), bundleIDs: nil)) == "malformed")
        // A foreign bundle, well-formed: wrong_bundle.
        let foreign = try Self.pki.sign(try Self.fields(bundle: "com.other.app").payload())
        #expect(rejection(verifier.verify(foreign, bundleIDs: ["com.example.game"])) == "wrong_bundle")
    }

    /// `depth` SEQUENCEs, each holding the next, the innermost empty.
    static func nested(_ depth: Int) -> [UInt8] {
        var inner: [UInt8] = [0x30, 0x00]
        for _ in 1..<depth {
            inner = [0x30] + Self.length(inner.count) + inner
        }
        return inner
    }

    static func length(_ n: Int) -> [UInt8] {
        if n < 0x80 { return [UInt8(n)] }
        var bytes: [UInt8] = []
        var v = n
        while v > 0 {
            bytes.insert(UInt8(v & 0xFF), at: 0)
            v >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}

/// The word of a rejection, or "verified".
func rejection(_ result: Result<AppReceipt, SignedDataRejection>) -> String {
    switch result {
    case .success: return "verified"
    case .failure(let reason): return reason.code
    }
}
