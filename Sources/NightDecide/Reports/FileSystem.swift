#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file-system calls the report writer makes, straight on POSIX so that a failure says
/// what the operating system said ("Permission denied", "Not a directory", "No space left on
/// device"), with the path it concerned.
enum FileSystem {
    struct Failure: Error {
        var path: String
        var reason: String

        init(_ path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        init(_ path: String, errno code: Int32 = errno) {
            self.path = path
            reason = String(cString: strerror(code))
        }
    }

    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            current += "/" + part
            if mkdir(current, 0o755) != 0 {
                let code = errno
                var info = stat()
                guard code == EEXIST, stat(current, &info) == 0 else { throw Failure(current, errno: code) }
                guard (info.st_mode & S_IFMT) == S_IFDIR else { throw Failure(current, errno: ENOTDIR) }
            }
        }
    }

    static func makeDirectory(_ path: String) throws {
        guard mkdir(path, 0o755) == 0 else { throw Failure(path) }
    }

    static func names(in path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw Failure(path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// `rm -rf` of a folder the job made (no links followed).
    static func removeTree(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            for name in try names(in: path) { try removeTree(path + "/" + name) }
            guard rmdir(path) == 0 else { throw Failure(path) }
        } else {
            guard unlink(path) == 0 else { throw Failure(path) }
        }
    }

    /// Writes a whole file, checking every step (a full disk shows at write or close).
    static func write(_ path: String, _ bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw Failure(path) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                throw Failure(path, errno: code)
            }
            done += n
        }
        guard close(fd) == 0 else { throw Failure(path) }
    }

    /// Puts the folder `new` at `target`. When `target` exists, the two are exchanged atomically
    /// (Linux `renameat2(RENAME_EXCHANGE)`) and the old set, now at `new`, is removed: a reader
    /// sees the old folder or the new one, never none. Where the kernel or file system has no
    /// exchange, the old folder is renamed to `aside` first and removed after (the contract's
    /// "after a crash" section says where it is then).
    static func replaceDirectory(_ target: String, with new: String, aside: String) throws {
        guard exists(target) else {
            guard rename(new, target) == 0 else { throw Failure(target) }
            return
        }
        if let exchange = renameExchange {
            if exchange(AT_FDCWD, new, AT_FDCWD, target, 2 /* RENAME_EXCHANGE */) == 0 {
                try removeTree(new)
                return
            }
            let code = errno
            guard code == EINVAL || code == ENOSYS || code == ENOTSUP else { throw Failure(target, errno: code) }
        }
        guard rename(target, aside) == 0 else { throw Failure(target) }
        guard rename(new, target) == 0 else {
            let code = errno
            _ = rename(aside, target)
            throw Failure(target, errno: code)
        }
        try removeTree(aside)
    }

    private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32

    /// glibc's `renameat2` (2.28 and later), looked up at run time: Swift's Glibc module does not
    /// declare it.
    private static let renameExchange: RenameAt2? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "renameat2") else { return nil }
        return unsafeBitCast(symbol, to: RenameAt2.self)
    }()
}
