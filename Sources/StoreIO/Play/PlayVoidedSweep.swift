import AppStore
import PlayStore
import Reconciliation
import TransportCore

/// One package's sweep of Google's voided purchases list (refunds, chargebacks, revocations), from
/// a stored position to the moment the sweep began, every page in turn through the `Pager`. Google
/// keeps the list 30 days back: a position older than that starts at the oldest moment Google
/// still answers, and the span in between is lost for good (`lostSpan`, reported by the night). A
/// first sweep (no position) goes 30 days back. The position moves to `end` only once the sweep
/// `finished`: a sweep cut short (Google refusing, a page's attempts used up, a kill) is done again
/// whole next time, and storing a record twice must change nothing (the caller keys each record).
package final class PlayVoidedSweep: Conversation {
    /// How far back Google answers ("cannot be older than 30 days"); the sweep asks a minute less,
    /// so the clocks' skew never makes the first request too old.
    package static let retentionMs: Int64 = 30 * 86_400_000
    /// The clocks' skew allowed: the sweep ends this long before the job's now (Google refuses an
    /// end after its own now), and starts no later than this inside the retention.
    static let marginMs: Int64 = 60_000
    /// Each sweep starts this long before the stored position: a record Google lists a little late
    /// is read by the next sweep (storing a record again changes nothing).
    package static let overlapMs: Int64 = 600_000

    /// The app swept.
    package let package: String
    /// The first moment asked (Unix ms).
    package let start: EpochMillis
    /// The last moment asked: the sweep's beginning (less the skew margin); the next position once
    /// it finished.
    package let end: EpochMillis
    /// The span between an old position and `start` that Google no longer lists; nil: none lost.
    package let lostSpan: (from: EpochMillis, to: EpochMillis)?
    /// Every page was read.
    package private(set) var finished = false
    /// Why the sweep was given up, when it was.
    package private(set) var problem: String?
    /// Records read so far.
    package private(set) var records = 0
    private var pageToken: String?
    private let store: ([PlayVoided]) throws -> Void

    /// The sweep of `package` from `position` (nil: a first sweep) at `now`; `store` keeps each
    /// page's records (throwing stops the run).
    package init(package: String, position: EpochMillis?, now: EpochMillis, store: @escaping ([PlayVoided]) throws -> Void) {
        self.package = package
        self.store = store
        end = now - Self.marginMs
        let oldest = now - Self.retentionMs + Self.marginMs
        start = min(max((position ?? oldest) - (position == nil ? 0 : Self.overlapMs), oldest), end)
        lostSpan = position.flatMap { $0 < oldest ? (from: $0, to: oldest) : nil }
    }

    /// The next page's request: the window, then Google's page token.
    package var request: AppStoreRequest {
        // The package passed its check when the settings were read, a page token when its page was
        // read, and start <= end: the request is always made.
        guard let request = PlayRows.voidedPurchases(package: package, startTime: start, endTime: end, pageToken: pageToken) else {
            preconditionFailure("a voided purchases request of a checked package and page token")
        }
        return request
    }

    /// Reads one page (garbage is thrown, asked again, never stored), stores its records, and says
    /// whether it was the last.
    package func page(_ body: [UInt8]) throws -> Bool {
        let page: PlayVoidedPage
        switch PlayVoidedPage.read(body) {
        case .success(let p): page = p
        case .failure(let garbage): throw ServerAPIGarbage("voided purchases: \(garbage.problem)")
        }
        guard page.nextPageToken.map(PlayPaths.isPurchaseToken) ?? true else {
            throw ServerAPIGarbage("voided purchases: a next page token that is not one")
        }
        try store(page.voided)
        records += page.voided.count
        pageToken = page.nextPageToken
        finished = page.nextPageToken == nil
        return finished
    }

    /// Google would not answer the sweep: what was stored stays, the position does not move.
    package func abandon(_ problem: String) { self.problem = problem }
}
