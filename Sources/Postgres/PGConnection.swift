internal import CLibPQ
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

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

/// One libpq connection (`PGconn`).
///
/// Concurrency: a connection is used by one thread at a time — whoever owns the object.
/// The job gives each thread that talks to Postgres its own connection; nothing shares one.
/// Calls block, so callers keep them off Swift's cooperative thread pool.
public final class PGConnection {
    private var conn: OpaquePointer?

    /// Connects with `conninfo`, or when it is nil with `$DATABASE_URL`, or else with libpq's own
    /// environment (`PGHOST`, `PGPORT`, `PGDATABASE`, `PGUSER`, `PGPASSWORD`, `PGPASSFILE`).
    public init(conninfo: String? = nil) throws {
        let info = conninfo ?? getenvString("DATABASE_URL") ?? ""
        let c = PQconnectdb(info)
        guard let c else { throw PGError(kind: .connection, message: "could not allocate a PostgreSQL connection") }
        if PQstatus(c) != CONNECTION_OK {
            let message = PGConnection.trimmed(PQerrorMessage(c))
            PQfinish(c)
            throw PGError(kind: .connection, message: "cannot connect to PostgreSQL: \(message)")
        }
        conn = c
        // Server notices (e.g. "relation already exists, skipping") are not the job's output.
        PQsetNoticeProcessor(c, { _, _ in }, nil)
    }

    deinit {
        // Tripwire: connections are closed explicitly; finishing here keeps the C side clean anyway.
        if let conn { PQfinish(conn) }
    }

    public func close() {
        if let conn { PQfinish(conn) }
        conn = nil
    }

    private func handle() throws -> OpaquePointer {
        guard let conn else { throw PGError(kind: .connection, message: "the PostgreSQL connection is closed") }
        return conn
    }

    /// Runs one or more statements without parameters (simple query protocol): DDL, fixed SQL,
    /// several statements in one text. The simple protocol cannot bind, so an `sql` that binds
    /// values is refused (thrown, nothing sent): a value in such a text is an `SQLLiteral`.
    /// Values always travel as `query` parameters, as COPY rows, or, where Postgres takes no
    /// parameters, as typed literals written by `SQLLiteral`; never spliced into text otherwise.
    public func execute(_ sql: SQL) throws {
        let c = try handle()
        try Self.refuseValues(sql, "execute (the simple protocol)")
        guard PQsendQuery(c, sql.text) == 1 else { throw connectionOrQueryError(c) }
        var firstError: PGError?
        while let r = PQgetResult(c) {
            let status = PQresultStatus(r)
            if firstError == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK, status != PGRES_EMPTY_QUERY {
                firstError = PGConnection.error(from: r, connection: c, kind: .query)
            }
            PQclear(r)
        }
        if let firstError { throw firstError }
    }

    /// Runs one statement (extended protocol) with the values `sql` binds as its text parameters
    /// (`$1`, `$2`, …; nil is SQL NULL) and returns its rows.
    @discardableResult
    public func query(_ sql: SQL) throws -> PGResult {
        let c = try handle()
        let params = sql.values
        let result = withCStrings(params) { pointers in
            PQexecParams(c, sql.text, Int32(params.count), nil, pointers, nil, nil, 0)
        }
        guard let result else { throw connectionOrQueryError(c) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let error = PGConnection.error(from: result, connection: c, kind: .query)
            PQclear(result)
            throw error
        }
        return PGResult(owning: result)
    }

    /// `COPY … FROM STDIN` in text format; `body` writes the rows. Commits the COPY when `body`
    /// returns, aborts it when `body` throws. COPY cannot bind: an `sql` that binds values is
    /// refused (thrown, nothing sent).
    public func copyIn(_ sql: SQL, _ body: (PGCopyWriter) throws -> Void) throws {
        let c = try handle()
        try Self.refuseValues(sql, "COPY FROM STDIN")
        guard let start = PQexec(c, sql.text) else { throw connectionOrQueryError(c) }
        defer { PQclear(start) }
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            throw PGConnection.error(from: start, connection: c, kind: .copy)
        }
        let writer = PGCopyWriter(connection: c)
        do {
            try body(writer)
            try writer.flush()
            guard PQputCopyEnd(c, nil) == 1 else { throw connectionOrQueryError(c) }
        } catch {
            _ = PQputCopyEnd(c, "aborted by the client")
            drainResults(c)
            throw error
        }
        var firstError: PGError?
        while let r = PQgetResult(c) {
            if firstError == nil, PQresultStatus(r) != PGRES_COMMAND_OK {
                firstError = PGConnection.error(from: r, connection: c, kind: .copy)
            }
            PQclear(r)
        }
        if let firstError { throw firstError }
    }

    /// Runs `script`, statements without parameters in one text (simple query protocol), some of
    /// them `COPY … FROM STDIN` in text format: the n-th COPY reads `copyData[n]`, already escaped
    /// (`CopyTextEncoder`). The statements are one implicit transaction unless the script says
    /// otherwise: on the first error the server skips the rest and rolls back, and that error is
    /// thrown once every result is read. One round trip for the script and one more per COPY (the
    /// server asks for each COPY's data), where a statement at a time takes one per statement and
    /// two per COPY. A script whose COPYs do not match `copyData` in number is an error of the
    /// caller's: its extra COPY is aborted, and the script with it.
    public func execute(script: SQL, copyData: [ArraySlice<UInt8>]) throws {
        let c = try handle()
        try Self.refuseValues(script, "a script with COPY FROM STDIN")
        guard PQsendQuery(c, script.text) == 1 else { throw connectionOrQueryError(c) }
        var next = 0
        var firstError: PGError?
        while let r = PQgetResult(c) {
            let status = PQresultStatus(r)
            if status == PGRES_COPY_IN {
                PQclear(r)
                guard firstError == nil, next < copyData.count else {
                    firstError = firstError ?? PGError(kind: .copy, message: "the script has more COPY FROM STDIN "
                        + "statements than data (\(copyData.count)): nothing of it was stored")
                    _ = PQputCopyEnd(c, "no data for this COPY")
                    continue
                }
                let sent = copyData[next].isEmpty ? 1 : copyData[next].withUnsafeBufferPointer { p in
                    p.withMemoryRebound(to: CChar.self) { PQputCopyData(c, $0.baseAddress, Int32($0.count)) }
                }
                next += 1
                if sent != 1 || PQputCopyEnd(c, nil) != 1 {
                    firstError = connectionOrQueryError(c)
                    _ = PQputCopyEnd(c, "aborted by the client")
                }
                continue
            }
            if firstError == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK, status != PGRES_EMPTY_QUERY {
                firstError = PGConnection.error(from: r, connection: c, kind: .copy)
            }
            PQclear(r)
        }
        if let firstError { throw firstError }
        guard next == copyData.count else {
            throw PGError(kind: .copy, message: "the script has \(next) COPY FROM STDIN statements for "
                + "\(copyData.count) data: the rest was not stored")
        }
    }

    /// `COPY … TO STDOUT` in text format: `onRow` gets each line (without its newline) as bytes
    /// valid only during the call. Streams: memory does not grow with the number of rows.
    /// COPY cannot bind: an `sql` that binds values is refused (thrown, nothing sent); a value in
    /// the query of `COPY (…) TO STDOUT` is an `SQLLiteral`.
    public func copyOut(_ sql: SQL, _ onRow: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        // In text format the server sends one row per chunk, ending in its newline.
        try copyOutRaw(sql) { chunk in
            let count = chunk.count - (chunk.last == 10 ? 1 : 0)
            try onRow(UnsafeBufferPointer(rebasing: chunk[..<count]))
        }
    }

    /// `COPY … TO STDOUT` in any format, its data handed on as the server sends it (each chunk
    /// a row, or the binary format's header or trailer, valid only during the call): for passing
    /// a relation to another session's `copyIn` unread (`PGCopyWriter.raw`). Streams like `copyOut`.
    public func copyOutRaw(_ sql: SQL, _ onChunk: (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        let c = try handle()
        try Self.refuseValues(sql, "COPY TO STDOUT")
        guard let start = PQexec(c, sql.text) else { throw connectionOrQueryError(c) }
        guard PQresultStatus(start) == PGRES_COPY_OUT else {
            let error = PGConnection.error(from: start, connection: c, kind: .copy)
            PQclear(start)
            throw error
        }
        PQclear(start)
        var callbackError: Error?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(c, &buffer, 0)
            if length > 0, let buffer {
                if callbackError == nil {
                    buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) { bytes in
                        do { try onChunk(UnsafeBufferPointer(start: bytes, count: Int(length))) } catch { callbackError = error }
                    }
                }
                PQfreemem(buffer)
                // On a callback error keep draining: libpq offers no way to cancel a COPY OUT cheaply
                // besides PQcancel; the rest is discarded.
                continue
            }
            if length == -1 { break }
            throw connectionOrQueryError(c)
        }
        var firstError: PGError?
        while let r = PQgetResult(c) {
            if firstError == nil, PQresultStatus(r) != PGRES_COMMAND_OK {
                firstError = PGConnection.error(from: r, connection: c, kind: .copy)
            }
            PQclear(r)
        }
        if let callbackError { throw callbackError }
        if let firstError { throw firstError }
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Where Postgres takes no parameters, SQL that binds values is a mistake of the caller's:
    /// thrown before anything is sent, naming what was refused.
    private static func refuseValues(_ sql: SQL, _ what: String) throws {
        guard sql.bindsValues else { return }
        throw PGError(kind: .query, message: "\(what) cannot bind parameters, and this SQL binds \(sql.values.count): "
            + "write its values as SQLLiteral, or run it with query; SQL: \(sql.text.prefix(200))")
    }

    private func drainResults(_ c: OpaquePointer) {
        while let r = PQgetResult(c) { PQclear(r) }
    }

    private func connectionOrQueryError(_ c: OpaquePointer) -> PGError {
        let message = PGConnection.trimmed(PQerrorMessage(c))
        let broken = PQstatus(c) != CONNECTION_OK
        return PGError(kind: broken ? .connection : .query, message: message.isEmpty ? "unknown libpq error" : message)
    }

    fileprivate static func error(from r: OpaquePointer, connection c: OpaquePointer, kind: PGError.Kind) -> PGError {
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

    fileprivate static func trimmed(_ p: UnsafePointer<CChar>?) -> String {
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

private func getenvString(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(cString: p)
    return s.isEmpty ? nil : s
}

/// Builds a C array of C strings that lives only for the duration of `body`.
private func withCStrings<R>(_ values: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let storage: [UnsafeMutablePointer<CChar>?] = values.map { $0.map { strdup($0) } ?? nil }
    defer { for p in storage { free(p) } }
    return body(storage.map { UnsafePointer($0) })
}

/// A query result (`PGresult`), freed once when the object goes.
public final class PGResult {
    private let result: OpaquePointer
    public let rowCount: Int
    public let columnCount: Int

    fileprivate init(owning result: OpaquePointer) {
        self.result = result
        rowCount = Int(PQntuples(result))
        columnCount = Int(PQnfields(result))
    }

    deinit { PQclear(result) }

    public func value(_ row: Int, _ column: Int) -> String? {
        precondition(row < rowCount && column < columnCount, "PGResult index out of range")
        if PQgetisnull(result, Int32(row), Int32(column)) == 1 { return nil }
        return String(cString: PQgetvalue(result, Int32(row), Int32(column)))
    }

    /// Every row, each as its columns' text (NULL as nil): for results of a handful of rows.
    public var rows: [[String?]] { (0..<rowCount).map { row in (0..<columnCount).map { value(row, $0) } } }

    /// Rows affected by an INSERT/UPDATE/DELETE.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}

/// Writes COPY text-format rows, buffered into large PQputCopyData chunks.
public final class PGCopyWriter {
    private let c: OpaquePointer
    private var buffer: [UInt8] = []
    private let chunk = 1 << 16

    fileprivate init(connection: OpaquePointer) {
        c = connection
        buffer.reserveCapacity(chunk + 4096)
    }

    /// One row; nil is NULL (`\N`). Tabs, newlines, carriage returns and backslashes are escaped.
    public func row(_ fields: [String?]) throws {
        Self.append(fields, to: &buffer)
        if buffer.count >= chunk { try flush() }
    }

    /// The row's text into `out` in one access (`CopyTextEncoder`'s escaping).
    private static func append(_ fields: [String?], to out: inout [UInt8]) {
        for (index, field) in fields.enumerated() {
            if index > 0 { out.append(9) }
            guard var field else {
                out.append(92); out.append(78)
                continue
            }
            field.withUTF8 { CopyTextEncoder.appendEscaped($0, to: &out) }
        }
        out.append(10)
    }

    /// Raw, already escaped COPY text.
    public func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= chunk { try flush() }
    }

    /// COPY data as another session's `copyOutRaw` gave it, in the same format: rows passed from
    /// one database to another as they come, no field parsed.
    public func raw(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= chunk { try flush() }
    }

    fileprivate func flush() throws {
        guard !buffer.isEmpty else { return }
        let ok = buffer.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { PQputCopyData(c, $0.baseAddress, Int32($0.count)) }
        }
        guard ok == 1 else {
            throw PGError(kind: .copy, message: "COPY failed: \(PGConnection.trimmedPublic(PQerrorMessage(c)))")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

extension PGConnection {
    fileprivate static func trimmedPublic(_ p: UnsafePointer<CChar>?) -> String { trimmed(p) }
}

// A connection, its results and its COPY writer belong to one thread: never Sendable, so handing
// one to another thread is a compile error (the way GRDB marks its `Database`).
@available(*, unavailable)
extension PGConnection: Sendable {}

@available(*, unavailable)
extension PGResult: Sendable {}

@available(*, unavailable)
extension PGCopyWriter: Sendable {}
