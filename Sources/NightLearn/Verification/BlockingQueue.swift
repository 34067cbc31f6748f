import DequeModule
import Foundation

/// A bounded FIFO handing work between threads; `push` waits while full, `pop` while empty.
///
/// Waiting needs a condition variable, which the standard library's `Synchronization` does not
/// have: an `NSCondition` guards the storage, and every access holds it (hence `@unchecked`).
///
/// Wake-ups are what cost here, not the lock: a thread is woken only when it waits, and a
/// producer waiting on a full queue only once the queue has drained to half its capacity (it then
/// refills half a queue in one go instead of waking for every item taken). An item taken is
/// released at once (the night's queues carry batches of families of megabytes).
package final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    private var items = Deque<Element>()
    private let capacity: Int
    private let condition = NSCondition()
    private var closed = false
    /// Threads waiting in `push` (queue full) and in `pop`/`popAll` (queue empty).
    private var waitingProducers = 0
    private var waitingConsumers = 0
    /// With `weight`: what the queued items weigh together, and the most a producer adds to
    /// (items of very different sizes: a queue of app receipts holds 1,024 of 4 KB or 80 of 100 KB).
    private let weight: (@Sendable (Element) -> Int)?
    private let weightLimit: Int
    private var queuedWeight = 0

    /// A queue that holds at most `capacity` items.
    package init(capacity: Int) {
        self.capacity = capacity
        weight = nil
        weightLimit = .max
    }

    /// A queue that holds at most `capacity` items and, once it holds one, no more than about
    /// `weightLimit` by `weight` (a producer waits while the queued items weigh that much).
    package init(capacity: Int, weightLimit: Int, weight: @escaping @Sendable (Element) -> Int) {
        self.capacity = capacity
        self.weight = weight
        self.weightLimit = weightLimit
    }

    private func add(_ item: Element) { if let weight { queuedWeight += weight(item) } }
    private func remove(_ item: Element) { if let weight { queuedWeight -= weight(item) } }

    /// Returns false when the queue was closed (the consumer left).
    @discardableResult
    package func push(_ item: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard waitForRoom() else { return false }
        items.append(item)
        add(item)
        wakeConsumers()
        return true
    }

    /// Pushes `batch` in order with one wake-up of the consumer; waits while the queue is full,
    /// and may then exceed the capacity by less than the batch. False when the queue was closed.
    @discardableResult
    package func push(contentsOf batch: [Element]) -> Bool {
        guard !batch.isEmpty else { return true }
        condition.lock()
        defer { condition.unlock() }
        guard waitForRoom() else { return false }
        items.append(contentsOf: batch)
        for item in batch { add(item) }
        wakeConsumers()
        return true
    }

    /// `push(contentsOf:)` moving the items out of `batch` (left empty): no copy of each, then its
    /// release with the batch.
    @discardableResult
    package func push(moving batch: inout [Element]) -> Bool {
        guard !batch.isEmpty else { return true }
        condition.lock()
        defer { condition.unlock() }
        guard waitForRoom() else { return false }
        batch.reverse()
        while let item = batch.popLast() {
            add(item)
            items.append(item)
        }
        wakeConsumers()
        return true
    }

    /// Waits up to `timeoutMs` for an item; nil on timeout or when closed and drained.
    package func pop(timeoutMs: Int) -> Element? {
        condition.lock()
        defer { condition.unlock() }
        awaitItems(timeoutMs: timeoutMs)
        return takeLocked()
    }

    /// Up to `max` items, in order (waits up to `timeoutMs` for the first).
    /// With `maxWeight` (a queue made with a weight): no more items than weigh that much together,
    /// and always the first.
    package func pop(max: Int, maxWeight: Int = .max, timeoutMs: Int) -> [Element] {
        condition.lock()
        defer { condition.unlock() }
        awaitItems(timeoutMs: timeoutMs)
        var n = min(max, items.count)
        if let weight, maxWeight < .max {
            var taken = 0, k = 0
            while k < n {
                taken += weight(items[k])
                k += 1
                if taken >= maxWeight { break }
            }
            n = k
        }
        let out = take(n)
        for item in out { remove(item) }
        if n > 0 { wakeProducers() }
        return out
    }

    /// Everything queued now (waits up to `timeoutMs` for the first item).
    func popAll(timeoutMs: Int) -> [Element] {
        condition.lock()
        defer { condition.unlock() }
        awaitItems(timeoutMs: timeoutMs)
        let out = take(items.count)
        queuedWeight = 0
        wakeProducers()
        return out
    }

    /// Waits up to `timeoutMs` for an item, takes none: how many are queued (0 on timeout, or
    /// when closed and drained).
    func waitForItems(timeoutMs: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        awaitItems(timeoutMs: timeoutMs)
        return items.count
    }

    func tryPop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        return takeLocked()
    }

    /// Holds the lock. False when the queue is closed.
    private func waitForRoom() -> Bool {
        while (items.count >= capacity || (queuedWeight >= weightLimit && !items.isEmpty)) && !closed {
            waitingProducers += 1
            condition.wait()
            waitingProducers -= 1
        }
        return !closed
    }

    private func awaitItems(timeoutMs: Int) {
        let deadline = Date(timeIntervalSinceNow: Double(timeoutMs) / 1000)
        while items.isEmpty && !closed {
            waitingConsumers += 1
            let signalled = condition.wait(until: deadline)
            waitingConsumers -= 1
            if !signalled { break }
        }
    }

    /// The first `n` items, moved out of the queue (a copy of each, then the queue's release of it,
    /// retained and released every string of the night's records once more).
    private func take(_ n: Int) -> [Element] {
        var out: [Element] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            guard let item = items.popFirst() else { break }
            out.append(item)
        }
        return out
    }

    private func takeLocked() -> Element? {
        guard let item = items.popFirst() else { return nil }
        remove(item)
        wakeProducers()
        return item
    }

    private func wakeConsumers() {
        if waitingConsumers > 0 { condition.broadcast() }
    }

    private func wakeProducers() {
        if waitingProducers > 0 && items.count <= capacity / 2 && queuedWeight <= weightLimit / 2 { condition.broadcast() }
    }

    /// No more items will come (producer side) or none are wanted (consumer side).
    package func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Closed, and every item taken.
    package var isClosedAndEmpty: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed && items.isEmpty
    }
}
