internal import CLibPQ

// COPY in both directions: rows into a table (`copyIn`; several COPYs in one script are
// `execute(script:copyData:)`), rows out of a query (`copyOut`, `copyOutRaw`), and the writer that
// buffers rows into large CopyData messages.

extension PGConnection {
    /// `COPY … FROM STDIN` in text format; `body` writes the rows. Commits the COPY when `body`
    /// returns, aborts it when `body` throws. COPY cannot bind: an `sql` that binds values is
    /// refused (thrown, nothing sent).
    public func copyIn(_ sql: SQL, _ body: (PGCopyWriter) throws -> Void) throws {
        let c = try handle()
        try Self.refuseValues(sql, "COPY FROM STDIN")
        guard let start = PQexec(c, sql.text) else { throw PGError.libpq(c) }
        defer { PQclear(start) }
        guard PQresultStatus(start) == PGRES_COPY_IN else {
            throw PGError.from(start, connection: c, kind: .copy)
        }
        let writer = PGCopyWriter(connection: c)
        do {
            try body(writer)
            try writer.flush()
            guard PQputCopyEnd(c, nil) == 1 else { throw PGError.libpq(c) }
        } catch {
            _ = PQputCopyEnd(c, "aborted by the client")
            drainResults(c)
            throw error
        }
        var firstError: PGError?
        while let r = PQgetResult(c) {
            if firstError == nil, PQresultStatus(r) != PGRES_COMMAND_OK {
                firstError = PGError.from(r, connection: c, kind: .copy)
            }
            PQclear(r)
        }
        if let firstError { throw firstError }
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
        guard let start = PQexec(c, sql.text) else { throw PGError.libpq(c) }
        guard PQresultStatus(start) == PGRES_COPY_OUT else {
            let error = PGError.from(start, connection: c, kind: .copy)
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
            throw PGError.libpq(c)
        }
        var firstError: PGError?
        while let r = PQgetResult(c) {
            if firstError == nil, PQresultStatus(r) != PGRES_COMMAND_OK {
                firstError = PGError.from(r, connection: c, kind: .copy)
            }
            PQclear(r)
        }
        if let callbackError { throw callbackError }
        if let firstError { throw firstError }
    }
}

/// Writes COPY text-format rows, buffered into large PQputCopyData chunks.
public final class PGCopyWriter {
    private let c: OpaquePointer
    private var buffer: [UInt8] = []
    private let chunk = 1 << 16

    init(connection: OpaquePointer) {
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

    func flush() throws {
        guard !buffer.isEmpty else { return }
        let ok = buffer.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { PQputCopyData(c, $0.baseAddress, Int32($0.count)) }
        }
        guard ok == 1 else {
            throw PGError(kind: .copy, message: "COPY failed: \(PGError.trimmed(PQerrorMessage(c)))")
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

@available(*, unavailable)
extension PGCopyWriter: Sendable {}
