// Google's OAuth 2.0 token endpoint for a service account ("Using OAuth 2.0 for Server to Server
// Applications"): the form `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=JWT`,
// the assertion checked as Google does (PlayStore's `AssertionCheck`: RS256 by the account's key,
// `iss`, `aud`, `iat`, `exp`), then an access token for the assertion's scopes. A refusal is
// OAuth's `{"error","error_description"}`; the description says which check failed, never the
// assertion.

import PlayStore
import StrictJSON

extension PlayState {
    /// The answer to `POST /token` and the call's note.
    mutating func token(_ request: PlayRequest, now: Int64) -> Decided {
        guard let text = String(validating: request.body, as: UTF8.self), let form = FormData.parse(text) else {
            return (GoogleError.oauth(400, "invalid_request", "The request body is not a form."), "400:not a form")
        }
        let grant = form.first { $0.0 == "grant_type" }?.1 ?? ""
        guard grant == GoogleOAuth.grantType else {
            let shown = Sanitized.text(grant.utf8, limit: 60)
            return (GoogleError.oauth(400, "unsupported_grant_type", "Invalid grant_type: \(shown)"), "400:grant type")
        }
        guard let assertion = form.first(where: { $0.0 == "assertion" })?.1, !assertion.isEmpty else {
            return (
                GoogleError.oauth(400, "invalid_request", "Missing required parameter: assertion"), "400:no assertion"
            )
        }
        // The key deleted in the Cloud console: Google's own words for it.
        if config.refuseAssertions {
            return (GoogleError.oauth(400, "invalid_grant", "Invalid JWT Signature."), "400:assertions refused")
        }
        let checked = AssertionCheck.verify(
            assertion, key: config.publicKey, issuer: config.clientEmail, audience: config.tokenAudience,
            now: now / 1000)
        switch checked {
        case .failure(let garbage):
            return (GoogleError.oauth(400, "invalid_grant", garbage.problem), "400:" + garbage.problem)
        case .success(let claims):
            if tokens.count > 10_000 { tokens = tokens.filter { $0.value.expiresMs > now } }
            var random = SystemRandomNumberGenerator()
            let hex = (0..<4).map { _ in String(random.next() as UInt64, radix: 16) }
                .map { String(repeating: "0", count: 16 - $0.count) + $0 }.joined()
            let token = "sim-" + hex
            tokens[token] = (now + config.tokenLifetimeSeconds * 1000, claims.scopes)
            var w = JSONWriter(capacity: 128)
            w.beginObject()
            w.field("access_token", token)
            w.field("expires_in", config.tokenLifetimeSeconds)
            w.field("token_type", "Bearer")
            w.endObject()
            return (.json(200, w.bytes), "ok")
        }
    }
}
