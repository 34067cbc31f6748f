// What the job does with one answer of Google's APIs (the Play Developer API, the token endpoint's
// callers, Pub/Sub): the classes the transport acts on. Google's error body is
// `{"error":{"code","message","status","errors":[{"domain","reason","message"}]}}`; only its
// `reason` (a word) and status are kept, sanitized: a message may echo what was asked.

import Foundation
import Reconciliation
import StrictJSON

/// The class of one Google answer.
public enum PlayOutcome: Sendable, Equatable {
    /// 2xx: a body to read strictly (garbage is retried, never believed).
    case ok(body: [UInt8])
    /// 401, or 403 (the service account lacks the app's rights): doubted, asked again a second later
    /// with a fresh token; confirmed, Play is skipped tonight (the contract's rule).
    case unauthorized(problem: String)
    /// 404: Google knows no such purchase token or order (`reason` when the body names one).
    case notFound(reason: String?)
    /// 410: the token is no longer valid (old or gone): no rejection on its own, left unresolved.
    case gone
    /// 429: nothing more to the bucket before `untilMs` (nil: no readable Retry-After).
    case rateLimited(untilMs: Int64?)
    /// 5xx, 408, or a 2xx the reader refuses: back off and retry; unresolved after the attempts.
    case retry(problem: String)
    /// Any other 4xx: Google will not answer this request.
    case refused(status: Int, problem: String)
}

public enum PlayAPI {
    /// Classifies an answer. `retryAfter` is the header: seconds, or an HTTP date (RFC 9110);
    /// `nowMs` turns seconds into a time.
    public static func classify(httpStatus: Int, body: [UInt8], retryAfter: String?, nowMs: Int64) -> PlayOutcome {
        switch httpStatus {
        case 200...299:
            return .ok(body: body)
        case 401, 403:
            return .unauthorized(problem: "Google answered HTTP \(httpStatus)" + shown(errorReason(body)))
        case 404 where !isGoogleError(body, status: 404), 410 where !isGoogleError(body, status: 410):
            // A proxy's or a wrong PLAY_API_URL's 404 says nothing of the token: never believed.
            return .retry(problem: "HTTP \(httpStatus) without Google's error body (check PLAY_API_URL)")
        case 404:
            return .notFound(reason: errorReason(body))
        case 410:
            return .gone
        case 429:
            return .rateLimited(untilMs: retryAfter.flatMap { parseRetryAfter($0, nowMs: nowMs) })
        case 408, 500...599:
            return .retry(problem: "Google answered HTTP \(httpStatus)" + shown(errorReason(body)))
        default:
            return .refused(status: httpStatus, problem: "Google refused the request: HTTP \(httpStatus)" + shown(errorReason(body)))
        }
    }

    private static func shown(_ reason: String?) -> String { reason.map { " (\($0))" } ?? "" }

    /// Whether `body` is Google's error body for `status`: `{"error":{"code":<status>,…}}`.
    static func isGoogleError(_ body: [UInt8], status: Int) -> Bool {
        let read = PlayObject.reading(body) { (o) throws(PlayGarbage) -> Int64? in
            try o.object("error")?.integer("code", in: 100...599)
        }
        if case .success(let code?) = read { return code == Int64(status) }
        return false
    }

    /// `error.errors[0].reason`, else `error.status` (`purchaseTokenNotFound`, `RESOURCE_EXHAUSTED`):
    /// letters, digits and `_` only, at most 64; nil for any other body.
    public static func errorReason(_ body: [UInt8]) -> String? {
        let read = PlayObject.reading(body) { (o) throws(PlayGarbage) -> String? in
            guard let error = try o.object("error") else { return nil }
            let word: (UInt8) -> Bool = { PlayCharacters.isAlphanumeric($0) || $0 == 95 }
            if let first = try error.objects("errors", limit: 100).first, let reason = try first.string("reason", limit: 64, allowed: word)
            {
                return reason
            }
            return try error.string("status", limit: 64, allowed: word)
        }
        if case .success(let reason) = read { return reason }
        return nil
    }

    /// `Retry-After` as Unix ms: delay-seconds (at most a day) or an IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`); nil for anything else.
    public static func parseRetryAfter(_ text: String, nowMs: Int64) -> Int64? {
        let t = text.trimmingCharacters(in: .whitespaces)
        if !t.isEmpty, t.utf8.count <= 6, t.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let seconds = Int64(t), seconds <= 86_400 {
            return nowMs + seconds * 1000
        }
        // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
        let parts = t.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", parts[1].count == 2, parts[3].count == 4, let day = Int64(parts[1]),
            let month = months.firstIndex(of: String(parts[2])), let year = Int64(parts[3]), (1970...9999).contains(year)
        else { return nil }
        let time = parts[4].split(separator: ":")
        guard time.count == 3, let h = Int64(time[0]), let m = Int64(time[1]), let s = Int64(time[2]), (1...31).contains(day), h < 24,
            m < 60, s < 61
        else { return nil }
        return UTC.millis(year: year, month: Int64(month + 1), day: day, hour: h, minute: m, second: s)
    }
}
