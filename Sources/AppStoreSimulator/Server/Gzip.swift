// A gzip file (RFC 1952) of a sales report, as Apple sends it (`application/a-gzip`): zlib's raw
// deflate (Sources/CLibZ, the workbook's module) between gzip's ten-byte header and its trailer
// (the CRC-32 and the length of the text, little-endian). One call per report: the reports are
// small, so the whole text is compressed at once.

import CLibZ

enum Gzip {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func compress(_ bytes: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        guard clibz_deflate_init_raw(&stream, 6) == Z_OK else { throw Failure(description: "zlib could not start a deflate stream") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count)))
        var deflated = [UInt8](repeating: 0, count: bound)
        var input = bytes
        let produced: Int = try input.withUnsafeMutableBufferPointer { inBuf in
            try deflated.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else {
                    throw Failure(description: "zlib could not finish the deflate stream")
                }
                return outBuf.count - Int(stream.avail_out)
            }
        }
        let crc = bytes.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
        // ID1 ID2, deflate, no flags, no time, no extra flags, OS unknown.
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]
        out.reserveCapacity(out.count + produced + 8)
        out += deflated[0..<produced]
        for v in [crc, UInt32(truncatingIfNeeded: bytes.count)] {
            out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)]
        }
        return out
    }
}
