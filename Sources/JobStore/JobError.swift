import Postgres

/// The exit codes of contract §5.
public enum ExitStatus: Int32, Sendable {
    case done = 0
    case failure = 1
    case usage = 64
    /// The source relations do not match contract §1.
    case sourceMismatch = 65
    /// A check of the job's own results failed (the conservation tally): a bug, no report written.
    case internalCheck = 70
    /// The reports cannot be written.
    case cannotWrite = 73
    /// Temporary: database or App Store unreachable, another run holds the lock, or a hot standby
    /// the sources are read from cancelled the read (a recovery conflict, twice).
    case temporary = 75
    /// Configuration: the App Store said 21004 (shared secret) or 21000 (our request), a malformed
    /// `DATABASE_URL`, or the database refused the job's login.
    case configuration = 78
}

/// An error that ends the run: its exit code and the one line printed on stderr.
/// The line never contains a secret.
public struct JobError: Error, CustomStringConvertible, Sendable {
    public var code: ExitStatus
    public var message: String
    /// The store that did not answer (the transport's outage: exit 75), when that is why; nil for
    /// every other error (a database unreachable is temporary too, and is not a store's outage).
    public var unreachableStore: String?

    public init(_ code: ExitStatus, _ message: String, unreachableStore: String? = nil) {
        self.code = code
        self.message = message
        self.unreachableStore = unreachableStore
    }

    public var description: String { message }
}

extension JobError {
    /// Maps a lower-level error to the contract's exit codes: an unreachable database is temporary.
    package static func from(_ error: Error, doing what: String) -> JobError {
        if let e = error as? JobError { return e }
        if let e = error as? PGError {
            if e.isCredentialProblem {
                return JobError(.configuration, "\(what): \(e) (check the database user, password and name)")
            }
            if e.sqlState == "42501" {
                return JobError(
                    .configuration,
                    "\(what): a privilege is missing: \(e) "
                        + "(grant it, see docs/contract.md, 'Database privileges')")
            }
            if e.isRecoveryConflict { return JobError(.temporary, "\(what): \(e); \(recoveryConflictAdvice)") }
            return JobError(e.isConnectionProblem ? .temporary : .failure, "\(what): \(e)")
        }
        return JobError(.failure, "\(what): \(error)")
    }
}

/// What the line of a recovery conflict on `SOURCE_DATABASE_URL`'s standby tells the operator.
package let recoveryConflictAdvice =
    "the hot standby of SOURCE_DATABASE_URL cancelled the job's read to replay the primary's changes "
    + "(a recovery conflict); on the standby raise max_standby_streaming_delay (and max_standby_archive_delay) above the "
    + "night's copy time, or set hot_standby_feedback = on; run again later (see docs/contract.md, 'Environment variables')"
