import RichPushCore

/// WebEngage: `expandableDetails`, read only when `source` is `webengage`, by its `style`, as
/// WEXPushNotificationService and WERenderer (WebEngage/WEServiceExtension) read it: `image` for BIG_PICTURE,
/// RATING_V1 and OVERLAY; every `items[].image` for CAROUSEL_V1; for TILES, the background `image` (its thumbnail
/// hidden) and every `tiles[].image`. Identifiers are positions, as WebEngage's Network.fetchAttachment names
/// them: `0`, `1`, ... in the list's order (a TILES background is `0` and shifts the tiles by one); an item without
/// an image keeps its place. An empty `image` and other styles (BIG_TEXT) fetch nothing, as in the SDK.
public struct WebEngageConvention: MediaConvention {
    public var name: String { "webengage" }

    /// WebEngage's own marker: `source` = `webengage`.
    public static let marker = VendorMarker(["source"], equals: "webengage")

    /// The marker's `source`: without it nothing is read.
    public var rootKeys: [String]? { ["source"] }

    /// The convention.
    public init() {}

    public func scan(_ payload: PushPayload) -> ConventionScan {
        var scan = ConventionScan()
        guard Self.marker.isPresent(in: payload),
            let details = scan.value(at: ["expandableDetails"], in: payload)
        else { return scan }
        guard let object = scan.object(details, field: "expandableDetails", expected: "{style, image, items}") else {
            return scan
        }
        switch scan.string(object["style"], field: "expandableDetails.style") {
        case "BIG_PICTURE", "RATING_V1", "OVERLAY":
            take(object["image"], field: "expandableDetails.image", position: 0, into: &scan)
        case "CAROUSEL_V1":
            list(object["items"], field: "expandableDetails.items", first: 0, into: &scan)
        case "TILES":
            let background = object["image"]?.stringValue.map { !$0.isEmpty } == true
            if background {
                take(
                    object["image"], field: "expandableDetails.image", position: 0, into: &scan,
                    thumbnail: Thumbnail(hidden: true))
            }
            list(object["tiles"], field: "expandableDetails.tiles", first: background ? 1 : 0, into: &scan)
        default:
            break
        }
        return scan
    }

    /// Every item's `image` in `value` (an array of objects), the first at position `first`.
    private func list(_ value: PushPayload.JSON?, field: String, first: Int, into scan: inout ConventionScan) {
        guard let value else { return }
        guard case .array(let items) = value else {
            scan.problems.append(
                EnrichmentProblem(
                    source: field, code: .badReference,
                    detail: "\(field) holds \(value.kindDescription); expected an array of {image}"))
            return
        }
        for (index, item) in items.enumerated() {
            guard let object = scan.object(item, field: "\(field)[\(index)]", expected: "{image}") else { continue }
            take(object["image"], field: "\(field)[\(index)].image", position: first + index, into: &scan)
        }
    }

    /// The image at `field`, identified by its position; an empty string is no image, as WebEngage's renderer
    /// treats it.
    private func take(
        _ value: PushPayload.JSON?, field: String, position: Int, into scan: inout ConventionScan,
        thumbnail: Thumbnail = Thumbnail()
    ) {
        if value?.stringValue?.isEmpty == true { return }
        scan.take(value, field: field, convention: name, identifier: "\(position)", thumbnail: thumbnail)
    }
}
