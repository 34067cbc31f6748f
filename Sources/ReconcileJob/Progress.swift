import Foundation

/// Progress lines for long stages on stderr: done/total, rate, retries. At most one line every
/// two seconds, and a last one at the end.
public final class Progress: @unchecked Sendable {
    let stage: String
    let enabled: Bool
    private let lock = NSLock()
    private var totalKnown = 0
    private var done = 0
    private var retries = 0
    private let started = Date()
    private var lastPrint = Date()

    public init(stage: String, enabled: Bool) {
        self.stage = stage
        self.enabled = enabled
    }

    /// The number of items, once known (set from another thread).
    func setTotal(_ n: Int) {
        lock.lock()
        totalKnown = n
        lock.unlock()
    }

    private var total: Int {
        lock.lock()
        defer { lock.unlock() }
        return totalKnown
    }

    func tick(_ n: Int = 1) {
        done += n
        maybePrint()
    }

    func note(retries: Int) { self.retries = retries }

    /// For stages that count rows rather than items with a known total.
    public func rows(_ n: Int) {
        done = n
        maybePrint()
    }

    private func maybePrint() {
        guard enabled, Date().timeIntervalSince(lastPrint) >= 2 else { return }
        lastPrint = Date()
        print(line())
    }

    func finish() {
        guard enabled, done > 0 else { return }
        print(line() + " — done")
    }

    private func line() -> String {
        let elapsed = max(0.001, Date().timeIntervalSince(started))
        let rate = Int(Double(done) / elapsed)
        var text = "\(stage): \(done)"
        if total > 0 { text += "/\(total) (\(done * 100 / total)%)" }
        text += ", \(rate)/s"
        if retries > 0 { text += ", \(retries) retries" }
        return text
    }

    private func print(_ text: String) {
        FileHandle.standardError.write((text + "\n").data(using: .utf8)!)
    }
}
