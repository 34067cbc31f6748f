import Foundation
import Synchronization

/// Work started on a thread of its own at some point of the night, and waited for later.
final class Alongside<T: Sendable>: @unchecked Sendable {
    private let work: @Sendable () throws -> T
    private let outcome = Mutex<Result<T, any Error>?>(nil)
    private let started = Mutex(false)
    private let done = DispatchSemaphore(value: 0)

    init(_ work: @escaping @Sendable () throws -> T) { self.work = work }

    /// Starts the work (once; later calls do nothing).
    @Sendable func start() {
        guard started.withLock({ s in defer { s = true }; return !s }) else { return }
        Thread { [self] in
            let result = Result { try work() }
            outcome.withLock { $0 = result }
            done.signal()
        }.start()
    }

    /// Its value, once done (started now if it was not).
    func value() throws -> T {
        start()
        done.pass()
        return try outcome.withLock { $0 }!.get()
    }

    /// Waits for the work if it was started (a failing night does not leave it running).
    func finish() {
        guard started.withLock({ $0 }) else { return }
        done.pass()
    }
}

extension DispatchSemaphore {
    /// Waits until the semaphore is signalled, and leaves it signalled for the next one: a
    /// semaphore signalled once, when something is done, used as a gate that then stays open.
    func pass() {
        wait()
        signal()
    }
}
