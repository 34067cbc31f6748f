// The epoll set behind the libcurl multi handle: what libcurl asks to watch is what the kernel
// watches, also for sockets libcurl makes and closes itself.

import CCurl
import Glibc
import Testing

@testable import HTTP

@Suite("The sockets libcurl asks the job to watch")
struct SocketWatchTests {
    /// A socketpair as libcurl's threaded resolver makes one per host name lookup: not through the
    /// open-socket callback, closed without the close-socket callback.
    static func socketPair() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test("a lookup's socketpair whose number a closed one had is watched (it used to wait for the connection timeout)")
    func reusedNumber() throws {
        let watch = try SocketWatch()
        defer { watch.close() }
        // Other tests open sockets too: try until the kernel hands the second pair the first one's number.
        for _ in 0..<50 {
            // The first lookup: watched, then no longer wanted, then closed by libcurl.
            let first = try Self.socketPair()
            watch.watch(first.read, what: CURL_POLL_IN)
            watch.watch(first.read, what: CURL_POLL_REMOVE)
            close(first.read)
            close(first.write)
            // The next lookup.
            let second = try Self.socketPair()
            defer {
                close(second.read)
                close(second.write)
            }
            guard second.read == first.read else { continue }
            watch.watch(second.read, what: CURL_POLL_IN)
            // The lookup ends: the resolver thread writes its byte.
            #expect(write(second.write, "x", 1) == 1)
            var ready: [Int32] = []
            watch.wait(timeoutMs: 2000) { fd, _ in ready.append(fd) }
            #expect(ready == [second.read], "the end of the lookup was not seen")
            return
        }
        Issue.record("the kernel never handed out the same socket number twice")
    }

    @Test("a connection (through the open and close callbacks) is still watched after a pause")
    func connectionKeptLazily() throws {
        let watch = try SocketWatch()
        defer { watch.close() }
        let pair = try Self.socketPair()
        defer {
            close(pair.read)
            close(pair.write)
        }
        watch.opened(pair.read)
        watch.watch(pair.read, what: CURL_POLL_IN)
        watch.watch(pair.read, what: CURL_POLL_REMOVE)   // the transfer ended; the connection is kept alive
        watch.watch(pair.read, what: CURL_POLL_IN)       // the next transfer on it
        #expect(write(pair.write, "x", 1) == 1)
        var ready: [Int32] = []
        watch.wait(timeoutMs: 2000) { fd, _ in ready.append(fd) }
        #expect(ready == [pair.read])
        watch.closing(pair.read)
    }
}
