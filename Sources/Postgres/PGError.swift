internal import CLibPQ

/// An error from libpq or the server, with what a person needs to act on it.
/// Never carries the connection string (it may hold a password).
public struct PGError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable { case connection, query, copy }
    public var kind: Kind
    public var sqlState: String?
    public var message: String
    public var detail: String?
    public var hint: String?

    public init(kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
    }

    /// True when the server could not be reached or the connection broke: run again later.
    public var isConnectionProblem: Bool {
        kind == .connection || (sqlState?.hasPrefix("08") ?? false) || sqlState == "57P01" || sqlState == "57P03"
    }

    /// True when a hot standby cancelled the statement or ended the session because replaying the
    /// primary's changes needed what it read (SQLSTATE 40001 as an ERROR, or as a FATAL that drops
    /// the connection, "canceling statement due to conflict with recovery" / "terminating
    /// connection due to conflict with recovery"): temporary, the standby's settings decide how often.
    public var isRecoveryConflict: Bool {
        // A read-only REPEATABLE READ transaction never fails to serialize, so on the source's
        // session every 40001 is one; the words cover a FATAL whose SQLSTATE libpq did not keep.
        sqlState == "40001" || message.contains("conflict with recovery")
    }

    /// True when the server refused who we are (password, role, database name): someone must fix
    /// the configuration; running again will not help.
    public var isCredentialProblem: Bool {
        if sqlState == "28P01" || sqlState == "28000" || sqlState == "3D000" { return true }
        guard kind == .connection else { return false }
        return ["password authentication failed", "no password supplied", "does not exist", "pg_hba.conf rejects",
                "authentication failed"].contains { message.contains($0) }
    }

    public var description: String {
        var text = message
        if let sqlState { text = "\(text) (SQLSTATE \(sqlState))" }
        if let detail, !detail.isEmpty { text += "; detail: \(detail)" }
        if let hint, !hint.isEmpty { text += "; hint: \(hint)" }
        return text
    }
}

/// libpq's errors made into `PGError`s (its messages end in a newline and may span lines).
extension PGError {
    /// libpq's own error on `c` (no result to read it from): a broken connection, or the query's.
    static func libpq(_ c: OpaquePointer) -> PGError {
        let message = trimmed(PQerrorMessage(c))
        let broken = PQstatus(c) != CONNECTION_OK
        return PGError(kind: broken ? .connection : .query, message: message.isEmpty ? "unknown libpq error" : message)
    }

    /// The error a failed result `r` of `c` reports, with its SQLSTATE, detail and hint.
    static func from(_ r: OpaquePointer, connection c: OpaquePointer, kind: Kind) -> PGError {
        func field(_ code: Int32) -> String? {
            guard let p = PQresultErrorField(r, code) else { return nil }
            return String(cString: p)
        }
        let primary = field(CLIBPQ_DIAG_MESSAGE_PRIMARY) ?? trimmed(PQresultErrorMessage(r))
        let broken = PQstatus(c) != CONNECTION_OK
        return PGError(
            kind: broken ? .connection : kind, sqlState: field(CLIBPQ_DIAG_SQLSTATE),
            message: primary.isEmpty ? trimmed(PQerrorMessage(c)) : primary,
            detail: field(CLIBPQ_DIAG_MESSAGE_DETAIL), hint: field(CLIBPQ_DIAG_MESSAGE_HINT))
    }

    /// A libpq message on one line, without its trailing newline.
    static func trimmed(_ p: UnsafePointer<CChar>?) -> String {
        guard let p else { return "" }
        var s = String(cString: p)
        while let last = s.last, last == "\n" || last == " " { s.removeLast() }
        return s.replacingNewlines()
    }
}

extension String {
    fileprivate func replacingNewlines() -> String {
        String(map { $0 == "\n" ? " " : $0 })
    }
}
