#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The records of one report CSV, read as the job writes them (contract §6: RFC 4180, UTF-8,
/// CRLF, header row), one at a time from a 64 KiB buffer, so reading a report of millions of
/// rows holds one record in memory, never the file. Also accepts LF line ends and a leading
/// byte-order mark, so a CSV saved back by a person still reads. Invalid UTF-8 becomes U+FFFD.
final class CSVRecords {
    let path: String
    private let file: UnsafeMutablePointer<FILE>
    /// Raw memory, not an array: every byte read is then not an access to a class's property
    /// checked for exclusivity at run time.
    private let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    private static let capacity = 1 << 16
    private var count = 0
    private var index = 0
    private var atStart = true
    /// The fields of the record before (room reserved for as many).
    private var lastWidth = 16

    init(path: String) throws {
        guard let file = fopen(path, "rb") else {
            throw Workbook.Failure.system(path, "cannot open the report")
        }
        self.path = path
        self.file = file
    }

    deinit {
        fclose(file)
        buffer.deallocate()
    }

    /// The next byte without consuming it; nil at the end of the file.
    private func peek() throws -> UInt8? {
        if index == count {
            count = fread(buffer, 1, Self.capacity, file)
            index = 0
            if count == 0 {
                if ferror(file) != 0 {
                    throw Workbook.Failure.system(path, "cannot read the report")
                }
                return nil
            }
        }
        return buffer[index]
    }

    /// The next record's fields, unquoted; nil after the last record. A quote left open at the
    /// end of the file ends the field there (the job never writes one; a truncated file still
    /// shows what it has).
    func next() throws -> [String]? {
        if atStart {
            atStart = false
            if try peek() == 0xEF { // A byte-order mark: EF BB BF.
                let mark: [UInt8] = [0xEF, 0xBB, 0xBF]
                var matched = 0
                while matched < 3, try peek() == mark[matched] { index += 1; matched += 1 }
            }
        }
        guard try peek() != nil else { return nil }
        var fields: [String] = []
        fields.reserveCapacity(lastWidth)
        var field: [UInt8] = []
        var inQuotes = false
        var wasQuoted = false
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        // The bytes up to the next one that matters (a quote; outside quotes also a comma, CR or
        // LF) are taken as one run from the buffer, not one call per byte: a report of a hundred
        // thousand rows is tens of megabytes.
        while try index < count || peek() != nil {
            var end = index
            if inQuotes {
                while end < count, buffer[end] != 0x22 { end += 1 }
            } else {
                while end < count {
                    let b = buffer[end]
                    if b == 0x22 || b == 0x2C || b == 0x0D || b == 0x0A { break }
                    end += 1
                }
            }
            field.append(contentsOf: UnsafeBufferPointer(start: buffer + index, count: end - index))
            index = end
            if end == count { continue }
            let b = buffer[index]
            index += 1
            if inQuotes {
                // A doubled quote is one quote; a single one ends the quoted part.
                if try peek() == 0x22 { index += 1; field.append(b) } else { inQuotes = false }
                continue
            }
            switch b {
            case 0x22:
                if field.isEmpty && !wasQuoted {
                    inQuotes = true
                    wasQuoted = true
                } else {
                    field.append(b)
                }
            case 0x2C:
                endField()
            default: // CR (of a CRLF) or LF: the record ends
                if b == 0x0D, try peek() == 0x0A { index += 1 }
                endField()
                lastWidth = fields.count
                return fields
            }
        }
        endField()
        return fields
    }
}
