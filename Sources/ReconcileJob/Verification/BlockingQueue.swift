import DequeModule
import Foundation

/// A bounded FIFO handing work between threads; `push` waits while full, `pop` while empty.
///
/// Waiting needs a condition variable, which the standard library's `Synchronization` does not
/// have: an `NSCondition` guards the storage, and every access holds it (hence `@unchecked`).
final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    private var items = Deque<Element>()
    private let capacity: Int
    private let condition = NSCondition()
    private var closed = false

    init(capacity: Int) { self.capacity = capacity }

    /// Returns false when the queue was closed (the consumer left).
    @discardableResult
    func push(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// Waits up to `timeoutMs` for an item; nil on timeout or when closed and drained.
    func pop(timeoutMs: Int) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        waitForItems(timeoutMs: timeoutMs)
        return takeLocked()
    }

    /// Everything queued now (waits up to `timeoutMs` for the first item).
    func popAll(timeoutMs: Int) -> [Element] {
        condition.lock()
        defer { condition.unlock() }
        waitForItems(timeoutMs: timeoutMs)
        let out = Array(items)
        items.removeAll(keepingCapacity: true)
        condition.broadcast()
        return out
    }

    func tryPop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return takeLocked()
    }

    private func waitForItems(timeoutMs: Int) {
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while items.isEmpty && !closed {
            if !condition.wait(until: deadline) { break }
        }
    }

    private func takeLocked() -> Element? {
        guard let item = items.popFirst() else { return nil }
        condition.broadcast()
        return item
    }

    /// No more items will come (producer side) or none are wanted (consumer side).
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    var isClosedAndEmpty: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed && items.isEmpty
    }
}
