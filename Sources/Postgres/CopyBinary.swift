/// Reads `COPY … TO STDOUT WITH (FORMAT binary)` as the server sends it (`PGConnection.copyOutRaw`):
/// the header before the first row, then rows of length-prefixed fields, then the trailer.
///
/// For wide text the binary format is cheaper at both ends than the text format: the server
/// copies a field out as it is instead of checking every byte for a character to escape, and
/// here a field is found by its length instead of by scanning for the next tab (measured on the
/// StoreKit 2 uploads, 3,600-byte fields: docs/benchmarks.md).
///
/// The server sends each row in one message; a message that does not hold whole rows, a field
/// count other than the caller's, or a length past the message's end is an error (never a
/// misread row).
public struct CopyBinaryReader {
    /// "PGCOPY\n\377\r\n\0", then the flags and the header extension's length (each an int32).
    static let signature: [UInt8] = [80, 71, 67, 79, 80, 89, 10, 255, 13, 10, 0]

    private let columns: Int
    private var headerRead = false
    private var trailerRead = false
    /// Each field's start and length (-1: null) in the current message, reused for every row.
    private var starts: [Int]
    private var lengths: [Int]

    /// `columns`: the field count every row must have.
    public init(columns: Int) {
        self.columns = columns
        starts = Array(repeating: 0, count: columns)
        lengths = Array(repeating: -1, count: columns)
    }

    /// One row: its fields are valid only during the call that hands it out.
    public struct Row {
        let message: UnsafeBufferPointer<UInt8>
        let starts: UnsafeBufferPointer<Int>
        let lengths: UnsafeBufferPointer<Int>

        public var count: Int { starts.count }

        /// The field's bytes, nil for SQL null.
        public func bytes(_ i: Int) -> UnsafeBufferPointer<UInt8>? {
            let n = lengths[i]
            guard n >= 0 else { return nil }
            return UnsafeBufferPointer(rebasing: message[starts[i]..<starts[i] + n])
        }

        /// A text field (the server's encoding is UTF-8; any invalid byte is replaced, as in `CopyText`).
        public func text(_ i: Int) -> String? {
            bytes(i).map { String(decoding: $0, as: UTF8.self) }
        }

        /// A `boolean` field; nil for null or a field that is not 1 byte.
        public func bool(_ i: Int) -> Bool? {
            guard let b = bytes(i), b.count == 1 else { return nil }
            return b[0] != 0
        }

        /// An `int4` field; nil for null or a field that is not 4 bytes.
        public func int32(_ i: Int) -> Int32? {
            guard let b = bytes(i), b.count == 4 else { return nil }
            return Int32(bitPattern: UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3]))
        }
    }

    public struct Problem: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// Hands every row of `message` (one CopyData message) to `onRow`.
    public mutating func read(_ message: UnsafeBufferPointer<UInt8>, _ onRow: (Row) throws -> Void) throws {
        var at = 0
        let n = message.count
        func int(_ width: Int) throws -> Int {
            guard n - at >= width else { throw Problem(description: "binary COPY: a message ends inside a row") }
            var v = 0
            for k in 0..<width { v = v << 8 | Int(message[at + k]) }
            at += width
            // Two's complement of the field's width (a null's length is -1).
            return v >= 1 << (8 * width - 1) ? v - (1 << (8 * width)) : v
        }
        if !headerRead {
            guard n >= 19, message.prefix(11).elementsEqual(Self.signature) else {
                throw Problem(description: "binary COPY: the data does not start with PGCOPY's signature")
            }
            at = 15
            let extensionLength = try int(4)
            guard extensionLength >= 0, n - at >= extensionLength else {
                throw Problem(description: "binary COPY: the header extension runs past the message")
            }
            at += extensionLength
            headerRead = true
        }
        while at < n {
            guard !trailerRead else { throw Problem(description: "binary COPY: data after the trailer") }
            let fields = try int(2)
            if fields == -1 { trailerRead = true; continue }
            guard fields == columns else {
                throw Problem(description: "binary COPY: a row of \(fields) fields where \(columns) were asked")
            }
            for i in 0..<columns {
                let length = try int(4)
                guard length >= -1, n - at >= max(length, 0) else {
                    throw Problem(description: "binary COPY: a field length of \(length) runs past the message")
                }
                starts[i] = at
                lengths[i] = length
                at += max(length, 0)
            }
            try starts.withUnsafeBufferPointer { s in
                try lengths.withUnsafeBufferPointer { l in
                    try onRow(Row(message: message, starts: s, lengths: l))
                }
            }
        }
    }
}

extension PGConnection {
    /// `COPY (…) TO STDOUT WITH (FORMAT binary)` of `select`, each row handed to `onRow` (valid
    /// only during the call). Every row must have `columns` fields. Streams like `copyOut`.
    public func copyOutBinary(_ select: SQL, columns: Int, _ onRow: (CopyBinaryReader.Row) throws -> Void) throws {
        var reader = CopyBinaryReader(columns: columns)
        try copyOutRaw("COPY (\(select)) TO STDOUT WITH (FORMAT binary)") { chunk in
            try reader.read(chunk, onRow)
        }
    }
}
