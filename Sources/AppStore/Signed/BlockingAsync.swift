// A synchronous door to swift-certificates' async `Verifier.validate`.
//
// Why: the job's verify stage runs on plain threads and calls `verifyTransaction` synchronously;
// swift-certificates offers chain validation only as `async`. There is no supported way to run
// async code to completion from synchronous code, so the caller blocks on a semaphore while a
// task does the work.
//
// Why that is safe here: blocking a thread to wait for a task deadlocks when the task needs the
// very threads that are blocked: for example a caller that is itself on Swift's cooperative pool
// (2 threads on this machine), with every pool thread waiting. So the task does not run on the
// pool: it prefers `ValidationExecutor`, whose jobs run on a serial dispatch queue, which gets a
// thread of its own from libdispatch even when every other thread waits. Nothing inside
// `validate` hops to another executor (the Verifier, its policies and an in-memory
// CertificateStore are nonisolated), so the task runs start to finish there. Validations are
// serialized by the queue; they happen once per new (leaf, intermediate) pair, a few a night.

import Dispatch
import Synchronization

/// Runs the jobs of the tasks that prefer it on one serial dispatch queue, off the cooperative pool.
final class ValidationExecutor: TaskExecutor {
    static let shared = ValidationExecutor()

    private let queue = DispatchQueue(label: "iap-reconcile.chain-validation")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

enum BlockingAsync {
    /// Runs `operation` on `ValidationExecutor` and blocks the calling thread until it returns.
    /// Never call it from a job of `ValidationExecutor` itself (nothing in this module does).
    static func run<T: Sendable>(_ operation: @escaping @Sendable () async -> T) -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: ValidationExecutor.shared) {
            box.set(await operation())
            done.signal()
        }
        done.wait()
        return box.take()
    }

    /// The one value handed from the task to the waiting thread. The semaphore orders the write
    /// before the read; the mutex makes that visible to the checker as well.
    private final class ResultBox<T: Sendable>: Sendable {
        private let value = Mutex<T?>(nil)

        func set(_ v: T) { value.withLock { $0 = v } }

        func take() -> T {
            value.withLock { v in
                guard let result = v else { preconditionFailure("BlockingAsync: the task ended without a result") }
                return result
            }
        }
    }
}
