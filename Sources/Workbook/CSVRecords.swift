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
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var count = 0
    private var index = 0
    private var atStart = true

    init(path: String) throws {
        guard let file = fopen(path, "rb") else {
            throw Workbook.Failure(path: path, reason: "cannot open the report: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.file = file
    }

    deinit { fclose(file) }

    /// The next byte without consuming it; nil at the end of the file.
    private func peek() throws -> UInt8? {
        if index == count {
            count = fread(&buffer, 1, buffer.count, file)
            index = 0
            if count == 0 {
                if ferror(file) != 0 {
                    throw Workbook.Failure(path: path, reason: "cannot read the report: \(String(cString: strerror(errno)))")
                }
                return nil
            }
        }
        return buffer[index]
    }

    private func take() throws -> UInt8? {
        guard let b = try peek() else { return nil }
        index += 1
        return b
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
        var field: [UInt8] = []
        var inQuotes = false
        var wasQuoted = false
        func endField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
            wasQuoted = false
        }
        while let b = try take() {
            if inQuotes {
                if b == UInt8(ascii: "\"") {
                    if try peek() == UInt8(ascii: "\"") { index += 1; field.append(b) } else { inQuotes = false }
                } else {
                    field.append(b)
                }
                continue
            }
            switch b {
            case UInt8(ascii: "\"") where field.isEmpty && !wasQuoted:
                inQuotes = true
                wasQuoted = true
            case UInt8(ascii: ","):
                endField()
            case UInt8(ascii: "\r"):
                if try peek() == UInt8(ascii: "\n") { index += 1 }
                endField()
                return fields
            case UInt8(ascii: "\n"):
                endField()
                return fields
            default:
                field.append(b)
            }
        }
        endField()
        return fields
    }
}
