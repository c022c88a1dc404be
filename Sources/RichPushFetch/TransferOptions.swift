import RichPushCore

/// The curl options of one transfer, as values decided from its request and the fetcher's settings;
/// `EasyHandle.apply(_:hop:)` sets them. The callbacks are the transfer's own (`Transfer.configure()`).
struct TransferOptions {
    /// The options that change with each hop of a redirect.
    struct Hop: Equatable {
        /// CURLOPT_URL.
        var url: String
        /// CURLOPT_TIMEOUT_MS: the time left until the deadline, at least 1 ms (0 would mean no timeout at all).
        var timeoutMilliseconds: Int
        /// CURLOPT_FRESH_CONNECT: whether the hop must open a connection rather than reuse one.
        var newConnection: Bool

        /// The hop to `url`, made at `now`, for a transfer that must end by `deadline`, on a new connection when
        /// `newConnection`.
        init(url: String, deadline: ContinuousClock.Instant, now: ContinuousClock.Instant, newConnection: Bool = false)
        {
            self.url = url
            timeoutMilliseconds = max(1, (deadline - now).inMilliseconds)
            self.newConnection = newConnection
        }
    }

    /// The network settings the rest are read from (CURLOPT_USERAGENT, CURLOPT_RESOLVE and CURLOPT_LOW_SPEED_LIMIT
    /// as they are).
    let network: NetworkSettings
    /// CURLOPT_CAINFO (or CAINFO_BLOB): where libcurl reads the private copy of `network.caBundle`
    /// (`CertificateBundleCopy`); nil for the system's bundle.
    let caInfo: CertificateBundleCopy.Source?
    /// CURLOPT_MAXFILESIZE_LARGE: the largest body of any type, refused from its declared length.
    let maximumFileSize: Int64
    /// CURLOPT_HTTPHEADER: the request's validators (If-None-Match, If-Modified-Since).
    let headers: [String]

    /// The options of `request` under `settings`.
    init(request: TransferRequest, settings: FetchSettings) {
        network = settings.network
        caInfo = settings.certificateBundle?.source()
        maximumFileSize = Int64(settings.caps.beforeType)
        headers = request.validators.requestHeaders
    }

    /// CURLOPT_PROTOCOLS_STR: https, and http when allowed.
    var protocols: String { network.allowHTTP ? "http,https" : "https" }

    /// CURLOPT_CONNECTTIMEOUT_MS.
    var connectTimeoutMilliseconds: Int { network.connectTimeout.inMilliseconds }

    /// CURLOPT_LOW_SPEED_TIME, in whole seconds, at least 1 (0 would turn the low-speed check off).
    var lowSpeedSeconds: Int { max(1, Int(network.lowSpeedWindow.components.seconds)) }
}
