import Foundation

/// The apps of a night (`IAP_BUNDLE_IDS`) as the App Store transport meets them: the requests sent
/// to each (summary.json `apps`, the line per app at the end of a run), and the apps whose
/// In-App Purchase key Apple refused (a 401 confirmed with a fresh token). A refused app
/// is asked nothing more this night; its work is left for the next, nothing of it is blamed. Every
/// transport run of the night shares one (the stages run on several threads: a lock).
public final class NightApps: @unchecked Sendable {
    /// In the order of `IAP_BUNDLE_IDS`.
    public let apps: [String]
    private let lock = NSLock()
    private var refused: Set<String> = []
    private var requests: [String: [String: Int]] = [:]
    private var unasked: [String: Int] = [:]

    public init(apps: [String]) { self.apps = apps }

    /// A request was sent to `app`'s endpoint `endpoint` (`transaction_history`, …).
    func sent(app: String, endpoint: String) {
        lock.withLock { requests[app, default: [:]][endpoint, default: 0] += 1 }
    }

    /// Apple refused `app`'s key, confirmed. True when now every app of the night is refused.
    func refuse(_ app: String) -> Bool {
        lock.withLock {
            refused.insert(app)
            return apps.allSatisfy(refused.contains)
        }
    }

    func isRefused(_ app: String) -> Bool { lock.withLock { refused.contains(app) } }

    /// A piece of work of a refused app (a receipt, a page, a customer) was dropped unasked.
    func dropped(app: String) { lock.withLock { unasked[app, default: 0] += 1 } }

    /// Work dropped unasked per refused app (asked again by the next night).
    public var droppedCounts: [String: Int] { lock.withLock { unasked } }

    /// The refused apps, in the order of `IAP_BUNDLE_IDS`.
    public var refusedApps: [String] { lock.withLock { apps.filter(refused.contains) } }

    /// Requests per app, per endpoint.
    public var requestCounts: [String: [String: Int]] { lock.withLock { requests } }
}

/// One transport run's apps whose last answer was a 401: Apple answers an occasional
/// stray 401, so nothing goes to such an app for a second, then the request goes again with a
/// freshly signed token; a 401 to a request sent after the doubt began confirms the refusal, and
/// any other answer to one clears the doubt. Times are monotonic nanoseconds.
struct UnauthorizedDoubts {
    /// A 401 is believed after this wait and a fresh token.
    static let confirmAfterNs: UInt64 = 1_000_000_000
    private var since: [String: UInt64] = [:]

    enum Verdict: Equatable {
        /// Send the request again at `due`; `firstDoubt`: the doubt began now (sign a new token).
        case askAgain(due: UInt64, firstDoubt: Bool)
        /// The request was sent after the doubt began, with a fresh token: Apple refuses the key.
        case confirmed
    }

    func isDoubted(_ app: String) -> Bool { since[app] != nil }

    /// When a request to `app` may go, if not now.
    func heldUntil(_ app: String, now: UInt64) -> UInt64? {
        guard let start = since[app], now < start + Self.confirmAfterNs else { return nil }
        return start + Self.confirmAfterNs
    }

    /// A 401 to a request to `app` sent at `sentAt`.
    mutating func unauthorized(_ app: String, sentAt: UInt64, now: UInt64) -> Verdict {
        if let start = since[app] {
            return sentAt > start ? .confirmed : .askAgain(due: start + Self.confirmAfterNs, firstDoubt: false)
        }
        since[app] = now
        return .askAgain(due: now + Self.confirmAfterNs, firstDoubt: true)
    }

    /// Any other answer to a request to `app` sent at `sentAt`: one sent during the doubt clears it.
    mutating func answered(_ app: String, sentAt: UInt64) {
        if let start = since[app], sentAt > start { since[app] = nil }
    }
}
