import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// nginx (Debian's `/usr/sbin/nginx`, which `scripts/install-deps` installs) on a loopback port, speaking TLS 1.3 and
/// HTTP/2 by ALPN in front of an HTTP/1.1 origin of the test's own (`proxy_pass`), with a self-signed certificate for
/// `media.test` made for the test: what speaks HTTP/2 to the fetcher, where the fixture origin speaks HTTP/1.1 only.
/// One process (`master_process off`: nothing outlives a SIGKILL), in a directory of its own; its access log gives
/// each request's connection and protocol (`requests()`).
///
/// nginx cannot be asked to bind port 0 and say which it got, so its port is one the kernel said was free a moment
/// before, which another process may take first: nginx then exits ("Address already in use"), and the start is tried
/// again on another port, as `RedisServer` does. Readiness is asked through a unix socket in its directory, which is
/// this nginx's alone: nginx serves nothing before every one of its sockets is bound.
final class NginxFront: @unchecked Sendable {
    /// The HTTPS port.
    private(set) var port = 0
    /// The certificate, which the fetcher trusts as its CA bundle.
    let certificate: String
    private let key: String
    private let directory: String
    private let upstream: Int
    private var process: ChildProcess?

    /// Where Debian's nginx package puts the server.
    static let executable = "/usr/sbin/nginx"

    /// How many ports the start tries. Each attempt fails only when another process took the port in the moment
    /// between `freePort()` and nginx's bind; five in a row is something else, and reported.
    static let portAttempts = 5

    /// One request of the access log.
    struct Request: Equatable {
        /// nginx's serial number of the connection that carried it.
        var connection: String
        /// "HTTP/2.0", "HTTP/1.1".
        var protocolName: String
        /// The request's path and query.
        var target: String
        /// Whether its connection resumed a TLS session (`$ssl_session_reused`).
        var resumed: Bool
    }

    /// Whether nginx offers HTTP/2 by ALPN (else HTTP/1.1 alone).
    let http2: Bool
    /// Whether nginx keeps sessions and sends tickets (else every connection is a full handshake).
    let resumption: Bool

    /// nginx in front of `http://127.0.0.1:upstream`. Blocks (on this thread: call it through `offPool`) until nginx
    /// serves, 30 s at most.
    init(upstream: Int, http2: Bool = true, resumption: Bool = true) throws {
        self.http2 = http2
        self.resumption = resumption
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw ServeFailure(
                "nginx was not found at \(Self.executable): run scripts/install-deps (it installs nginx)")
        }
        self.upstream = upstream
        directory = try temporaryDirectory()
        (certificate, key) = try makeCertificate(in: directory)
        var taken: [Int] = []
        for _ in 0..<Self.portAttempts {
            port = try freePort()
            if try start() { return }
            taken.append(port)
        }
        throw ServeFailure("nginx found each of the ports \(taken) taken")
    }

    deinit {
        // Ended before its directory goes: SIGTERM (nginx's fast shutdown), SIGKILL after a bound.
        process?.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts nginx on `port`; returns once it serves, or false when the port was taken (nginx exited saying so).
    /// - Throws: `ChildProcess.Failure` saying why nginx did not serve within 30 s, with its error log.
    private func start() throws -> Bool {
        let conf = directory + "/nginx.conf"
        let errors = directory + "/error.log"
        try? FileManager.default.removeItem(atPath: errors)
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: conf))
        // -e: the error log from the start (before it reads the configuration, nginx would open the package's own).
        let process = ChildProcess(Self.executable, ["-p", directory, "-c", conf, "-e", errors])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.logFile = errors
        try process.run()
        self.process = process
        do {
            try process.waitUntilReady("nginx on port \(port) to serve") { Self.answers(unixSocket: readySocket) }
            return true
        } catch let failure as ChildProcess.Failure {
            if case .exited = failure.reason, failure.log.contains("Address already in use") { return false }
            throw failure
        }
    }

    /// The unix socket readiness is asked through: one an attempt (an nginx that exited may leave its file behind).
    private var readySocket: String { directory + "/ready-\(port).sock" }

    /// No session kept, no ticket sent (TLS 1.3's `NumTickets 0`: with tickets and the cache off alone, nginx 1.22
    /// still sent tickets no later connection could use).
    private static let noResumption =
        "\n    ssl_session_tickets off;\n    ssl_session_cache off;\n    ssl_conf_command NumTickets 0;"

    /// nginx's configuration for `port`.
    private var configuration: String {
        """
        daemon off;
        master_process off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log warn;
        events { worker_connections 256; }
        http {
            log_format front '$connection $server_protocol $request_uri $ssl_session_reused';
            access_log \(directory)/access.log front;
            client_body_temp_path \(directory)/body;
            proxy_temp_path \(directory)/proxy;
            fastcgi_temp_path \(directory)/fastcgi;
            uwsgi_temp_path \(directory)/uwsgi;
            scgi_temp_path \(directory)/scgi;
            ssl_certificate \(certificate);
            ssl_certificate_key \(key);
            ssl_protocols TLSv1.3;\(resumption ? "" : Self.noResumption)
            server {
                listen 127.0.0.1:\(port) ssl\(http2 ? " http2" : "");
                listen unix:\(readySocket);
                location = /ready { return 204; }
                location / { proxy_pass http://127.0.0.1:\(upstream); }
            }
        }

        """
    }

    /// Whether an HTTP request to `/ready` over the unix socket at `path` is answered 204 (1 s at most).
    private static func answers(unixSocket path: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { return false }
        let request = Array("GET /ready HTTP/1.0\r\n\r\n".utf8)
        guard write(descriptor, request, request.count) == request.count else { return false }
        var reply = [UInt8](repeating: 0, count: 64)
        let count = read(descriptor, &reply, reply.count)
        return count > 0 && String(decoding: reply.prefix(count), as: UTF8.self).hasPrefix("HTTP/1.1 204")
    }

    /// The requests nginx has logged (each once its response was sent), the readiness probes left out.
    func requests() -> [Request] {
        let log = (try? String(contentsOfFile: directory + "/access.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 4, fields[2] != "/ready" else { return nil }
            return Request(connection: fields[0], protocolName: fields[1], target: fields[2], resumed: fields[3] == "r")
        }
    }
}
