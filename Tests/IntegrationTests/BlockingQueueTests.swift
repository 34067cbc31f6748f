import Foundation
import Testing
@testable import NightLearn

/// The queue between the reader, the verifiers and the answer writer, and between the
/// night's stages: single items and batches mix, and nothing is lost, doubled or reordered.
struct BlockingQueueTests {
    @Test("single items and batches, popped one, a few and all at a time: the order they were pushed in")
    func order() {
        let q = BlockingQueue<Int>(capacity: 10_000)
        var pushed: [Int] = [], popped: [Int] = []
        var next = 0
        func batch(_ n: Int) -> [Int] { defer { next += n }; return Array(next..<(next + n)) }
        for round in 0..<50 {
            var b = batch(round % 7 * 31)
            pushed += b
            if round % 2 == 0 {
                #expect(q.push(contentsOf: b))
            } else {
                #expect(q.push(moving: &b) && b.isEmpty, "moved out, in order")
            }
            for _ in 0..<(round % 5) { pushed.append(next); #expect(q.push(next)); next += 1 }
            switch round % 4 {
            case 0: popped += q.pop(max: 100, timeoutMs: 0)
            case 1: if let one = q.tryPop() { popped.append(one) }
            case 2: popped += q.popAll(timeoutMs: 0)
            default: if let one = q.pop(timeoutMs: 0) { popped.append(one) }
            }
        }
        #expect(q.waitForItems(timeoutMs: 0) == pushed.count - popped.count)
        popped += q.popAll(timeoutMs: 0)
        #expect(popped == pushed)
        #expect(q.waitForItems(timeoutMs: 0) == 0)
        #expect(q.popAll(timeoutMs: 0).isEmpty)
    }

    @Test("an item taken is released at once: the queue keeps nothing it handed out (the night's batches are megabytes)")
    func releasesWhatItHandsOut() {
        let q = BlockingQueue<Box>(capacity: 8)
        weak var one: Box?, few: Box?, all: Box?
        do {
            let a = Box(), b = Box(), c = Box()
            (one, few, all) = (a, b, c)
            q.push(a)
            var moved = [b, Box()]
            q.push(moving: &moved)
            q.push(c)
        }
        _ = q.pop(timeoutMs: 0)
        #expect(one == nil)
        _ = q.pop(max: 2, timeoutMs: 0)
        #expect(few == nil)
        #expect(all != nil, "still queued")
        _ = q.popAll(timeoutMs: 0)
        #expect(all == nil)
    }

    @Test("four producers, two consumers, a small capacity: every item arrives once, each producer's in its order")
    func concurrent() {
        let q = BlockingQueue<Int>(capacity: 64)
        let producers = 4, perProducer = 20_000
        let done = DispatchGroup()
        for p in 0..<producers {
            done.enter()
            Thread {
                var i = 0
                while i < perProducer {
                    // Alternately one item and a batch of up to 100 (larger than half the capacity).
                    if i % 2 == 0 {
                        q.push(p * perProducer + i)
                        i += 1
                    } else {
                        let n = min(perProducer - i, i % 100 + 1)
                        q.push(contentsOf: Array((p * perProducer + i)..<(p * perProducer + i + n)))
                        i += n
                    }
                }
                done.leave()
            }.start()
        }
        let received = Taken()
        let consumers = DispatchGroup()
        for c in 0..<2 {
            consumers.enter()
            Thread {
                while true {
                    let got = c == 0 ? q.pop(max: 128, timeoutMs: 50) : q.popAll(timeoutMs: 50)
                    if got.isEmpty { if q.isClosedAndEmpty { break } else { continue } }
                    received.append(got, consumer: c)
                }
                consumers.leave()
            }.start()
        }
        done.wait()
        q.close()
        #expect(!q.push(1), "a closed queue takes nothing")
        consumers.wait()
        let all = received.all
        let flat = all.flatMap { $0 }
        #expect(flat.count == producers * perProducer)
        #expect(Set(flat).count == producers * perProducer)
        // Within one consumer's takes, each producer's items come in the order pushed.
        for taken in all {
            var last = [Int](repeating: -1, count: producers)
            for item in taken {
                #expect(item > last[item / perProducer])
                last[item / perProducer] = item
            }
        }
    }
}

private final class Box: Sendable {}

/// What each consumer took, in its order.
private final class Taken: @unchecked Sendable {
    private let lock = NSLock()
    private var taken: [[Int]] = [[], []]
    func append(_ items: [Int], consumer: Int) { lock.lock(); taken[consumer] += items; lock.unlock() }
    var all: [[Int]] { lock.lock(); defer { lock.unlock() }; return taken }
}
