// Raw deflate (RFC 1951, what a zip entry of method 8 holds) through zlib, in segments.
//
// A sheet's XML is deflated while it is written, on the thread that writes it (the workbook's
// sheets are written side by side, one report per core), so the deflating is not one
// thread's work at the end of the night. A sheet's entry
// is three segments: what goes before its rows (known only once the rows are written: the used
// range, the column widths), the rows, and what goes after. Each segment is an independent
// deflate stream; every one but the last ends with a sync flush (an empty stored block, so the
// next starts on a byte boundary, and no final-block bit), the last with a finish. Their bytes
// one after the other are one valid deflate stream, as pigz makes them: no segment refers back
// to data before its own start. The entry's CRC-32 joins the segments' (`crc32_combine`).

import CLibZ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// zlib's level for the workbook: 1, its fastest. Level 6, zlib's default and ZIPFoundation's
/// only one, was seconds at the end of the night on the benchmark's sheets; level 1 is several
/// times faster for a somewhat larger file (figures: docs/benchmarks.md, "Measured choices").
let workbookDeflateLevel: Int32 = 1

/// One segment of raw deflate: bytes in with `write`, compressed bytes out to `sink` as they
/// come, ended by `finish`. Counts the bytes in and out and the CRC-32 of the bytes in.
final class DeflateSegment {
    private let stream: UnsafeMutablePointer<z_stream>
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private let sink: (UnsafeBufferPointer<UInt8>) throws -> Void
    private var ended = false
    private(set) var crc: UInt32 = 0
    private(set) var inputSize: UInt64 = 0
    private(set) var outputSize: UInt64 = 0

    /// `sink` receives the compressed bytes (a buffer valid only during the call).
    init(level: Int32 = workbookDeflateLevel, sink: @escaping (UnsafeBufferPointer<UInt8>) throws -> Void) throws {
        // Set up before `self.stream` is: a throw once every property is set would run `deinit`,
        // which ends and frees the stream.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard clibz_deflate_init_raw(stream, level) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw DeflateError(reason: "zlib could not start a deflate stream")
        }
        self.stream = stream
        self.sink = sink
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        precondition(!ended, "a finished deflate segment")
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        // zlib counts in 32 bits: a write is cut into pieces it can take.
        var done = 0
        while done < bytes.count {
            let n = min(bytes.count - done, Int(UInt32.max / 2))
            crc = UInt32(crc32(uLong(crc), base + done, uInt(n)))
            stream.pointee.next_in = UnsafeMutablePointer(mutating: base + done)
            stream.pointee.avail_in = uInt(n)
            try run(Z_NO_FLUSH)
            done += n
        }
        inputSize += UInt64(bytes.count)
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { try write($0) }
    }

    /// Ends the segment: `last` with a finish (the entry's last segment), else with a sync flush.
    func finish(last: Bool) throws {
        precondition(!ended, "a finished deflate segment")
        ended = true
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        try run(last ? Z_FINISH : Z_SYNC_FLUSH)
    }

    /// Deflates what is in, emptying the output buffer into the sink until zlib has nothing more
    /// to give: for a finish, until the stream's end is written.
    private func run(_ flush: Int32) throws {
        while true {
            let (produced, status): (Int, Int32) = try buffer.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = uInt(out.count)
                let status = deflate(stream, flush)
                guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                    throw DeflateError(reason: "zlib failed to deflate (status \(status))")
                }
                return (out.count - Int(stream.pointee.avail_out), status)
            }
            if produced > 0 {
                try buffer.withUnsafeBufferPointer { try sink(UnsafeBufferPointer(rebasing: $0[..<produced])) }
                outputSize += UInt64(produced)
            }
            if flush == Z_FINISH {
                if status == Z_STREAM_END { return }
            } else if stream.pointee.avail_out > 0 && stream.pointee.avail_in == 0 {
                // zlib left room in the buffer and took all the input: a flush is complete.
                return
            }
        }
    }

    /// `bytes` deflated as one whole segment, in memory (the small parts of the workbook).
    static func segment(_ bytes: [UInt8], last: Bool) throws -> (data: [UInt8], crc: UInt32) {
        var out: [UInt8] = []
        let d = try DeflateSegment { out.append(contentsOf: $0) }
        try d.write(bytes)
        try d.finish(last: last)
        return (out, d.crc)
    }
}

struct DeflateError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}

/// The CRC-32 of two pieces one after the other, from each one's CRC and the second's length.
func crc32Joined(_ first: UInt32, _ second: UInt32, secondLength: UInt64) -> UInt32 {
    UInt32(crc32_combine(uLong(first), uLong(second), .init(secondLength)))
}
