import Crypto
import Foundation
import PlayStore
import Testing
import _CryptoExtras

/// A test service account's key file (the shape of Google's: its fields, PEM with `\n` escapes).
func keyFile(
    _ key: _RSA.Signing.PrivateKey, type: String = "service_account", email: String = "night@studio.iam.gserviceaccount.com",
    pem: String? = nil, tokenURI: String = "https://oauth2.googleapis.com/token", extra: String = ""
) -> [UInt8] {
    let pem = (pem ?? key.pkcs8PEMRepresentation).replacingOccurrences(of: "\n", with: "\\n")
    return Array(
        """
        {"type": "\(type)", "project_id": "studio", "private_key_id": "0123abcdef", "private_key": "\(pem)",
         "client_email": "\(email)", "client_id": "1234", "token_uri": "\(tokenURI)"\(extra)}
        """.utf8)
}

/// One 2048-bit key for the suite (generating one takes a while).
let testKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

@Suite("Google service account and OAuth assertion")
struct ServiceAccountTests {
    /// The base64 lines of the key's PEM: none of them may appear in any problem text.
    func secretLines() -> [String] {
        testKey.pkcs8PEMRepresentation.split(separator: "\n").filter { !$0.hasPrefix("-----") }.map(String.init)
    }

    @Test("a key file reads, its assertion passes Google's checks")
    func assertionVerifies() throws {
        let account = try ServiceAccount(keyFile: keyFile(testKey))
        #expect(account.clientEmail == "night@studio.iam.gserviceaccount.com")
        #expect(account.keyID == "0123abcdef")
        #expect(account.tokenURI == GoogleOAuth.tokenURI)
        let now: Int64 = 1_790_000_000
        let jwt = account.assertion(scopes: [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope], now: now)
        let claims = try AssertionCheck.verify(
            jwt, key: testKey.publicKey, issuer: account.clientEmail, audience: GoogleOAuth.tokenURI,
            now: now + 5
        ).get()
        #expect(claims.scopes == [GoogleOAuth.androidPublisherScope, GoogleOAuth.pubsubScope])
        #expect(claims.expires - claims.issuedAt == GoogleOAuth.assertionLifetime)
        // The PKCS#1 form of the same key reads too, and signs alike.
        let pkcs1 = try ServiceAccount(keyFile: keyFile(testKey, pem: testKey.pemRepresentation))
        #expect(
            AssertionCheck.verify(
                pkcs1.assertion(scopes: ["s"], now: now), key: testKey.publicKey, issuer: pkcs1.clientEmail,
                audience: GoogleOAuth.tokenURI, now: now
            ).isSuccess)
    }

    @Test("an assertion that fails a check is refused, and says which")
    func forgedAssertions() throws {
        let account = try ServiceAccount(keyFile: keyFile(testKey))
        let other = try ServiceAccount(keyFile: keyFile(try _RSA.Signing.PrivateKey(keySize: .bits2048)))
        let now: Int64 = 1_790_000_000
        let good = account.assertion(scopes: ["s"], now: now)
        func problem(_ jwt: String, now at: Int64 = now, audience: String = GoogleOAuth.tokenURI) -> String? {
            switch AssertionCheck.verify(jwt, key: testKey.publicKey, issuer: account.clientEmail, audience: audience, now: at) {
            case .success: return nil
            case .failure(let garbage): return garbage.problem
            }
        }
        #expect(problem(good) == nil)
        #expect(problem(other.assertion(scopes: ["s"], now: now))?.contains("signature") == true)
        var parts = good.split(separator: ".").map(String.init)
        // One claim changed after signing.
        var claims = Array(
            Data(
                base64Encoded: parts[1].padding(toLength: (parts[1].count + 3) / 4 * 4, withPad: "=", startingAt: 0)
                    .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/"))!)
        claims[claims.count - 3] ^= 1
        parts[1] = Data(claims).base64EncodedString().replacingOccurrences(of: "=", with: "")
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        #expect(problem(parts.joined(separator: "."))?.contains("signature") == true)
        #expect(problem(good, now: now + 601)?.contains("expired") == true)
        #expect(problem(good, now: now - 3600)?.contains("future") == true)
        #expect(problem(good, audience: "https://example.com/token")?.contains("aud") == true)
        #expect(problem(account.assertion(scopes: ["s"], now: now, lifetime: 7200))?.contains("hour") == true)
        #expect(problem("e30.e30.") != nil)
        #expect(problem("not a jwt") != nil)
        #expect(problem("a.b.c.d") != nil)
        let none = "eyJhbGciOiJub25lIn0." + parts[1] + "." + parts[2]
        #expect(problem(none)?.contains("RS256") == true)
    }

    @Test("a key file that cannot be used: a clear problem, never the key")
    func hostileKeyFiles() throws {
        let p256 = P256.Signing.PrivateKey().pemRepresentation
        let cases: [(String, [UInt8], String)] = [
            ("not JSON", Array("-----BEGIN PRIVATE KEY-----".utf8), "not JSON"),
            ("an array", Array("[]".utf8), "not an object"),
            ("empty", [], "empty"),
            ("a user credential", keyFile(testKey, type: "authorized_user"), "not \"service_account\""),
            ("no e-mail", keyFile(testKey, email: "nobody"), "client_email"),
            ("an EC key", keyFile(testKey, pem: p256), "RSA"),
            ("not PEM", keyFile(testKey, pem: "MIIEvQIBADANBg"), "PEM"),
            ("a cut key", keyFile(testKey, pem: String(testKey.pkcs8PEMRepresentation.prefix(400)) + "\n-----END PRIVATE KEY-----"), "RSA"),
            ("http token URI", keyFile(testKey, tokenURI: "http://oauth2.googleapis.com/token"), "https"),
            ("a repeated key", keyFile(testKey, extra: #", "type": "service_account""#), "duplicate key"),
            ("invalid UTF-8", keyFile(testKey) + [0xFF], "UTF-8"),
            ("trailing data", keyFile(testKey) + Array("{}".utf8), "more data"),
            ("private_key a number", Array(#"{"type":"service_account","client_email":"a@b","private_key":42}"#.utf8), "private_key"),
        ]
        for (name, bytes, expected) in cases {
            do {
                _ = try ServiceAccount(keyFile: bytes)
                Issue.record("\(name): accepted")
            } catch {
                #expect(error.problem.contains(expected), "\(name): \(error.problem)")
                for line in secretLines() { #expect(!error.problem.contains(line.prefix(16)), "\(name) shows the key") }
            }
        }
        // A 1024-bit RSA key is refused (too weak to sign for us).
        let weak = try _RSA.Signing.PrivateKey(unsafeKeySize: _RSA.Signing.KeySize(bitCount: 1024))
        #expect(throws: ServiceAccountProblem.self) { try ServiceAccount(keyFile: keyFile(testKey, pem: weak.pkcs8PEMRepresentation)) }
    }

    @Test("the token endpoint's answers: a token, a refusal, or retried; the token never in a problem")
    func tokenAnswers() {
        let token = "ya29.c.SECRET-TOKEN-abcdef"
        #expect(
            GoogleOAuth.answer(status: 200, body: Array(#"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#.utf8))
                == .token(token, expiresIn: 3599))
        #expect(
            GoogleOAuth.answer(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8))
                == .refused(error: "invalid_grant"))
        let retried: [(Int, String)] = [
            (200, #"{"access_token":"\#(token)","token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","expires_in":-5,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","expires_in":99999999999999999999,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","expires_in":3599.5,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"MAC"}"#),
            (200, #"{"access_token":"","expires_in":3599,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#),
            (200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer""#),
            (200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"} x"#),
            (200, "<html>503</html>"),
            (400, "<html>bad</html>"),
            (500, #"{"error":"internal"}"#),
        ]
        for (status, body) in retried {
            let answer = GoogleOAuth.answer(status: status, body: Array(body.utf8))
            guard case .retry(let problem) = answer else {
                Issue.record("\(status) \(body): \(answer)")
                continue
            }
            #expect(!problem.contains("SECRET"), "\(problem)")
        }
        #expect(GoogleOAuth.form(assertion: "a.b.c") == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b.c")
    }
}

extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
