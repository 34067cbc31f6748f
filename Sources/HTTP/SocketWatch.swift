internal import CCurl
#if canImport(Glibc)
internal import Glibc
#endif

/// The sockets and the timer a libcurl multi handle asks its owner to watch
/// (`curl_multi_socket_action`), kept in an epoll set.
///
/// Why not `curl_multi_perform` + `curl_multi_poll`: `perform` visits every transfer and checks
/// each one's socket with a `poll()` of its own, so each answer that arrived cost a system call
/// per transfer in flight (about 12 per answer at 64 in flight). With `socket_action` libcurl
/// runs only the transfers whose socket is ready, and the kernel keeps the interest list.
///
/// Concurrency: belongs to its `HTTPMulti`, on the thread that owns it; libcurl calls the
/// callbacks below only from inside that thread's calls into the multi handle.
final class SocketWatch {
    private let epoll: Int32
    /// Sockets in the epoll set now.
    private var watched: Set<Int32> = []
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`, on the monotonic clock
    /// in milliseconds; nil: no timer.
    var timerDue: UInt64?
    private var events: UnsafeMutablePointer<epoll_event>
    private let capacity = 128

    init() throws {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw HTTPError(message: "epoll_create1 failed: errno \(errno)") }
        events = .allocate(capacity: capacity)
    }

    func close() {
        _ = Glibc.close(epoll)
        events.deallocate()
    }

    /// libcurl's `CURLMOPT_SOCKETFUNCTION`: start, change or stop watching `fd`.
    func watch(_ fd: Int32, what: Int32) {
        if what == CURL_POLL_REMOVE {
            // A socket libcurl already closed has left the set by itself: ENOENT is fine.
            if watched.remove(fd) != nil { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil) }
            return
        }
        var event = epoll_event()
        event.events = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        event.data.fd = fd
        if watched.insert(fd).inserted {
            // The same number may still be in the set from a socket closed without a REMOVE.
            if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 && errno == EEXIST {
                _ = epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event)
            }
        } else if epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &event) != 0 && errno == ENOENT {
            _ = epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event)
        }
    }

    /// libcurl's `CURLMOPT_TIMERFUNCTION`: -1 deletes the timer, 0 means at once.
    func setTimer(_ timeoutMs: Int) {
        timerDue = timeoutMs < 0 ? nil : monotonicMillis() + UInt64(timeoutMs)
    }

    var timerExpired: Bool { timerDue.map { $0 <= monotonicMillis() } ?? false }

    /// Milliseconds until the timer is due, capped at `limit`.
    func waitLimit(_ limit: Int) -> Int {
        guard let due = timerDue else { return limit }
        let now = monotonicMillis()
        return due <= now ? 0 : min(limit, Int(due - now))
    }

    /// Waits up to `timeoutMs` for ready sockets; calls `ready(fd, CURL_CSELECT_… bits)` for each.
    func wait(timeoutMs: Int, _ ready: (Int32, Int32) -> Void) {
        let count = epoll_wait(epoll, events, Int32(capacity), Int32(timeoutMs))
        guard count > 0 else { return }
        for i in 0..<Int(count) {
            let flags = events[i].events
            // An error or hang-up makes the socket ready both ways: whichever way the transfer
            // goes, its next read or write reports what happened (as with libcurl's own poll check).
            var mask: Int32 = 0
            if flags & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CURL_CSELECT_IN }
            if flags & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CURL_CSELECT_OUT }
            ready(events[i].data.fd, mask)
        }
    }
}

func curlSocketCallback(_ easy: UnsafeMutableRawPointer?, _ fd: curl_socket_t, _ what: Int32,
                        _ user: UnsafeMutableRawPointer?, _ socketData: UnsafeMutableRawPointer?) -> Int32 {
    guard let user else { return 0 }
    Unmanaged<SocketWatch>.fromOpaque(user).takeUnretainedValue().watch(fd, what: what)
    return 0
}

func curlTimerCallback(_ multi: UnsafeMutableRawPointer?, _ timeoutMs: Int, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let user else { return 0 }
    Unmanaged<SocketWatch>.fromOpaque(user).takeUnretainedValue().setTimer(timeoutMs)
    return 0
}
