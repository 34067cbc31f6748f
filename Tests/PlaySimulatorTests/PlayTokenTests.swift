// The token endpoint and the gate in front of every API call: an assertion checked as Google
// does, an access token that works until it expires, and Google's 401 and 403 bodies.

import Foundation
import PlaySimulator
import PlayStore
import Testing

/// The JSON object of a body (nil when it is not one).
func jsonObject(_ body: [UInt8]) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
}

@Suite("Google Play simulator: token endpoint and authentication")
struct PlayTokenTests {
    @Test("a good assertion gets a bearer token that opens the API")
    func goodAssertion() throws {
        let w = try PlayWorld()
        let r = try w.tokenCall(form: GoogleOAuth.form(assertion: w.assertion()))
        #expect(r.status == 200)
        let json = try #require(jsonObject(r.body))
        #expect(json["token_type"] as? String == "Bearer")
        #expect(json["expires_in"] as? Int == 3600)
        guard case .token(let token, let expiresIn) = GoogleOAuth.answer(status: r.status, body: r.body) else {
            Issue.record("PlayStore does not read the token answer: \(r.text)")
            return
        }
        #expect(token.hasPrefix("sim-") && token.count == 4 + 64)
        #expect(expiresIn == 3600)
        let call = try w.get(PlayWorld.purchasePath("tok-bought-1"), authorization: "Bearer " + token)
        #expect(call.status == 200)
        #expect(w.service.calls.map(\.endpoint) == [.token, .productPurchase])
    }

    @Test("the token lifetime is the configured one")
    func lifetime() throws {
        let w = try PlayWorld { $0.tokenLifetimeSeconds = 120 }
        let r = try w.tokenCall(form: GoogleOAuth.form(assertion: w.assertion()))
        #expect(GoogleOAuth.answer(status: r.status, body: r.body).expiresIn == 120)
    }

    @Test(
        "a bad assertion or form is refused with OAuth's error",
        arguments: [
            ("forged: another key", "invalid_grant", "signature"),
            ("expired", "invalid_grant", "expired"),
            ("wrong audience", "invalid_grant", "aud"),
            ("wrong grant type", "unsupported_grant_type", "Invalid grant_type: password"),
            ("no assertion", "invalid_request", "assertion"),
            ("assertions refused", "invalid_grant", "Invalid JWT Signature."),
        ])
    func refused(_ args: (String, String, String)) throws {
        let (what, error, description) = args
        let w = try PlayWorld()
        let form: String
        switch what {
        case "forged: another key": form = GoogleOAuth.form(assertion: w.assertion(account: PlayKeys.forger))
        case "expired": form = GoogleOAuth.form(assertion: w.assertion(at: w.clock.seconds - 7200))
        case "wrong audience":
            form = GoogleOAuth.form(assertion: w.assertion(audience: "https://accounts.google.com/o/oauth2/token"))
        case "wrong grant type": form = "grant_type=password&assertion=" + w.assertion()
        case "no assertion": form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
        default:
            w.service.setRefuseAssertions(true)
            form = GoogleOAuth.form(assertion: w.assertion())
        }
        let r = try w.tokenCall(form: form)
        #expect(r.status == 400, "\(what)")
        #expect(GoogleOAuth.answer(status: r.status, body: r.body) == .refused(error: error), "\(what)")
        let said = try #require(jsonObject(r.body)?["error_description"] as? String)
        #expect(said.contains(description), "\(what): \(said)")
        #expect(w.service.calls.last?.status == 400)
    }

    @Test("an API call without a good token gets Google's 401")
    func unauthenticated() throws {
        let w = try PlayWorld()
        let path = PlayWorld.purchasePath("tok-bought-1")
        let pubsubOnly = try w.accessToken(scopes: [GoogleOAuth.pubsubScope])
        let good = try w.accessToken()
        let cases: [(String, String)] = [
            ("", "no Authorization header"), ("Basic Zm9vOmJhcg==", "not a bearer token"),
            ("Bearer sim-0000", "unknown token"), ("Bearer " + pubsubOnly, "no androidpublisher scope"),
        ]
        for (authorization, why) in cases {
            let r = try w.get(path, authorization: authorization)
            #expect(r.status == 401, "\(why)")
            #expect(
                r.text == #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","#
                    + #""status":"UNAUTHENTICATED"}}"#)
            #expect(w.service.calls.last?.note == "401:" + why)
        }
        #expect(try w.get(path, authorization: "Bearer " + good).status == 200)
        w.clock.advance(ms: 3600 * 1000)
        let expired = try w.get(path, authorization: "Bearer " + good)
        #expect(expired.status == 401)
        #expect(w.service.calls.last?.note == "401:expired token")
    }

    @Test("a package the account may not read gets Google's 403")
    func forbidden() throws {
        let w = try PlayWorld { $0.allowedPackages = [PlayWorld.game] }
        let r = try w.get(PlayWorld.purchasePath("tok-other-app", package: PlayWorld.otherApp))
        #expect(r.status == 403)
        let error = try #require(jsonObject(r.body)?["error"] as? [String: Any])
        #expect(error["code"] as? Int == 403)
        #expect(
            error["message"] as? String
                == "The current user has insufficient permissions to perform the requested operation.")
        let first = try #require((error["errors"] as? [[String: Any]])?.first)
        #expect(first["domain"] as? String == "androidpublisher")
        #expect(first["reason"] as? String == "permissionDenied")
        let stranger = try w.get(PlayWorld.purchasePath("tok-bought-1", package: "com.rival.app"))
        #expect(stranger.status == 403)
        #expect(try w.get(PlayWorld.purchasePath("tok-bought-1")).status == 200)
    }

    @Test("paths that are not Google's stay Apple's")
    func otherPaths() throws {
        let w = try PlayWorld()
        let apple = try RawHTTP.request(port: w.sim.port, method: "GET", path: "/nowhere")
        #expect(apple.status == 404)
        #expect(apple.text == "Not Found")
        let verify = try RawHTTP.request(
            port: w.sim.port, method: "POST", path: "/production/verifyReceipt", body: Array("{}".utf8))
        #expect(verify.status == 200)
        #expect(jsonObject(verify.body)?["status"] as? Int == 21000)
        let unserved = try w.get("/androidpublisher/v3/applications/com.example.game/inappproducts")
        #expect(unserved.status == 404)
        #expect(jsonObject(unserved.body)?["error"] != nil)
        #expect(w.service.calls.allSatisfy { $0.endpoint != nil || $0.status == 404 })
    }
}

extension GoogleOAuth.Answer {
    /// The token's lifetime, when it is one.
    var expiresIn: Int64? {
        if case .token(_, let seconds) = self { return seconds }
        return nil
    }
}
