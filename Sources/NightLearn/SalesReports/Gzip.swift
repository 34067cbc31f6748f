// The gzip of Apple's report files (`Content-Type: application/a-gzip`), through zlib: inflate
// with a gzip header (windowBits 15 + 16), the output bounded. A stream that stops before its end
// (a truncated download) or whose check value is wrong is an error, never a shorter file.

import CLibZ

/// Why a body was not a gzip file the job believes.
struct GzipError: Error, Sendable, Equatable, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

enum Gzip {
    /// A report larger than this once decompressed is refused (a daily summary of a large catalog
    /// is a few megabytes; a bomb is not read to its end).
    static let largestOutput = 256 << 20

    /// The bytes of the gzip file `data` (one member; bytes after it are an error).
    static func decompress(_ data: [UInt8], largest: Int = largestOutput) throws(GzipError) -> [UInt8] {
        guard !data.isEmpty else { throw GzipError(reason: "the body is empty, not a gzip file") }
        var stream = z_stream()
        // 15 + 16: a gzip header and trailer (CRC-32, length), not zlib's.
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw GzipError(reason: "zlib could not start an inflate stream")
        }
        defer { inflateEnd(&stream) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var input = data
        let status: Int32 = input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = UInt32(inBuffer.count)
            while true {
                let (result, produced) = chunk.withUnsafeMutableBufferPointer { outBuffer -> (Int32, Int) in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = UInt32(outBuffer.count)
                    let r = inflate(&stream, Z_NO_FLUSH)
                    return (r, outBuffer.count - Int(stream.avail_out))
                }
                if out.count + produced > largest { return -100 }
                out.append(contentsOf: chunk[0..<produced])
                switch result {
                case Z_STREAM_END: return stream.avail_in == 0 ? Z_STREAM_END : -101
                case Z_OK: continue
                case Z_BUF_ERROR:
                    // No progress possible: the input ended before the stream did.
                    return Z_BUF_ERROR
                default: return result
                }
            }
        }
        switch status {
        case Z_STREAM_END: return out
        case -100: throw GzipError(reason: "the file is larger than \(largest >> 20) MB once decompressed")
        case -101: throw GzipError(reason: "bytes follow the end of the gzip stream")
        case Z_BUF_ERROR: throw GzipError(reason: "the gzip file is truncated (it ends before its stream does)")
        case Z_DATA_ERROR:
            let message = stream.msg.map { String(cString: $0) } ?? "invalid data"
            throw GzipError(reason: "the body is not a valid gzip file (\(message))")
        default: throw GzipError(reason: "zlib failed inflating the file (code \(status))")
        }
    }

    /// A gzip file of `data` (the tests' fixtures, a test's loopback server).
    static func compress(_ data: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        guard
            deflateInit2_(
                &stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { return [] }
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(data.count))) + 32)
        var input = data
        let written: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            out.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = UInt32(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = UInt32(outBuffer.count)
                _ = deflate(&stream, Z_FINISH)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        return Array(out[0..<written])
    }
}
