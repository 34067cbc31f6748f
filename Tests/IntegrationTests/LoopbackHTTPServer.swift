import Foundation

/// A tiny HTTP/1.1 server on 127.0.0.1 for a test: each connection one request (GET, no body),
/// answered by `handler` with `Connection: close`. Real HTTP over a real socket for the job's
/// libcurl, where a double of Apple's is not (yet) in the simulator (Apple's sales reports).
final class LoopbackHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// The query's names and values, percent-decoded.
        var query: [String: String]
        /// Header names lower-cased.
        var headers: [String: String]
    }
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []
    }

    let port: Int
    private let fd: Int32
    private let handler: @Sendable (Request) -> Response
    private let lock = NSLock()
    private var received: [Request] = []

    var url: String { "http://127.0.0.1:\(port)" }
    var requests: [Request] { lock.withLock { received } }

    init(handler: @escaping @Sendable (Request) -> Response) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { close(fd); throw CocoaError(.fileWriteUnknown) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let listener = fd
        Thread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                Thread { self.serve(client) }.start()
            }
        }.start()
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !data.ends(with: Array("\r\n\r\n".utf8)) {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { return }
            data += buffer[0..<n]
        }
        let lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\r\n")
        let first = lines[0].split(separator: " ")
        guard first.count >= 2 else { return }
        let target = String(first[1])
        let parts = target.split(separator: "?", maxSplits: 1)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for item in parts[1].split(separator: "&") {
                let kv = item.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query[kv[0]] = kv.count > 1 ? kv[1] : ""
            }
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() where line.contains(":") {
            let i = line.firstIndex(of: ":")!
            headers[line[..<i].lowercased()] = line[line.index(after: i)...].trimmingCharacters(in: .whitespaces)
        }
        let request = Request(method: String(first[0]), path: String(parts[0]), query: query, headers: headers)
        lock.withLock { received.append(request) }
        let response = handler(request)
        var head = "HTTP/1.1 \(response.status) X\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + response.body
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBufferPointer { write(client, $0.baseAddress, $0.count) }
            if n <= 0 { return }
            sent += n
        }
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
