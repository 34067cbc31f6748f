import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import Reconciliation
import SimulatorData
import SwiftASN1
import Synchronization
import Testing
import X509

/// The pieces around verification: the embedded root, root files, the router's JWS test, the
/// signer, the simulator's PKI on disk, the chain cache's cost, and hostile bytes.
@Suite("signed data support")
struct SignedDataSupportTests {
    static func base64URLDecode(_ s: Substring) -> [UInt8]? {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t).map(Array.init)
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("iap-jws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test func embeddedAppleRoot() throws {
        let root = SignedDataVerifier.appleRootCAG3
        var serializer = DER.Serializer()
        try serializer.serialize(root)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        #expect(fingerprint == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(root.subject.description.contains("Apple Root CA - G3"))
        // And it is the file in shared/, loaded the way IAP_ROOT_CERTIFICATES is.
        let shared = "/work/shared/apple/AppleRootCA-G3.pem"
        if FileManager.default.fileExists(atPath: shared) {
            #expect(try SignedDataVerifier.roots(fromPEMFiles: shared) == [root])
        }
    }

    @Test func rootFiles() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try TestPKI.create(), b = try TestPKI.stranger()
        let pem = dir.appendingPathComponent("roots.pem").path
        try (a.rootPEM + "\n" + b.rootPEM).write(toFile: pem, atomically: true, encoding: .utf8)
        let der = dir.appendingPathComponent("apple.cer").path
        var serializer = DER.Serializer()
        try serializer.serialize(SignedDataVerifier.appleRootCAG3)
        try Data(serializer.serializedBytes).write(to: URL(fileURLWithPath: der))
        #expect(try SignedDataVerifier.roots(fromPEMFiles: " \(pem) , \(der) ") == [a.root, b.root, SignedDataVerifier.appleRootCAG3])

        let garbage = dir.appendingPathComponent("garbage.pem").path
        // The key's body holds lower-case letters, so the random folder name (upper-case hex) that the
        // errors quote can never contain it by chance, as it could "AAAA".
        let secretBody = "c2VjcmV0LWJvZHk"
        try "-----BEGIN PRIVATE KEY-----\n\(secretBody)\n-----END PRIVATE KEY-----\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        for (paths, mentions) in [(dir.appendingPathComponent("missing.pem").path, "no such file"), (garbage, "garbage.pem"),
                                  (dir.path, "is a directory"), (" , ", "names no file")] {
            do {
                _ = try SignedDataVerifier.roots(fromPEMFiles: paths)
                Issue.record("\(paths) loaded")
            } catch {
                #expect("\(error)".contains(mentions), "\(error)")
                #expect(!"\(error)".contains(secretBody))
            }
        }
    }

    @Test func isJWS() throws {
        let jws = try TestPKI.create().signTransaction(SignedTransactionTests.payload())
        #expect(SignedDataVerifier.isJWS(jws))
        #expect(SignedDataVerifier.isJWS("a.b.c"))
        for text in ["", "a.b", "a.b.c.d", "a..c", ".b.c", "a.b.", "a.b.c=", "a+b.c.d", "a.b .c", "ewogICJzdGF0dXMiOiAwCn0=",
                     "MIIT" + String(repeating: "A", count: 100)] {
            #expect(!SignedDataVerifier.isJWS(text), "\(text)")
        }
    }

    /// The job schema's `is_jws` as a regular expression: the independent rule the form checks
    /// are held to.
    static func matchesJWSPattern(_ text: String) -> Bool {
        text.wholeMatch(of: /[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+/) != nil
    }

    /// `text` with the character at `offset` (from the start, or from the end when negative)
    /// replaced: a mutation that changes the text whatever the random keys made of it.
    static func replacing(_ text: String, at offset: Int, with c: Character) -> String {
        var chars = Array(text)
        chars[offset >= 0 ? offset : chars.count + offset] = c
        return String(chars)
    }

    @Test("the reader's form check, which skips a header it found in form, answers as isJWS on every text")
    func formCheckRemembersOnlyWhatItChecked() throws {
        // Fresh keys make a different header each time, so every mutation is made by position, never
        // by content: replacing every "A" changed nothing in the one header of ten or so that held
        // none, and that text was then a JWS. Each text's expected answer is written beside it and
        // also held to the regular expression; neither depends on the keys.
        let jws = try TestPKI.create().signTransaction(SignedTransactionTests.payload())
        let head = String(jws.prefix { $0 != "." }), rest = String(jws.dropFirst(head.count))
        let payloadStart = 1, middle = head.count / 2
        let cases: [(text: String, isJWS: Bool)] = [
            (jws, true),
            (head + Self.replacing(rest, at: payloadStart, with: "+"), false), // the known header, a bad payload byte
            (head + Self.replacing(rest, at: -1, with: "="), false),           // the known header, a bad last byte
            (head + ".a", false), (head + "..c", false), (head + ".b.c.d", false), (head, false), (head + ".", false),
            (head + "!" + rest, false),
            (String(head.dropLast()) + rest, true),                             // a header one byte shorter
            (head + "A" + rest, true),                                          // one byte longer
            ("x" + head + rest, true),
            (Self.replacing(head, at: middle, with: "=") + rest, false),        // the known length, a bad byte inside
            (Self.replacing(head, at: -1, with: "=") + rest, false),            // the known length, a bad last byte
            (Self.replacing(head, at: 0, with: "/") + rest, false),             // the known length, a bad first byte
            ("a.b.c", true), ("a.b c.d", false), (jws, true),
            (String(head.dropLast()) + "!" + rest, false), (head + rest, true),
        ]
        let texts = cases.map(\.text)
        for (i, c) in cases.enumerated() {
            #expect(SignedDataVerifier.isJWS(c.text) == c.isJWS, "text \(i): \(c.text)")
            #expect(Self.matchesJWSPattern(c.text) == c.isJWS, "text \(i): \(c.text)")
        }
        // Three orders, the last a stride through every text (7 is prime, so any count it does not
        // divide visits each once).
        try #require(texts.count % 7 != 0)
        var check = SignedDataVerifier.FormCheck()
        for order in [Array(texts.indices), texts.indices.reversed(), texts.indices.map { ($0 * 7) % texts.count }] {
            for i in order {
                #expect(check.isJWS(texts[i]) == SignedDataVerifier.isJWS(texts[i]), "text \(i): \(texts[i])")
            }
        }
    }

    @Test func es256SignerMakesAVerifiableJWT() throws {
        let key = P256.Signing.PrivateKey()
        let signer = try ES256Signer(pkcs8PEM: key.pemRepresentation, keyID: "2X9R4HXF34", type: "JWT")
        #expect(signer.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        let claims = #"{"iss":"57246542-96fe-1a63-e053-0824d011072a","iat":1700000000,"exp":1700000300,"aud":"appstoreconnect-v1","bid":"com.example.game"}"#
        let jwt = signer.sign(json: claims)
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        let header = try #require(Self.base64URLDecode(parts[0]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"2X9R4HXF34","typ":"JWT"}"#)
        #expect(Self.base64URLDecode(parts[1]) == Array(claims.utf8))
        let raw = try #require(Self.base64URLDecode(parts[2]))
        #expect(raw.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: raw)
        #expect(key.publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)))
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Array((parts[0] + "." + parts[1]).utf8)))
        #expect(!jwt.contains("="))
    }

    @Test func aBadKeyFileSaysSoWithoutQuotingIt() {
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let secretLine = p384.split(separator: "\n")[1]
        for text in [p384, "not a key at all", "-----BEGIN PRIVATE KEY-----\n\(secretLine)\n-----END PRIVATE KEY-----"] {
            do {
                _ = try ES256Signer(pkcs8PEM: text)
                Issue.record("accepted a key that is not P-256")
            } catch {
                #expect(!"\(error)".contains(secretLine))
                #expect("\(error)".contains("private key"))
            }
        }
    }

    @Test func thePKIOnDiskIsSharedAndTrusted() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let first = try TestPKI.loadOrCreate(directory: dir.path)
        let second = try TestPKI.loadOrCreate(directory: dir.path)
        #expect(first.rootPEM == second.rootPEM)
        #expect(first.leaf == second.leaf)
        for name in ["root.pem", "intermediate.pem", "leaf.pem", "root-key.pem", "intermediate-key.pem", "leaf-key.pem"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), "\(name)")
        }
        // What the job does: IAP_ROOT_CERTIFICATES=<dir>/root.pem, then verify what the simulator signed.
        let roots = try SignedDataVerifier.roots(fromPEMFiles: dir.appendingPathComponent("root.pem").path)
        let verifier = SignedDataVerifier(roots: roots)
        let jws = second.signTransaction(SignedTransactionTests.payload())
        #expect((try? verifier.verifyTransaction(jws, bundleIDs: nil).get()) != nil)
        // A leaf about to expire is replaced (with a whole new PKI).
        let later = try TestPKI.loadOrCreate(directory: dir.path, now: Date() + 400 * 86_400)
        #expect(later.rootPEM != first.rootPEM)
    }

    /// The job's verify threads share one verifier: plain threads hitting the cache, and tasks
    /// that all miss it at once while every thread of the cooperative pool waits on them (the
    /// validation runs on its own executor, so this cannot deadlock).
    @Test func sharedAcrossThreadsAndTasks() async throws {
        let pki = try TestPKI.create()
        let verifier = SignedDataVerifier(roots: [pki.root])
        let jws = pki.signTransaction(SignedTransactionTests.payload())
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<25 where (try? verifier.verifyTransaction(jws, bundleIDs: nil).get()) == nil {
                failures.withLock { $0 += 1 }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(verifier.cachedChainCount == 1)

        var distinct: [String] = []
        for _ in 0..<12 {
            let other = try pki.reissuingLeaf(.init())
            distinct.append(other.signTransaction(SignedTransactionTests.payload()))
        }
        let accepted = await withTaskGroup(of: Bool.self) { group in
            for jws in distinct {
                group.addTask { (try? verifier.verifyTransaction(jws, bundleIDs: nil).get()) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(accepted == 12)
        #expect(verifier.cachedChainCount == 13)
    }

    @Test func processesStartingTogetherShareOnePKI() throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let roots = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let pem = (try? TestPKI.loadOrCreate(directory: dir.path).rootPEM) ?? "failed"
            roots.withLock { $0.append(pem) }
        }
        let seen = roots.withLock { $0 }
        #expect(seen.count == 4 && Set(seen).count == 1 && !seen.contains("failed"))
        #expect(try TestPKI.load(directory: dir.path).rootPEM == seen.first)
    }

    /// Per-JWS cost with and without the chain cache (debug build; see the printed figures).
    @Test func cacheCost() throws {
        let pki = try TestPKI.create()
        let jws = pki.signTransaction(SignedTransactionTests.payload())
        let cached = SignedDataVerifier(roots: [pki.root])
        let uncached = SignedDataVerifier(roots: [pki.root], cacheCapacity: 0)
        _ = cached.verifyTransaction(jws, bundleIDs: nil)
        func perJWS(_ v: SignedDataVerifier, _ n: Int) -> Double {
            let clock = ContinuousClock()
            let elapsed = clock.measure {
                for _ in 0..<n { precondition((try? v.verifyTransaction(jws, bundleIDs: nil).get()) != nil) }
            }
            return Double(elapsed.components.attoseconds) / 1e12 / Double(n) + Double(elapsed.components.seconds) * 1e6 / Double(n)
        }
        let withCache = perJWS(cached, 200)
        let withoutCache = perJWS(uncached, 30)
        print("signed transaction verification, per JWS: cached \(Int(withCache)) µs, uncached \(Int(withoutCache)) µs")
        #expect(withCache < withoutCache)
        #expect(cached.cachedChainCount == 1 && uncached.cachedChainCount == 0)
    }

    @Test func theCacheIsBounded() throws {
        let verifier = SignedDataVerifier(roots: [], cacheCapacity: 4)
        for _ in 0..<6 {
            let jws = try TestPKI.create().signTransaction(SignedTransactionTests.payload())
            #expect(verifier.verifyTransaction(jws, bundleIDs: nil) == .failure(.unknownRoot))
        }
        #expect(verifier.cachedChainCount == 4)
    }

    /// Every byte flipped, every length cut: a rejection or (rarely, for a flip the JWS does not
    /// cover, none here) an acceptance, never a crash; and never an acceptance of changed data.
    @Test func hostileBytesNeverCrashOrPass() throws {
        let pki = try TestPKI.create()
        let verifier = SignedDataVerifier(roots: [pki.root])
        let jws = Array(pki.signTransaction(SignedTransactionTests.payload()).utf8)
        // Seeded, and the seed printed with any failure, so a failure can be replayed.
        let seed = UInt64.random(in: 0...UInt64.max)
        var rng = SeededRandom(seed: seed)
        var rejected = 0
        for round in 0..<300 {
            var bytes = jws
            if round % 3 == 0 {
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
            } else {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                bytes[at] = UInt8.random(in: 0...255, using: &rng)
                if bytes == jws { continue }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if case .failure = verifier.verifyTransaction(text, bundleIDs: nil) { rejected += 1 }
            else { Issue.record("a changed JWS verified: round \(round), seed \(seed)") }
        }
        #expect(rejected > 250, "seed \(seed)")
    }
}
