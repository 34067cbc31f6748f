internal import CLibPQ
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

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
            let message = PGError.trimmed(PQerrorMessage(c))
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

    func handle() throws -> OpaquePointer {
        guard let conn else { throw PGError(kind: .connection, message: "the PostgreSQL connection is closed") }
        return conn
    }

    /// Runs one or more statements without parameters (simple query protocol): DDL, fixed SQL,
    /// several statements in one text. The simple protocol cannot bind, so an `sql` that binds
    /// values is refused (thrown, nothing sent): a value in such a text is an `SQLLiteral`.
    /// Values always travel as `query` parameters, as COPY rows, or, where Postgres takes no
    /// parameters, as typed literals written by `SQLLiteral`; never spliced into text otherwise.
    public func execute(_ sql: SQL) throws {
        try run(sql, copyData: [], refusing: "execute (the simple protocol)", errors: .query)
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
        try run(script, copyData: copyData, refusing: "a script with COPY FROM STDIN", errors: .copy)
    }

    /// The simple query protocol: `sql` sent whole, the n-th COPY FROM STDIN fed `copyData[n]`, every
    /// result read; the first error (of `errors`' kind) thrown at the end.
    private func run(_ sql: SQL, copyData: [ArraySlice<UInt8>], refusing what: String, errors: PGError.Kind) throws {
        let c = try handle()
        try Self.refuseValues(sql, what)
        guard PQsendQuery(c, sql.text) == 1 else { throw PGError.libpq(c) }
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
                    firstError = PGError.libpq(c)
                    _ = PQputCopyEnd(c, "aborted by the client")
                }
                continue
            }
            if firstError == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK, status != PGRES_EMPTY_QUERY {
                firstError = PGError.from(r, connection: c, kind: errors)
            }
            PQclear(r)
        }
        if let firstError { throw firstError }
        guard next == copyData.count else {
            throw PGError(kind: .copy, message: "the script has \(next) COPY FROM STDIN statements for "
                + "\(copyData.count) data: the rest was not stored")
        }
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
        guard let result else { throw PGError.libpq(c) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let error = PGError.from(result, connection: c, kind: .query)
            PQclear(result)
            throw error
        }
        return PGResult(owning: result)
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
    static func refuseValues(_ sql: SQL, _ what: String) throws {
        guard sql.bindsValues else { return }
        throw PGError(kind: .query, message: "\(what) cannot bind parameters, and this SQL binds \(sql.values.count): "
            + "write its values as SQLLiteral, or run it with query; SQL: \(sql.text.prefix(200))")
    }

    func drainResults(_ c: OpaquePointer) {
        while let r = PQgetResult(c) { PQclear(r) }
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

    /// Every row, each reading a column's text when asked (`row[2]`, as of `rows`): for results of
    /// thousands of rows, where `rows` made an array of every column of every row first.
    public var eachRow: LazyMapSequence<Range<Int>, PGRow> { (0..<rowCount).lazy.map { PGRow(result: self, index: $0) } }

    /// Rows affected by an INSERT/UPDATE/DELETE.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }
}

/// One row of a result (`PGResult.eachRow`): its columns' text read on demand, NULL as nil.
public struct PGRow {
    let result: PGResult
    let index: Int

    public subscript(_ column: Int) -> String? { result.value(index, column) }
}

// A connection, its results and its COPY writer belong to one thread: never Sendable, so handing
// one to another thread is a compile error (the way GRDB marks its `Database`).
@available(*, unavailable)
extension PGConnection: Sendable {}

@available(*, unavailable)
extension PGResult: Sendable {}
