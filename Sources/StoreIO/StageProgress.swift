import Foundation
import Synchronization

/// Progress lines for long stages on stderr: done/total, rate, retries. At most one line every
/// two seconds, and a last one at the end. Any thread may report; the state sits behind a mutex.
public final class StageProgress: Sendable {
    let stage: String
    let enabled: Bool

    private struct State {
        var total = 0
        var done = 0
        var retries = 0
        var lastPrint: UInt64 = 0
    }
    private let state = Mutex(State())
    private let started = DispatchTime.now().uptimeNanoseconds

    public init(stage: String, enabled: Bool) {
        self.stage = stage
        self.enabled = enabled
    }

    /// The number of items, once known.
    package func setTotal(_ n: Int) { state.withLock { $0.total = n } }

    /// `n` more done.
    package func tick(_ n: Int = 1) { report { $0.done += n } }

    /// The retries so far, shown on the progress line.
    package func note(retries: Int) { state.withLock { $0.retries = retries } }

    /// For stages that count rows rather than items with a known total.
    public func rows(_ n: Int) { report { $0.done = n } }

    /// The stage's last progress line.
    package func finish() {
        guard enabled else { return }
        let snapshot = state.withLock { $0 }
        guard snapshot.done > 0 else { return }
        print(line(snapshot) + " — done")
    }

    private func report(_ change: (inout State) -> Void) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due: State? = state.withLock { s in
            change(&s)
            guard now - max(s.lastPrint, started) >= 2_000_000_000 else { return nil }
            s.lastPrint = now
            return s
        }
        if let due { print(line(due)) }
    }

    private func line(_ s: State) -> String {
        let elapsed = max(0.001, Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        var text = "\(stage): \(s.done)"
        if s.total > 0 { text += "/\(s.total) (\(s.done * 100 / s.total)%)" }
        text += ", \(Int(Double(s.done) / elapsed))/s"
        if s.retries > 0 { text += ", \(s.retries) retries" }
        return text
    }

    private func print(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
