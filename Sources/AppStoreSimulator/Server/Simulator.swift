// The simulated App Store: a SwiftNIO HTTP/1.1 server on loopback answering
// POST /production/verifyReceipt and POST /sandbox/verifyReceipt, (with
// `SimulatorConfig.serverAPI`) the App Store Server API under /production/inApps/… and
// /sandbox/inApps/… (ServerAPI.swift), and (with `SimulatorConfig.salesReports`) App Store
// Connect's GET /v1/salesReports (SalesReports.swift).
//
//     let sim = try Simulator.start(SimulatorConfig(sharedSecret: "s3cret"))
//     // point the job at sim.productionURL / sim.sandboxURL
//     sim.callCount(receiptID: "R00000000010")
//     try sim.shutdown()

import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Reconciliation

public final class Simulator: @unchecked Sendable {
    private let group: MultiThreadedEventLoopGroup
    private let channel: Channel
    private let core: SimulatorCore
    private let stateLock = NSLock()
    private var isShutDown = false

    /// The port actually bound (the chosen one when the config said 0).
    public let port: Int
    public let host: String

    /// `http://127.0.0.1:PORT`
    public var baseURL: String { "http://\(host):\(port)" }
    /// `http://127.0.0.1:PORT/production/verifyReceipt` (for `IAP_VERIFY_URL_PRODUCTION`).
    public var productionURL: String { baseURL + "/production/verifyReceipt" }
    /// `http://127.0.0.1:PORT/sandbox/verifyReceipt` (for `IAP_VERIFY_URL_SANDBOX`).
    public var sandboxURL: String { baseURL + "/sandbox/verifyReceipt" }
    /// `http://127.0.0.1:PORT/production` (for `IAP_API_URL_PRODUCTION`: the Server API's paths follow it).
    public var productionAPIURL: String { baseURL + "/production" }
    /// `http://127.0.0.1:PORT/sandbox` (for `IAP_API_URL_SANDBOX`).
    public var sandboxAPIURL: String { baseURL + "/sandbox" }

    private init(group: MultiThreadedEventLoopGroup, channel: Channel, core: SimulatorCore, host: String) {
        self.group = group
        self.channel = channel
        self.core = core
        self.host = host
        self.port = channel.localAddress?.port ?? 0
    }

    /// Binds and starts serving; returns once the port is open.
    public static func start(_ config: SimulatorConfig = SimulatorConfig()) throws -> Simulator {
        let core = try SimulatorCore(config: config)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, config.threads ?? System.coreCount))
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(VerifyReceiptHandler(core: core))
                }
            }
        do {
            let channel = try bootstrap.bind(host: config.host, port: config.port).wait()
            return Simulator(group: group, channel: channel, core: core, host: config.host)
        } catch {
            try? group.syncShutdownGracefully()
            throw SimulatorError(message: "cannot listen on \(config.host):\(config.port): \(error)")
        }
    }

    /// Requests answered or faulted for a receipt id (counted whatever the outcome).
    public func callCount(receiptID: String) -> Int { core.callCount(receiptID: receiptID) }
    /// Every call so far, in decision order (empty when `recordCalls` is off).
    public var calls: [SimCall] { core.calls }
    /// All verifyReceipt requests so far, tokens or not.
    public var totalCalls: Int { core.totalCalls }
    /// Forgets the calls and counts (fault choice restarts from call 0 for every receipt).
    public func resetCalls() { core.resetCalls() }
    /// Replaces the refund list (e.g. a refund that happens between two runs of the job).
    public func setRefunds(_ refunds: [String: SimRefund]) { core.setRefunds(refunds) }
    /// Replaces the fault plan.
    public func setFaults(_ plan: FaultPlan) { core.setFaults(plan) }
    public func setLatency(ms: Int) { core.setLatency(ms: ms) }
    /// Every Send Consumption Information answer accepted so far, in order (`put` numbers the
    /// answers for one transaction); empty without the Server API.
    public var consumptionAnswers: [SimConsumptionAnswer] { core.api?.consumption.all ?? [] }
    /// The outcome decided for a consumption request (nil: not decided yet, or no request).
    public func consumptionOutcome(transactionID: String) -> SimConsumptionOutcome? {
        core.api?.consumption.outcome(transactionID)
    }
    /// Garbage mode on (a non-empty list) or off (empty).
    public func setGarbage(_ bodies: [HostileAnswers.Body]) { core.setGarbage(bodies) }

    /// Blocks until the server is closed (by `shutdown()` from another thread).
    public func waitUntilClosed() throws {
        try channel.closeFuture.wait()
    }

    /// Closes the listener and every connection, and stops the event loops. Idempotent.
    public func shutdown() throws {
        let first: Bool = stateLock.locked {
            defer { isShutDown = true }
            return !isShutDown
        }
        guard first else { return }
        try? channel.close().wait()
        try group.syncShutdownGracefully()
    }

    deinit {
        if !isShutDown { try? shutdown() }
    }
}

/// Collects one request, asks the core, writes the answer (after the configured latency).
final class VerifyReceiptHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private static let maxBody = 4 << 20
    private let core: SimulatorCore
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false

    init(core: SimulatorCore) { self.core = core }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body.removeAll(keepingCapacity: true)
            tooLarge = false
        case .body(var buf):
            if body.count + buf.readableBytes > Self.maxBody {
                tooLarge = true
            } else if let bytes = buf.readBytes(length: buf.readableBytes) {
                body.append(contentsOf: bytes)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(context: context, head: head)
        }
    }

    /// What an extra route's path asks, for the call log: its last segment's method (`:pull`,
    /// `productsv2`…) without the ids it holds.
    static func routeKind(_ path: String) -> String {
        for kind in ["productsv2", "voidedpurchases", "orders:batchGet", ":reviewrefund", ":pull", ":acknowledge", "/token"]
        where path.contains(kind) {
            return kind.trimmingCharacters(in: CharacterSet(charactersIn: ":/"))
        }
        return "other"
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        if let routes = core.extraRoutes {
            let rawQuery = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                .dropFirst().first ?? ""
            let request = SimRouteRequest(method: head.method.rawValue, path: path, query: String(rawQuery),
                                          headers: head.headers.map { ($0.name.lowercased(), $0.value) }, body: body)
            if let answer = routes(request) {
                // In the call log as `extra`, with the route's kind (never its ids or tokens).
                core.record(environment: .production, rid: nil, outcome: String(answer.status), endpoint: "extra",
                            pathID: Self.routeKind(path))
                // A body cut at `maxBody` was never the client's: refused, whatever the route said.
                if tooLarge {
                    send(context: context, head: head, status: .payloadTooLarge, contentType: "text/plain",
                         body: Array("Too Large".utf8))
                } else {
                    send(context: context, head: head, status: HTTPResponseStatus(statusCode: answer.status),
                         contentType: answer.contentType, body: answer.body, extra: answer.headers)
                }
                return
            }
        }
        if path == SalesReportService.path {
            let rawQuery = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first ?? ""
            guard let query = APIRequest.parseQuery(rawQuery) else {
                send(context: context, head: head, status: .badRequest, contentType: "text/plain", body: Array("Bad Request".utf8))
                return
            }
            let request = APIRequest(method: head.method.rawValue, environment: .production, path: Substring(path),
                                     query: query, authorization: head.headers["Authorization"], body: body)
            deliver(core.handleSalesReport(request), latency: 0, context: context, head: head)
            return
        }
        for (prefix, env) in [("/production/inApps/", AppStoreEnvironment.production), ("/sandbox/inApps/", .sandbox)]
        where path.hasPrefix(prefix) {
            if tooLarge {
                send(context: context, head: head, status: .payloadTooLarge, contentType: "text/plain", body: Array("Too Large".utf8))
                return
            }
            let rawQuery = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).dropFirst().first ?? ""
            guard let query = APIRequest.parseQuery(rawQuery) else {
                send(context: context, head: head, status: .badRequest, contentType: "text/plain", body: Array("Bad Request".utf8))
                return
            }
            let request = APIRequest(method: head.method.rawValue, environment: env,
                                     path: Substring(path.dropFirst(prefix.count - "/inApps/".count)), query: query,
                                     authorization: head.headers["Authorization"], body: body)
            let (action, latency) = core.handleAPI(request)
            deliver(action, latency: latency, context: context, head: head)
            return
        }
        let environment: AppStoreEnvironment
        switch path {
        case "/production/verifyReceipt", "/production/verifyReceipt/": environment = .production
        case "/sandbox/verifyReceipt", "/sandbox/verifyReceipt/": environment = .sandbox
        default:
            send(context: context, head: head, status: .notFound, contentType: "text/plain", body: Array("Not Found".utf8))
            return
        }
        guard head.method == .POST else {
            send(context: context, head: head, status: .methodNotAllowed, contentType: "text/plain",
                 body: Array("Method Not Allowed".utf8), extra: [("Allow", "POST")])
            return
        }
        if tooLarge {
            send(context: context, head: head, status: .payloadTooLarge, contentType: "text/plain", body: Array("Too Large".utf8))
            return
        }
        let (action, latency) = core.handle(environment: environment, body: body)
        deliver(action, latency: latency, context: context, head: head)
    }

    /// Sends `action` after `latency` ms (a timeout holds the connection, then closes it).
    private func deliver(_ action: SimAction, latency: Int, context: ChannelHandlerContext, head: HTTPRequestHead) {
        if case .fault(.timeout, _) = action {
            let hold = core.timeoutHoldMs
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(max(0, hold)))) {
                channel.close(promise: nil)
            }
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let perform: @Sendable () -> Void = {
            let (handler, ctx) = loopBound.value
            handler.perform(action, context: ctx, head: head)
        }
        if latency > 0 {
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(latency))) { perform() }
        } else {
            perform()
        }
    }

    private func perform(_ action: SimAction, context: ChannelHandlerContext, head: HTTPRequestHead) {
        guard context.channel.isActive else { return }
        switch action {
        case .json(let body):
            send(context: context, head: head, status: .ok, contentType: "application/json", body: body)
        case .http(let answer):
            send(context: context, head: head, status: HTTPResponseStatus(statusCode: answer.status),
                 contentType: answer.contentType, body: answer.body, extra: answer.headers)
        case .fault(let fault, let body):
            switch fault {
            case .timeout:
                break
            case .reset:
                let channel = context.channel
                if let provider = channel as? SocketOptionProvider {
                    provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
                        channel.close(promise: nil)
                    }
                } else {
                    channel.close(promise: nil)
                }
            case .truncated:
                var h = HTTPResponseHead(version: head.version, status: .ok)
                let bytes = body
                h.headers.add(name: "Content-Type", value: "application/json")
                h.headers.add(name: "Content-Length", value: String(bytes.count))
                context.write(wrapOutboundOut(.head(h)), promise: nil)
                var buf = context.channel.allocator.buffer(capacity: bytes.count / 2)
                buf.writeBytes(bytes[0..<(bytes.count / 2)])
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buf)))).whenComplete { _ in
                    channel.close(promise: nil)
                }
            case .http5xx:
                send(context: context, head: head, status: .serviceUnavailable, contentType: "text/plain", body: body)
            case .http429:
                send(context: context, head: head, status: .tooManyRequests, contentType: "text/plain", body: body,
                     extra: [("Retry-After", "1")])
            case .nonjson:
                send(context: context, head: head, status: .ok, contentType: "text/html", body: body)
            case .s21005, .s21009, .s211xx:
                send(context: context, head: head, status: .ok, contentType: "application/json", body: body)
            }
        }
    }

    private func send(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus,
                      contentType: String, body: [UInt8], extra: [(String, String)] = []) {
        let keepAlive = head.isKeepAlive
        var h = HTTPResponseHead(version: head.version, status: status)
        var buf = context.channel.allocator.buffer(capacity: body.count)
        buf.writeBytes(body)
        h.headers.add(name: "Content-Type", value: contentType)
        h.headers.add(name: "Content-Length", value: String(buf.readableBytes))
        for (k, v) in extra { h.headers.add(name: k, value: v) }
        if !keepAlive { h.headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(h)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
