import Foundation

/// What signs a request's bearer token: App Store Connect's team key (one for the team), or the
/// In-App Purchase key of one app (its token's `bid`). verifyReceipt has none (the shared secret
/// travels in the body). A 401's doubt, the token's renewal and the refusal follow one path for
/// every credential (`TransportMachine`).
package enum Credential: Hashable, Sendable, CustomStringConvertible {
    /// App Store Connect's team key: the sales reports.
    case teamKey
    /// An app's In-App Purchase key (`IAP_APP_KEYS`, else the one key with the app's `bid`).
    case app(String)
    /// Google Play's service account (`PLAY_SERVICE_ACCOUNT_FILE`): its access token, for every
    /// package. Refused (a 401 or 403 confirmed with a fresh token, or the token endpoint's
    /// `invalid_grant`), Play is skipped for the run and Apple goes on.
    case playAccount
    /// The same account asking the Play Developer API about one package: a 401 or 403 confirmed
    /// there refuses that package only (the account may lack access to one app of several); Play is
    /// skipped when every package asked was refused, or the token endpoint refuses the account.
    case playPackage(String)

    /// Google Play's service account, for any package or none.
    package var isPlay: Bool {
        switch self {
        case .playAccount, .playPackage: return true
        case .teamKey, .app: return false
        }
    }

    /// How a line names it.
    package var description: String {
        switch self {
        case .teamKey: return "the App Store Connect team key"
        case .app(let app): return app
        case .playAccount: return "the Google Play service account"
        case .playPackage(let package): return "the Google Play service account for \(package)"
        }
    }
}

/// One transport run's credentials whose last answer was a 401: Apple answers an occasional
/// stray 401, so nothing goes with such a credential for a second, then the request goes again with a
/// freshly signed token; a 401 to a request sent after the doubt began confirms the refusal, and
/// any other answer to one clears the doubt. Times are monotonic nanoseconds.
struct UnauthorizedDoubts {
    /// A 401 is believed after this wait and a fresh token.
    static let confirmAfterNs: UInt64 = 1_000_000_000
    private var since: [Credential: UInt64] = [:]

    enum Verdict: Equatable {
        /// Send the request again at `due`; `firstDoubt`: the doubt began now (sign a new token).
        case askAgain(due: UInt64, firstDoubt: Bool)
        /// The request was sent after the doubt began, with a fresh token: Apple refuses the key.
        case confirmed
    }

    func isDoubted(_ credential: Credential) -> Bool { since[credential] != nil }

    /// When a request with `credential` may go, if not now.
    func heldUntil(_ credential: Credential, now: UInt64) -> UInt64? {
        guard let start = since[credential], now < start + Self.confirmAfterNs else { return nil }
        return start + Self.confirmAfterNs
    }

    /// A 401 to a request with `credential` sent at `sentAt`.
    mutating func unauthorized(_ credential: Credential, sentAt: UInt64, now: UInt64) -> Verdict {
        if let start = since[credential] {
            return sentAt > start ? .confirmed : .askAgain(due: start + Self.confirmAfterNs, firstDoubt: false)
        }
        since[credential] = now
        return .askAgain(due: now + Self.confirmAfterNs, firstDoubt: true)
    }

    /// Any other answer to a request with `credential` sent at `sentAt`: one sent during the doubt clears it.
    mutating func answered(_ credential: Credential, sentAt: UInt64) {
        if let start = since[credential], sentAt > start { since[credential] = nil }
    }
}
