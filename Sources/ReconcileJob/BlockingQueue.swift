import Foundation

/// A bounded FIFO handing work between threads; `push` waits while full, `pop` while empty.
final class BlockingQueue<Element>: @unchecked Sendable {
    private var items: [Element] = []
    private var head = 0
    private let capacity: Int
    private let condition = NSCondition()
    private var closed = false

    init(capacity: Int) { self.capacity = capacity }

    /// Returns false when the queue was closed (the consumer left).
    @discardableResult
    func push(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count - head >= capacity && !closed { condition.wait() }
        guard !closed else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    /// Waits up to `timeoutMs` for an item; nil on timeout or when closed and drained.
    func pop(timeoutMs: Int) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while items.count == head && !closed {
            if !condition.wait(until: deadline) { break }
        }
        return takeLocked()
    }

    /// Everything queued now (waits up to `timeoutMs` for the first item).
    func popAll(timeoutMs: Int) -> [Element] {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while items.count == head && !closed {
            if !condition.wait(until: deadline) { break }
        }
        let out = Array(items[head...])
        items.removeAll(keepingCapacity: true)
        head = 0
        condition.broadcast()
        return out
    }

    func tryPop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return takeLocked()
    }

    private func takeLocked() -> Element? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
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
        return closed && head == items.count
    }
}
