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
/// A kept-alive connection is dropped from libcurl's interest when its transfer ends and asked
/// for again by the next transfer on it. The set follows lazily: a socket libcurl no longer
/// wants stays in it until it signals (the peer closed an idle connection: it is taken out
/// then) or is wanted again (nothing to change). That saves two `epoll_ctl` calls per request.
/// Only connections get that: they are opened and closed through our callbacks
/// (`CURLOPT_OPENSOCKETFUNCTION`, `CURLOPT_CLOSESOCKETFUNCTION`), so a number the kernel hands
/// out again is never mistaken for the old socket still in the set.
///
/// Every other socket libcurl asks us to watch is one it made and closes itself, unseen: the
/// threaded resolver's socketpair, one per host name lookup, which wakes libcurl when the lookup
/// ends. Such a socket is taken out of the set as soon as libcurl no longer wants it, and its
/// registration is always written to the kernel. Kept lazily, its number came back with the next
/// lookup's socketpair, looked registered, and was never added: the lookup's end went unseen and
/// every request to a host that does not resolve (which fails in milliseconds) waited for the
/// connection timeout instead.
///
/// Concurrency: belongs to its `HTTPMulti`, on the thread that owns it; libcurl calls the
/// callbacks below only from inside that thread's calls into the multi handle.
final class SocketWatch {
    private let epoll: Int32
    /// Sockets in the epoll set, with the events they are registered for.
    private var registered: [Int32: UInt32] = [:]
    /// Sockets libcurl wants watched now.
    private var wanted: Set<Int32> = []
    /// Sockets opened through `opened` and not yet `closing`: the connections, kept lazily.
    private var connections: Set<Int32> = []
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
        let connection = connections.contains(fd)
        if what == CURL_POLL_REMOVE {
            wanted.remove(fd)
            // A connection stays in the set until it signals or is closed; any other socket goes
            // now, while its number is still its own (libcurl closes it right after, unseen).
            if !connection, registered.removeValue(forKey: fd) != nil { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil) }
            return
        }
        wanted.insert(fd)
        let mask = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        let old = registered.updateValue(mask, forKey: fd)
        if connection && old == mask { return }
        var event = epoll_event()
        event.events = mask
        event.data.fd = fd
        // Not a connection: the kernel's set is the truth (the number may be a new socket's).
        if epoll_ctl(epoll, old == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) != 0 {
            _ = epoll_ctl(epoll, errno == ENOENT ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event)
        }
    }

    /// A connection libcurl just opened: whatever had this number before is gone (closing a
    /// socket takes it out of the epoll set).
    func opened(_ fd: Int32) {
        registered.removeValue(forKey: fd)
        wanted.remove(fd)
        connections.insert(fd)
    }

    /// A connection libcurl is about to close.
    func closing(_ fd: Int32) {
        registered.removeValue(forKey: fd)
        wanted.remove(fd)
        connections.remove(fd)
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

    /// Waits up to `timeoutMs` for ready sockets; calls `ready(fd, CURL_CSELECT_… bits)` for each
    /// socket libcurl wants watched.
    func wait(timeoutMs: Int, _ ready: (Int32, Int32) -> Void) {
        let count = epoll_wait(epoll, events, Int32(capacity), Int32(timeoutMs))
        guard count > 0 else { return }
        for i in 0..<Int(count) {
            let fd = events[i].data.fd
            let flags = events[i].events
            guard wanted.contains(fd) else {
                // An idle connection signalled (closed by the peer): out of the set, or it would
                // signal on every wait. libcurl finds it dead when it next looks at it.
                if registered.removeValue(forKey: fd) != nil { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil) }
                continue
            }
            // An error or hang-up makes the socket ready both ways: whichever way the transfer
            // goes, its next read or write reports what happened (as with libcurl's own poll check).
            var mask: Int32 = 0
            if flags & (EPOLLIN.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CURL_CSELECT_IN }
            if flags & (EPOLLOUT.rawValue | EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { mask |= CURL_CSELECT_OUT }
            ready(fd, mask)
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

func curlOpenSocketCallback(_ user: UnsafeMutableRawPointer?, _ purpose: curlsocktype,
                            _ address: UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t {
    guard let address else { return -1 }
    // What libcurl does itself without the callback.
    let fd = socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
    if fd >= 0, let user { Unmanaged<SocketWatch>.fromOpaque(user).takeUnretainedValue().opened(fd) }
    return fd
}

func curlCloseSocketCallback(_ user: UnsafeMutableRawPointer?, _ fd: curl_socket_t) -> Int32 {
    if let user { Unmanaged<SocketWatch>.fromOpaque(user).takeUnretainedValue().closing(fd) }
    return Glibc.close(fd)
}
