import AppStore
import JobStore
import Reconciliation

/// The lines the transport stops with, and how it reads a `Retry-After`: the same for every endpoint
/// and every exchange.
package enum TransportLines {
    /// Apple counts its limits per hour: a `Retry-After` further ahead than that is not Apple's
    /// (a proxy's, a broken one) and is not waited for; the request backs off as after a 5xx.
    package static let longestRetryAfterMs: Int64 = 3_600_000

    /// The time a 429's `Retry-After` (UNIX ms) holds its endpoint until, or nil when it does
    /// not (none, or past the longest wait believed).
    package static func believable(retryAfter untilMs: Int64?, nowMs: Int64) -> Int64? {
        guard let untilMs, untilMs - nowMs <= longestRetryAfterMs else { return nil }
        return untilMs
    }

    /// The line of exit 78 for an answer that is ours to fix.
    package static func configurationError(_ answer: Answer) -> JobError {
        // The Server API's 401 has no status: its problem says what to check.
        if answer.status == nil, let problem = answer.problem { return JobError(.configuration, problem) }
        return JobError(
            .configuration,
            "the App Store answered status \(answer.status ?? 0) ("
                + (answer.status == 21004 ? "the shared secret does not match: check IAP_SHARED_SECRET" : "our request was malformed")
                + "); verification stopped, no receipt was blamed")
    }

    /// The line of exit 78 when Apple refused the key of `apps` (every app of the run), confirmed.
    package static func unauthorized(apps: [String]) -> String {
        let which = apps.count == 1 ? "for \(apps[0])" : "for every app (\(apps.joined(separator: ", ")))"
        return "the App Store Server API refused our token \(which) (HTTP 401, again with a fresh token a second later): "
            + "check IAP_ISSUER_ID, IAP_KEY_ID, IAP_PRIVATE_KEY_FILE (or IAP_APP_KEYS) and that the key may be used "
            + "for the app; verification stopped, no receipt was blamed"
    }
}
