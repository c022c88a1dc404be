import RichPushCore

/// How large a body may grow: before its type is known, and once it is. Without a transformation the caps are
/// iOS's (`LimitSettings`); with one, an image may be as large as its source cap, since the step above downscales
/// it until it fits, and an image iOS does not attach is fetched to be transcoded.
package struct BodyCaps: Sendable {
    let limits: LimitSettings
    /// The cap of an image to transform, or nil when nothing is transformed.
    let sourceImageBytes: Int?
    /// Whether images iOS does not attach are fetched to be transcoded.
    let transcodes: Bool

    /// Caps from `limits`; `sourceImageBytes` for every image when images are transformed, and `transcodes` when
    /// images iOS does not attach are fetched to be converted.
    package init(limits: LimitSettings, sourceImageBytes: Int?, transcodes: Bool) {
        self.limits = limits
        self.sourceImageBytes = sourceImageBytes
        self.transcodes = transcodes
    }

    /// What a body may reach before its type is known: the largest cap of any type.
    package var beforeType: Int { max(limits.largestCap, sourceImageBytes ?? 0) }

    /// The cap once the type is known, and its name for messages; nil when the type is refused.
    func cap(for verdict: SniffVerdict) -> (type: MediaType, bytes: Int, name: String)? {
        switch verdict {
        case .supported(let type):
            if type.kind == .image, let source = sourceImageBytes { return (type, source, "image source cap") }
            return (type, limits.cap(for: type.kind), "\(type.kind) cap")
        case .convertible(let type, _):
            guard transcodes, let source = sourceImageBytes else { return nil }
            return (type, source, "image source cap")
        case .unsupported:
            return nil
        }
    }
}
