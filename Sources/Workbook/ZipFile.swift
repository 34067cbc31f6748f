// The zip container of the workbook (PKWARE's APPNOTE.TXT 6.3.10), written front to back.
//
// Why not ZIPFoundation: it deflates every entry itself, on the one thread that adds the entries, at
// zlib's default level, and takes no entry already deflated, so the workbook's deflating would
// be the last three seconds of the night on one core of two. Here each sheet is deflated by the
// thread that writes it (Deflate.swift) and this file only lays the deflated bytes out: a local
// header, the bytes, then the central directory. Zip64 records are written where a size or an
// offset does not fit in 32 bits (a sheet of a million long rows can pass 4 GiB of XML).
// ZIPFoundation still reads every workbook back in the tests (Tests/XLSXReading), so the format
// is checked by an implementation other than this one.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class ZipFile {
    /// An entry's place and sizes, for its central directory record.
    private struct Entry {
        let name: [UInt8]
        let crc: UInt32
        let compressedSize: UInt64
        let uncompressedSize: UInt64
        let offset: UInt64
        let zip64: Bool
    }

    let path: String
    /// A size or offset at or above this is written in a zip64 record: 0xFFFFFFFF by the format;
    /// tests lower it to check the zip64 records on small files.
    let zip64Limit: UInt64
    private let file: UnsafeMutablePointer<FILE>
    private var offset: UInt64 = 0
    private var entries: [Entry] = []
    private var closed = false
    private let dosTime: UInt16
    private let dosDate: UInt16

    init(path: String, zip64Limit: UInt64 = 0xFFFF_FFFF) throws {
        guard let file = fopen(path, "wb") else {
            throw Workbook.Failure.system(path, "cannot create the workbook")
        }
        self.path = path
        self.file = file
        self.zip64Limit = zip64Limit
        // The entries' modification time: now, in the machine's zone (MS-DOS times have none).
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        dosTime = UInt16(parts.tm_hour << 11 | parts.tm_min << 5 | parts.tm_sec / 2)
        dosDate = UInt16(max(0, Int(parts.tm_year) - 80) << 9 | Int(parts.tm_mon + 1) << 5 | Int(parts.tm_mday))
    }

    deinit { if !closed { fclose(file) } }

    /// Adds the entry `name` of method deflate: `crc` and the sizes are those of its whole data,
    /// which `writeData` then writes through `write(_:)`, `compressedSize` bytes exactly.
    func add(name: String, crc: UInt32, compressedSize: UInt64, uncompressedSize: UInt64,
             writeData: () throws -> Void) throws {
        let entry = Entry(name: Array(name.utf8), crc: crc, compressedSize: compressedSize,
                          uncompressedSize: uncompressedSize, offset: offset,
                          zip64: compressedSize >= zip64Limit || uncompressedSize >= zip64Limit)
        var header = Bytes()
        header.u32(0x0403_4b50)
        let needs45 = entry.zip64 || entry.offset >= zip64Limit  // as its central record says
        header.u16(needs45 ? 45 : 20)            // version needed to extract (4.5: zip64)
        header.u16(0x0800)                       // the name is UTF-8
        header.u16(8)                            // deflate
        header.u16(dosTime)
        header.u16(dosDate)
        header.u32(crc)
        header.u32(entry.zip64 ? 0xFFFF_FFFF : UInt32(compressedSize))
        header.u32(entry.zip64 ? 0xFFFF_FFFF : UInt32(uncompressedSize))
        header.u16(UInt16(entry.name.count))
        header.u16(entry.zip64 ? 20 : 0)
        header.bytes += entry.name
        if entry.zip64 {
            // In a local header the zip64 record holds both sizes.
            header.u16(0x0001); header.u16(16); header.u64(uncompressedSize); header.u64(compressedSize)
        }
        try write(header.bytes)
        let start = offset
        try writeData()
        guard offset - start == compressedSize else {
            throw Workbook.Failure(path: path, reason: "the entry \(name) has \(offset - start) bytes, \(compressedSize) were announced")
        }
        entries.append(entry)
    }

    /// Bytes of the current entry's data.
    func write(_ bytes: UnsafeBufferPointer<UInt8>) throws {
        guard bytes.count > 0 else { return }
        guard fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count else {
            throw Workbook.Failure.system(path, "cannot write the workbook")
        }
        offset += UInt64(bytes.count)
    }

    func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBufferPointer { try write($0) }
    }

    /// Writes the central directory and closes the file.
    func finish() throws {
        let directoryStart = offset
        for entry in entries {
            let bigOffset = entry.offset >= zip64Limit
            var extra = Bytes()
            if entry.zip64 { extra.u64(entry.uncompressedSize); extra.u64(entry.compressedSize) }
            if bigOffset { extra.u64(entry.offset) }
            var record = Bytes()
            record.u32(0x0201_4b50)
            record.u16(3 << 8 | 45)                  // made by: UNIX, APPNOTE 4.5
            record.u16(entry.zip64 || bigOffset ? 45 : 20)
            record.u16(0x0800)
            record.u16(8)
            record.u16(dosTime)
            record.u16(dosDate)
            record.u32(entry.crc)
            record.u32(entry.zip64 ? 0xFFFF_FFFF : UInt32(entry.compressedSize))
            record.u32(entry.zip64 ? 0xFFFF_FFFF : UInt32(entry.uncompressedSize))
            record.u16(UInt16(entry.name.count))
            record.u16(extra.bytes.isEmpty ? 0 : UInt16(4 + extra.bytes.count))
            record.u16(0)                            // comment
            record.u16(0)                            // disk
            record.u16(0)                            // internal attributes
            record.u32(0o100644 << 16)               // a regular file, rw-r--r--
            record.u32(bigOffset ? 0xFFFF_FFFF : UInt32(entry.offset))
            record.bytes += entry.name
            if !extra.bytes.isEmpty {
                record.u16(0x0001); record.u16(UInt16(extra.bytes.count)); record.bytes += extra.bytes
            }
            try write(record.bytes)
        }
        let directorySize = offset - directoryStart
        let count = UInt64(entries.count)
        var end = Bytes()
        if directoryStart >= zip64Limit || directorySize >= zip64Limit || count >= 0xFFFF {
            let zip64End = offset
            end.u32(0x0606_4b50); end.u64(44)        // zip64 end of central directory record
            end.u16(3 << 8 | 45); end.u16(45)
            end.u32(0); end.u32(0)
            end.u64(count); end.u64(count)
            end.u64(directorySize); end.u64(directoryStart)
            end.u32(0x0706_4b50); end.u32(0)         // its locator
            end.u64(zip64End); end.u32(1)
        }
        end.u32(0x0605_4b50)
        end.u16(0); end.u16(0)
        end.u16(UInt16(min(count, 0xFFFF))); end.u16(UInt16(min(count, 0xFFFF)))
        end.u32(directorySize >= zip64Limit ? 0xFFFF_FFFF : UInt32(directorySize))
        end.u32(directoryStart >= zip64Limit ? 0xFFFF_FFFF : UInt32(directoryStart))
        end.u16(0)                                   // comment
        try write(end.bytes)
        closed = true
        let flushed = fflush(file) == 0
        if fclose(file) != 0 || !flushed {
            throw Workbook.Failure.system(path, "cannot write the workbook")
        }
    }

    /// Little-endian fields.
    private struct Bytes {
        var bytes: [UInt8] = []
        mutating func u16(_ v: UInt16) { bytes += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        mutating func u32(_ v: UInt32) { for i in 0..<4 { bytes.append(UInt8(v >> (8 * i) & 0xFF)) } }
        mutating func u64(_ v: UInt64) { for i in 0..<8 { bytes.append(UInt8(v >> (8 * i) & 0xFF)) } }
    }
}
