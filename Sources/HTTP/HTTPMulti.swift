internal import CCurl
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Process-wide libcurl set-up. Call once from `main`, before any thread starts.
public enum HTTPGlobal {
    public static func initialize() {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        // A peer that closes early must not kill the process; libcurl reports it as an error.
        signal(SIGPIPE, SIG_IGN)
    }
}

/// A request to send. `tag` is the caller's handle to recognize the answer.
public struct HTTPRequest: Sendable {
    /// PUT sends its body as a POST does (Send Consumption Information).
    public enum Method: Sendable { case get, post, put }
    public var tag: Int
    public var method: Method
    public var url: String
    /// Sent with a POST or a PUT; ignored for a GET.
    public var body: [UInt8]
    public var headers: [String]
    public var timeoutMs: Int
    /// Response headers to hand back in `HTTPCompletion.headers` (e.g. `Retry-After`).
    public var wantedHeaders: [String]

    public init(tag: Int, method: Method = .post, url: String, body: [UInt8] = [],
                headers: [String] = ["Content-Type: application/json"], timeoutMs: Int, wantedHeaders: [String] = []) {
        self.tag = tag
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.timeoutMs = timeoutMs
        self.wantedHeaders = wantedHeaders
    }
}

/// What came back: an HTTP answer, or a transport failure with libcurl's words.
public struct HTTPCompletion: Sendable {
    public enum Outcome: Sendable {
        case response(status: Int, body: [UInt8])
        /// `code` is the CURLcode; `message` names it and the (credential-free) URL.
        case failure(code: Int, message: String, timedOut: Bool)
    }
    public var tag: Int
    public var outcome: Outcome
    /// Milliseconds from start to end of the transfer.
    public var elapsedMs: Int
    /// The request's `wantedHeaders` that the response carried (names as asked).
    public var headers: [String: String] = [:]
}

/// One transfer in flight: what its answer is collected into.
private final class Transfer {
    let tag: Int
    /// The URL as asked; only its redacted form goes into messages (made when one is needed).
    let url: String
    var redactedURL: String { HTTPMulti.redact(url) }
    var body: [UInt8] = []
    var truncatedAt: Int
    let started: UInt64
    var wantedHeaders: [String] = []

    init(tag: Int, url: String, maxBody: Int) {
        self.tag = tag
        self.url = url
        self.truncatedAt = maxBody
        started = monotonicMillis()
    }
}

/// An easy handle with the options that stay set on it from one request to the next. libcurl
/// parses and copies each option it is given, and `curl_easy_reset` frees them all: only what a
/// request changes is set again (the URL, timeout and header list are compared first).
/// Owns the handle, its error buffer and header list; frees them once, in `deinit`.
private final class Handle {
    let easy: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>
    var url: String?
    var timeoutMs: Int?
    var headers: [String]?
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// Whether the last request named its method (`CURLOPT_CUSTOMREQUEST`, a PUT).
    var customMethod = false

    /// A new handle with the options every request has; nil when libcurl refuses.
    init?(watch: SocketWatch) {
        guard let easy = curl_easy_init() else { return nil }
        self.easy = easy
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        // Sockets open and close through the watch, which keeps them in its epoll set.
        let watcher = Unmanaged.passUnretained(watch).toOpaque()
        var ok = ccurl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, errorBuffer) == CURLE_OK
        ok = ok && ccurl_easy_setopt_write(easy, httpWriteBody) == CURLE_OK
        ok = ok && ccurl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1) == CURLE_OK
        ok = ok && ccurl_easy_setopt_opensocket(easy, curlOpenSocketCallback) == CURLE_OK
        ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, watcher) == CURLE_OK
        ok = ok && ccurl_easy_setopt_closesocket(easy, curlCloseSocketCallback) == CURLE_OK
        ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_CLOSESOCKETDATA, watcher) == CURLE_OK
        // A host name lookup still running when its transfer ends is left to finish alone: the loop
        // never waits on a DNS server that does not answer.
        ok = ok && ccurl_easy_setopt_quick_exit(easy) == CURLE_OK
        // Never CURLOPT_VERBOSE: request bodies carry the shared secret.
        guard ok else { return nil }
    }

    /// Sets what `request` needs that differs from the handle's last request, and `transfer`
    /// as where the answer goes. False when libcurl refused an option.
    func prepare(_ request: HTTPRequest, for transfer: Transfer) -> Bool {
        errorBuffer[0] = 0
        var ok = true
        if url != request.url {
            ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_URL, request.url) == CURLE_OK
            url = ok ? request.url : nil
        }
        if timeoutMs != request.timeoutMs {
            ok = ok && ccurl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, request.timeoutMs) == CURLE_OK
            ok = ok && ccurl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, min(request.timeoutMs, 10_000)) == CURLE_OK
            timeoutMs = ok ? request.timeoutMs : nil
        }
        if headers != request.headers {
            if let headerList { curl_slist_free_all(headerList) }
            headerList = nil
            for header in request.headers { headerList = curl_slist_append(headerList, header) }
            ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_HTTPHEADER, headerList) == CURLE_OK
            headers = ok ? request.headers : nil
        }
        // A PUT is a POST renamed; the name is taken back before any other request.
        if customMethod != (request.method == .put) {
            if request.method == .put {
                ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, "PUT") == CURLE_OK
            } else {
                ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, nil) == CURLE_OK
            }
            customMethod = request.method == .put
        }
        switch request.method {
        case .post, .put:
            ok = ok && ccurl_easy_setopt_long(easy, CURLOPT_POST, 1) == CURLE_OK
            ok = ok && ccurl_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)) == CURLE_OK
            ok = ok && request.body.withUnsafeBytes { ccurl_easy_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) } == CURLE_OK
        case .get:
            ok = ok && ccurl_easy_setopt_long(easy, CURLOPT_HTTPGET, 1) == CURLE_OK
        }
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_WRITEDATA, me) == CURLE_OK
        ok = ok && ccurl_easy_setopt_ptr(easy, CURLOPT_PRIVATE, me) == CURLE_OK
        return ok
    }

    deinit {
        curl_easy_cleanup(easy)
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }
}

/// A libcurl multi handle driving many requests (POST, GET or PUT) at once over kept-alive connections.
///
/// Concurrency: the object, its multi handle and every easy handle belong to the single thread
/// that calls `add` and `poll`; nothing else touches them. The caller caps how many transfers
/// are in flight (libcurl's timeout keeps running while a transfer waits for a connection, so
/// queueing everything here would turn waiting into spurious timeouts). Driven by
/// `curl_multi_socket_action` over an epoll set (`SocketWatch`): a wake-up costs work for the
/// sockets that are ready, not for every transfer in flight.
public final class HTTPMulti {
    private let multi: UnsafeMutableRawPointer
    /// Easy handles ready for reuse, and those in flight with their transfer.
    private var idle: [Handle] = []
    private var active: [UnsafeMutableRawPointer: (handle: Handle, transfer: Transfer)] = [:]
    private let maxBodyBytes: Int
    private var closed = false
    /// The sockets and timer libcurl wants watched: the multi handle runs on `socket_action`.
    private let watch: SocketWatch

    public init(maxBodyBytes: Int = 4 << 20) {
        multi = curl_multi_init()!
        self.maxBodyBytes = maxBodyBytes
        // Without epoll (never seen on Linux) nothing can be driven: as fatal as curl_multi_init failing.
        watch = try! SocketWatch()
        let me = Unmanaged.passUnretained(watch).toOpaque()
        ccurl_multi_setopt_socketfunction(multi, curlSocketCallback)
        ccurl_multi_setopt_ptr(multi, CURLMOPT_SOCKETDATA, me)
        ccurl_multi_setopt_timerfunction(multi, curlTimerCallback)
        ccurl_multi_setopt_ptr(multi, CURLMOPT_TIMERDATA, me)
    }

    deinit { close() }

    public var inFlight: Int { active.count }

    /// Frees every handle. Transfers still in flight are abandoned.
    public func close() {
        guard !closed else { return }
        closed = true
        for (easy, _) in active { curl_multi_remove_handle(multi, easy) }
        active.removeAll()   // the handles' deinit cleans them up
        idle.removeAll()
        curl_multi_cleanup(multi)
        watch.close()
    }

    /// Starts a transfer. Throws only when libcurl cannot even set it up.
    public func add(_ request: HTTPRequest) throws {
        let transfer = Transfer(tag: request.tag, url: request.url, maxBody: maxBodyBytes)
        transfer.wantedHeaders = request.wantedHeaders
        guard let handle = idle.popLast() ?? Handle(watch: watch) else {
            throw HTTPError(message: "curl_easy_init failed")
        }
        // A handle libcurl refused is dropped (its deinit frees it), never reused half set.
        guard handle.prepare(request, for: transfer) else {
            throw HTTPError(message: "libcurl refused the options for \(transfer.redactedURL)")
        }
        guard curl_multi_add_handle(multi, handle.easy) == CURLM_OK else {
            throw HTTPError(message: "curl_multi_add_handle failed for \(transfer.redactedURL)")
        }
        active[handle.easy] = (handle, transfer)
    }

    /// Drives the transfers, waiting at most `timeoutMs` for activity, and returns those that ended.
    /// With nothing in flight it waits `timeoutMs` (the caller's next deadline).
    public func poll(timeoutMs: Int) -> [HTTPCompletion] {
        var running: Int32 = 0
        // A transfer just added starts on the timer (libcurl sets it to "now").
        if watch.timerExpired { curl_multi_socket_action(multi, ccurl_socket_timeout, 0, &running) }
        watch.wait(timeoutMs: watch.waitLimit(max(0, timeoutMs))) { fd, mask in
            curl_multi_socket_action(multi, fd, mask, &running)
        }
        if watch.timerExpired { curl_multi_socket_action(multi, ccurl_socket_timeout, 0, &running) }
        var done: [HTTPCompletion] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, easy)
            guard let (handle, transfer) = active.removeValue(forKey: easy) else { continue }
            let elapsed = Int(monotonicMillis() - transfer.started)
            if code == CURLE_OK {
                var status = 0
                ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
                var headers: [String: String] = [:]
                for name in transfer.wantedHeaders {
                    if let value = ccurl_response_header(easy, name) { headers[name] = String(cString: value) }
                }
                done.append(HTTPCompletion(tag: transfer.tag, outcome: .response(status: status, body: transfer.body),
                                           elapsedMs: elapsed, headers: headers))
            } else {
                let detail = String(cString: handle.errorBuffer)
                let name = String(cString: curl_easy_strerror(code))
                let text = detail.isEmpty ? name : detail
                done.append(HTTPCompletion(
                    tag: transfer.tag,
                    outcome: .failure(code: Int(code.rawValue), message: "\(text) (\(transfer.redactedURL))",
                                      timedOut: code == CURLE_OPERATION_TIMEDOUT),
                    elapsedMs: elapsed))
            }
            idle.append(handle)
        }
        return done
    }

    /// The URL without user information or query, for messages.
    static func redact(_ url: String) -> String {
        var text = Substring(url)
        if let q = text.firstIndex(of: "?") { text = text[..<q] }
        guard let colon = text.firstIndex(of: ":") else { return String(text) }
        let afterScheme = text[colon...].dropFirst(3)   // "://"
        let authorityEnd = afterScheme.firstIndex(of: "/") ?? text.endIndex
        if let at = afterScheme[..<authorityEnd].lastIndex(of: "@") {
            return String(text[..<afterScheme.startIndex]) + String(text[text.index(after: at)...])
        }
        return String(text)
    }
}

public struct HTTPError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}

private func httpWriteBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                           _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    let transfer = Unmanaged<Transfer>.fromOpaque(user).takeUnretainedValue()
    // A body past the cap aborts the transfer (libcurl reports a write error): garbage, not memory growth.
    guard transfer.body.count + total <= transfer.truncatedAt else { return 0 }
    data.withMemoryRebound(to: UInt8.self, capacity: total) {
        transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: total))
    }
    return total
}

func monotonicMillis() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
}

// The multi handle and its easy handles belong to the thread that drives them: never Sendable.
@available(*, unavailable)
extension HTTPMulti: Sendable {}
