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
