import RichPushCore

/// The frames a HEIF decoder decodes to read the primary image of a HEIC or AVIF file, with the sizes their own coded
/// headers give: an HEVC sequence parameter set's `pic_width_in_luma_samples` and `pic_height_in_luma_samples`, an AV1
/// sequence header's `max_frame_width_minus_1` and `max_frame_height_minus_1`, wherever the item carries one (its
/// `hvcC` or `av1C` property, and its data).
///
/// libvips reads a HEIF image's size from its `ispe` property, which says what the writer claims, not what the decoder
/// decodes: an AVIF whose `ispe` said 100 x 100 over an AV1 frame of 16,000 x 16,000 (3,400 bytes) passed the pixel
/// limit and was decoded whole (1.8 GB, then `transform-failed`). The items counted are those libheif decodes for the
/// primary image: the primary item, the items a derived one (`grid`, `iden`, `iovl`) is made of (`dimg`), as often as
/// they are referenced, and the alpha planes of these (`auxl` with an alpha `auxC`); not thumbnails, depth maps or gain
/// maps. An item whose coded headers give no size counts its `ispe`.
///
/// It reads what libheif 1.15 reads, and where it cannot say, the file is not decoded (fails closed, `refusal`): more
/// than one `meta` box (libheif takes the last it parses), no primary item or no frame found for it, items derived
/// more than `maximumDepth` deep, more boxes, references or coded units than it reads. An item's extents are joined
/// before its units are walked (the decoder sees one stream); HEVC NAL units have 4-byte lengths whatever `hvcC`
/// says (libheif's libde265 plugin reads them so), and an empty one is passed over as libheif does.
package struct HEIFCodedFrames {
    /// One coded item decoded for the primary image, with the largest size its coded headers give.
    package struct Frame: Equatable {
        package var item: UInt32
        /// "HEVC" or "AV1".
        package var codec: String
        package var width: Int
        package var height: Int
        /// Whether the size is the item's `ispe` (no coded header gave one).
        package var fromProperty: Bool

        package var pixels: Int {
            let (product, overflow) = width.multipliedReportingOverflow(by: height)
            return overflow ? Int.max : product
        }
    }

    /// Why the file is not decoded whatever its pixels (`frames` is then empty): its work is past what is read
    /// (`unbounded`: more items, units or depth), or its boxes do not say what the decoder would decode
    /// (`unreadable`).
    package enum Refusal: Equatable, Sendable {
        case unbounded(String)
        case unreadable(String)
    }

    /// The coded items decoded for the primary image, once per reference.
    package let frames: [Frame]
    /// The primary item's `ispe`, the size libvips's header says (`explain`, which has no header, words a refusal
    /// with it); nil where none was read.
    package var declared: ImageSize?
    /// Why the file is not decoded, or nil.
    package let refusal: Refusal?
    /// Read as the file's first bytes (`prefix`): how many of them would show more of what is counted, or nil when
    /// none would: the `meta` box whole where it runs past them; `Int.max` (as many as may be read: where the `meta`
    /// box ends is not known yet) where a box before it, or its own header, does; then the first 64 KiB of each
    /// counted item's data that lies past them or is cut by them. What lies past the `meta` box is never asked for
    /// (a second `meta` box there would need the whole file).
    package var wanted: Int?

    /// Their pixels together, saturating.
    package var pixels: Int {
        frames.reduce(0) { total, frame in
            let (sum, overflow) = total.addingReportingOverflow(frame.pixels)
            return overflow ? Int.max : sum
        }
    }

    /// The most coded units (NAL units, OBUs) read in one file's items and configurations: 100,000, where a
    /// photo's tiles have a few each.
    static let maximumUnits = 100_000
    /// The most items decoded for the primary image, counted once per reference: 65,536, a 256 x 256 grid.
    static let maximumReferences = 65_536
    /// The deepest derivation followed: a grid of grids and more (libheif follows them; no writer makes them).
    static let maximumDepth = 4
    /// The most boxes read in one box (or the file): 100,000.
    static let maximumBoxes = 100_000
    /// How much of an item's data is asked for (`wanted`): its first 64 KiB, where a sequence header or parameter set
    /// in the data comes first.
    static let wantedItemBytes = 64 << 10
    /// The most bytes of joined extents copied for one file: 64 MiB.
    static let maximumJoinedBytes = 64 << 20

    /// The frames of the HEIF file `bytes`, or why it is not decoded. With `prefix`, `bytes` are the file's first
    /// bytes alone (a probe's, `explain`): an item's data is then its extents in order up to the first that is cut or
    /// lies past them, a prefix of what the whole file's decoder is given, so that a unit is never read where the
    /// whole file has none (an extent within the first bytes joined after one past them is no unit's start).
    package static func read(_ bytes: [UInt8], prefix: Bool = false) -> HEIFCodedFrames {
        var parser = Parser(bytes: bytes, prefix: prefix)
        var read: HEIFCodedFrames
        do {
            read = HEIFCodedFrames(frames: try parser.frames())
        } catch {
            read = HEIFCodedFrames(frames: [], refusal: error.refusal)
        }
        read.declared = parser.declared
        if prefix {
            let wanted = max(parser.cutBeforeMeta() ?? 0, parser.wanted)
            read.wanted = wanted > bytes.count ? wanted : nil
        }
        return read
    }

    package init(frames: [Frame], refusal: Refusal? = nil) {
        self.frames = frames
        self.refusal = refusal
    }
}

/// A reason the parser stops (`HEIFCodedFrames.Refusal`).
private struct Stop: Error {
    let refusal: HEIFCodedFrames.Refusal
}

extension HEIFCodedFrames {
    /// A box's type and the range of its payload (after its header).
    fileprivate struct Box {
        let type: String
        let payload: Range<Int>
    }

    fileprivate struct Location {
        var method = 0
        var base = 0
        var extents: [(offset: Int, length: Int)] = []
    }

    fileprivate struct Parser {
        let bytes: [UInt8]
        var units = 0
        var joined = 0
        /// The primary item's `ispe`, once read.
        var declared: ImageSize?
        /// The sizes found in each configuration property, by where its payload starts: each box read once, however
        /// many associations name it.
        var configurations: [Int: [(Int, Int)]] = [:]

        /// Whether `bytes` are the file's first bytes alone.
        let prefix: Bool
        /// In `prefix`, the end of the furthest item data found cut by the bytes read or past them.
        var wanted = 0

        init(bytes: [UInt8], prefix: Bool) {
            self.bytes = bytes
            self.prefix = prefix
        }

        func integer(_ at: Int, _ count: Int) -> Int? {
            Self.integer(bytes, at, count)
        }

        static func integer(_ data: [UInt8], _ at: Int, _ count: Int) -> Int? {
            guard count >= 0, count <= 8, at >= 0, at <= data.count - count else { return nil }
            var value: UInt64 = 0
            for index in at..<(at + count) { value = value << 8 | UInt64(data[index]) }
            return value > UInt64(Int.max) ? nil : Int(value)
        }

        /// The header of the box at `start`: its size (nil for 0: to the end of what holds it), the header's length (8,
        /// or 16 with a 64-bit size) and its type; nil where the header is not all within the bytes.
        func header(at start: Int) -> (size: Int?, length: Int, type: Int)? {
            guard let size = integer(start, 4), let type = integer(start + 4, 4) else { return nil }
            guard size == 1 else { return (size == 0 ? nil : size, 8, type) }
            return integer(start + 8, 8).map { ($0, 16, type) }
        }

        /// The boxes from `lower` to `upper`; none when `lower` is past `upper`.
        func boxes(from lower: Int, to upper: Int) throws(Stop) -> [Box] {
            var found: [Box] = []
            var start = lower
            while start <= upper - 8 {
                guard found.count < HEIFCodedFrames.maximumBoxes else {
                    throw Stop(refusal: .unbounded("more than \(HEIFCodedFrames.maximumBoxes) boxes in one box"))
                }
                guard let (declared, header, _) = self.header(at: start) else { break }
                let size = declared ?? upper - start
                guard size >= header, size <= upper - start else { break }
                let type = String(decoding: bytes[(start + 4)..<(start + 8)], as: UTF8.self)
                found.append(Box(type: type, payload: (start + header)..<(start + size)))
                start += size
            }
            return found
        }

        /// The boxes inside `box` after its first `skip` bytes (a full box's version and flags, a count).
        func children(_ box: Box, skipping skip: Int) throws(Stop) -> [Box] {
            guard box.payload.count >= skip else { return [] }
            return try boxes(from: box.payload.lowerBound + skip, to: box.payload.upperBound)
        }

        /// In the first bytes alone, when no whole `meta` box comes first: the `meta` box's end where it runs past
        /// them; `Int.max` where a box before it, or a box's header, does (one round for each box in the way would
        /// spend every round on a few `free` boxes); nil when a whole `meta` box comes first, or none runs past.
        func cutBeforeMeta() -> Int? {
            var start = 0
            for _ in 0..<HEIFCodedFrames.maximumBoxes {
                guard start < bytes.count else { return nil }
                // A header cut, or a box running to the file's end (size 0).
                guard let (declared, _, type) = header(at: start), let size = declared else { return Int.max }
                let (end, overflow) = start.addingReportingOverflow(size)
                guard !overflow, size >= 8 else { return nil }
                let isMeta = type == 0x6D65_7461  // "meta"
                if end > bytes.count { return isMeta ? end : Int.max }
                if isMeta { return nil }
                start = end
            }
            return nil
        }

        mutating func frames() throws(Stop) -> [Frame] {
            let metas = try boxes(from: 0, to: bytes.count).filter { $0.type == "meta" }
            guard metas.count <= 1 else {
                throw Stop(refusal: .unreadable("it has \(metas.count) meta boxes (libheif reads the last it parses)"))
            }
            guard let meta = metas.first else { throw Stop(refusal: .unreadable("it has no meta box")) }
            let children = try children(meta, skipping: 4)
            func child(_ type: String) -> Box? { children.first { $0.type == type } }
            guard let pitm = child("pitm"), let primary = primaryItem(pitm) else {
                throw Stop(refusal: .unreadable("its meta box names no primary item (pitm)"))
            }
            let types = try child("iinf").map(itemTypes) ?? [:]
            let (derived, auxiliary) = try child("iref").map(references) ?? ([:], [:])
            let properties = try child("iprp").map(itemProperties) ?? [:]
            declared = spatialExtent(properties[primary] ?? []).map { ImageSize(width: $0.width, height: $0.height) }
            let locations = child("iloc").map(itemLocations) ?? [:]
            let idat = child("idat")?.payload

            // The items decoded: the primary, what derived items are made of, the alpha planes of all of these.
            var decoded: [UInt32] = []
            var pending = [(primary, 0)]
            while let (item, depth) = pending.popLast() {
                guard decoded.count < HEIFCodedFrames.maximumReferences else {
                    throw Stop(refusal: .unbounded("more than \(HEIFCodedFrames.maximumReferences) items referenced"))
                }
                decoded.append(item)
                let parts = derived[item] ?? []
                guard depth < HEIFCodedFrames.maximumDepth || parts.isEmpty else {
                    throw Stop(
                        refusal: .unbounded("items derived more than \(HEIFCodedFrames.maximumDepth) deep"))
                }
                for part in parts { pending.append((part, depth + 1)) }
            }
            var alpha: [UInt32] = []
            for item in Set(decoded) {
                for plane in auxiliary[item] ?? []
                where properties[plane]?.contains(where: { isAlpha($0) }) ?? false {
                    alpha.append(plane)
                }
            }

            var frames: [Frame] = []
            var sizes: [UInt32: Frame?] = [:]
            for item in decoded + alpha {
                if sizes[item] == nil {
                    sizes[item] = try frame(
                        item, type: types[item], properties: properties[item] ?? [], location: locations[item],
                        idat: idat)
                }
                if let frame = sizes[item] ?? nil { frames.append(frame) }
            }
            guard !frames.isEmpty else {
                throw Stop(
                    refusal: .unreadable("no coded frame of its primary image has a size (a sequence header or ispe)"))
            }
            return frames
        }

        func fullBoxVersion(_ box: Box) -> Int? {
            box.payload.count >= 4 ? integer(box.payload.lowerBound, 1) : nil
        }

        func primaryItem(_ box: Box) -> UInt32? {
            guard let version = fullBoxVersion(box) else { return nil }
            return integer(box.payload.lowerBound + 4, version == 0 ? 2 : 4).map { UInt32($0) }
        }

        func itemTypes(_ box: Box) throws(Stop) -> [UInt32: String] {
            guard let version = fullBoxVersion(box) else { return [:] }
            var types: [UInt32: String] = [:]
            for entry in try children(box, skipping: 4 + (version == 0 ? 2 : 4)) where entry.type == "infe" {
                guard let entryVersion = fullBoxVersion(entry), entryVersion >= 2 else { continue }
                let idSize = entryVersion == 2 ? 2 : 4
                let at = entry.payload.lowerBound + 4
                guard let item = integer(at, idSize), at + idSize + 6 <= entry.payload.upperBound else { continue }
                let typeStart = at + idSize + 2
                types[UInt32(item)] = String(decoding: bytes[typeStart..<(typeStart + 4)], as: UTF8.self)
            }
            return types
        }

        /// `dimg` references (a derived item to what it is made of, in order, repeated as written) and `auxl` ones
        /// (an item to its auxiliary items).
        func references(_ box: Box) throws(Stop) -> (derived: [UInt32: [UInt32]], auxiliary: [UInt32: [UInt32]]) {
            guard let version = fullBoxVersion(box) else { return ([:], [:]) }
            let idSize = version == 0 ? 2 : 4
            var derived: [UInt32: [UInt32]] = [:]
            var auxiliary: [UInt32: [UInt32]] = [:]
            for reference in try children(box, skipping: 4) {
                var at = reference.payload.lowerBound
                guard let from = integer(at, idSize), let count = integer(at + idSize, 2) else { continue }
                at += idSize + 2
                guard count * idSize <= reference.payload.upperBound - at else { continue }
                let targets = (0..<count).compactMap { index in integer(at + index * idSize, idSize).map { UInt32($0) }
                }
                switch reference.type {
                case "dimg": derived[UInt32(from), default: []] += targets
                case "auxl": for target in targets { auxiliary[target, default: []].append(UInt32(from)) }
                default: break
                }
            }
            return (derived, auxiliary)
        }

        /// Each item's properties, each once, in the order `ipma` first names them.
        func itemProperties(_ box: Box) throws(Stop) -> [UInt32: [Box]] {
            let children = try children(box, skipping: 0)
            guard let ipco = children.first(where: { $0.type == "ipco" }) else { return [:] }
            let listed = try self.children(ipco, skipping: 0)
            var indexes: [UInt32: [Int]] = [:]
            for ipma in children where ipma.type == "ipma" {
                guard let version = fullBoxVersion(ipma), let flags = integer(ipma.payload.lowerBound + 1, 3),
                    let count = integer(ipma.payload.lowerBound + 4, 4)
                else { continue }
                var at = ipma.payload.lowerBound + 8
                for _ in 0..<min(count, 1 << 20) {
                    guard let item = integer(at, version < 1 ? 2 : 4) else { break }
                    at += version < 1 ? 2 : 4
                    guard let associations = integer(at, 1) else { break }
                    at += 1
                    let size = flags & 1 != 0 ? 2 : 1
                    for _ in 0..<associations {
                        guard let value = integer(at, size) else { break }
                        at += size
                        let index = value & (size == 2 ? 0x7FFF : 0x7F)
                        if index >= 1, index <= listed.count, !(indexes[UInt32(item)]?.contains(index) ?? false) {
                            indexes[UInt32(item), default: []].append(index)
                        }
                    }
                }
            }
            return indexes.mapValues { $0.map { listed[$0 - 1] } }
        }

        func itemLocations(_ box: Box) -> [UInt32: Location] {
            guard let version = fullBoxVersion(box), version <= 2, let sizes = integer(box.payload.lowerBound + 4, 2)
            else { return [:] }
            let offsetSize = sizes >> 12 & 0xF
            let lengthSize = sizes >> 8 & 0xF
            let baseSize = sizes >> 4 & 0xF
            let indexSize = version >= 1 ? sizes & 0xF : 0
            let idSize = version < 2 ? 2 : 4
            var at = box.payload.lowerBound + 6
            guard let count = integer(at, idSize) else { return [:] }
            at += idSize
            var locations: [UInt32: Location] = [:]
            for _ in 0..<min(count, 1 << 20) {
                guard let item = integer(at, idSize) else { break }
                at += idSize
                var location = Location()
                if version >= 1 {
                    guard let method = integer(at, 2) else { break }
                    location.method = method & 0xF
                    at += 2
                }
                at += 2  // data_reference_index
                guard let base = integer(at, baseSize) else { break }
                location.base = base
                at += baseSize
                guard let extents = integer(at, 2) else { break }
                at += 2
                for _ in 0..<extents {
                    at += indexSize
                    guard let offset = integer(at, offsetSize), let length = integer(at + offsetSize, lengthSize)
                    else { return locations }
                    at += offsetSize + lengthSize
                    location.extents.append((offset, length))
                }
                locations[UInt32(item)] = location
            }
            return locations
        }

        func isAlpha(_ box: Box) -> Bool {
            guard box.type == "auxC", box.payload.count > 4 else { return false }
            let name = String(
                decoding: bytes[(box.payload.lowerBound + 4)..<box.payload.upperBound].prefix { $0 != 0 }, as: UTF8.self
            )
            return name.hasSuffix("auxid:1") || name.hasSuffix("auxiliary:alpha")
        }

        /// The byte ranges of an item's data, within the file (construction method 0) or `idat` (1), and (in `prefix`)
        /// whether the bytes read cut it or end before it.
        mutating func dataRanges(_ location: Location, idat: Range<Int>?) -> (ranges: [Range<Int>], cut: Bool) {
            let space: Range<Int>
            switch location.method {
            case 0: space = 0..<bytes.count
            case 1:
                guard let idat else { return ([], false) }
                space = idat
            default: return ([], false)
            }
            // In the file's first bytes alone, an extent past them, or cut by their end (or running to the file's
            // end), ends what is known of the stream (`idat` lies whole in the `meta` box read).
            let cut = prefix && location.method == 0
            var ranges: [Range<Int>] = []
            for extent in location.extents {
                let (start, overflow) = space.lowerBound.addingReportingOverflow(location.base)
                let (first, overflowAgain) = start.addingReportingOverflow(extent.offset)
                guard !overflow, !overflowAgain, first >= space.lowerBound, first < space.upperBound else {
                    if cut {
                        guard !overflow, !overflowAgain, first >= space.upperBound else { break }
                        want(first, extent.length)
                        return (ranges, true)
                    }
                    continue
                }
                let whole = extent.length != 0 && extent.length <= space.upperBound - first
                ranges.append(first..<(whole ? first + extent.length : space.upperBound))
                if cut, !whole {
                    want(first, extent.length)
                    return (ranges, true)
                }
            }
            return (ranges, false)
        }

        /// Notes that the extent of `length` bytes (0: to the file's end) at `first` is wanted, as far as its first
        /// `HEIFCodedFrames.wantedItemBytes`.
        mutating func want(_ first: Int, _ length: Int) {
            let bounded = length == 0 ? HEIFCodedFrames.wantedItemBytes : min(length, HEIFCodedFrames.wantedItemBytes)
            let (end, overflow) = first.addingReportingOverflow(bounded)
            wanted = max(wanted, overflow ? Int.max : end)
        }

        /// An item's data as its decoder gets it: its one extent in place, or its extents joined (nil when none); and
        /// whether the bytes read cut it (`dataRanges`).
        mutating func data(_ location: Location, idat: Range<Int>?) throws(Stop) -> (
            data: ([UInt8], Range<Int>)?, cut: Bool
        ) {
            let (ranges, cut) = dataRanges(location, idat: idat)
            guard ranges.count > 1 else { return (ranges.first.map { (bytes, $0) }, cut) }
            var joined: [UInt8] = []
            for range in ranges {
                self.joined += range.count
                guard self.joined <= HEIFCodedFrames.maximumJoinedBytes else {
                    throw Stop(
                        refusal: .unbounded(
                            "items whose extents join to more than \(HEIFCodedFrames.maximumJoinedBytes >> 20) MiB"))
                }
                joined += bytes[range]
            }
            return ((joined, 0..<joined.count), cut)
        }

        mutating func frame(
            _ item: UInt32, type: String?, properties: [Box], location: Location?, idat: Range<Int>?
        ) throws(Stop) -> Frame? {
            let codec: String
            switch type {
            case "hvc1": codec = "HEVC"
            case "av01": codec = "AV1"
            default: return nil
            }
            var sizes: [(Int, Int)] = []
            for property in properties
            where (codec == "HEVC" && property.type == "hvcC") || (codec == "AV1" && property.type == "av1C") {
                if let known = configurations[property.payload.lowerBound] {
                    sizes += known
                    continue
                }
                let found =
                    codec == "HEVC"
                    ? try hevcConfiguration(property.payload)
                    : property.payload.count > 4
                        ? try av1Units(bytes, (property.payload.lowerBound + 4)..<property.payload.upperBound) : []
                configurations[property.payload.lowerBound] = found
                sizes += found
            }
            var cut = false
            if let location {
                let read = try data(location, idat: idat)
                if let (data, range) = read.data {
                    sizes += codec == "HEVC" ? try hevcUnits(data, range) : try av1Units(data, range)
                }
                cut = read.cut
            }
            let found = sizes.map { Frame(item: item, codec: codec, width: $0.0, height: $0.1, fromProperty: false) }
            if let largest = found.max(by: { $0.pixels < $1.pixels }) { return largest }
            // Where the first bytes alone cut the item's data, a sequence header may lie further on (the whole file's
            // size): its `ispe` is no size of it (explain would refuse by it what enrich attaches).
            guard !cut, let (width, height) = spatialExtent(properties) else { return nil }
            return Frame(item: item, codec: codec, width: width, height: height, fromProperty: true)
        }

        /// The size an item's `ispe` property (among its `properties`) says, or nil.
        func spatialExtent(_ properties: [Box]) -> (width: Int, height: Int)? {
            guard let ispe = properties.first(where: { $0.type == "ispe" }),
                let width = integer(ispe.payload.lowerBound + 4, 4),
                let height = integer(ispe.payload.lowerBound + 8, 4)
            else { return nil }
            return (width, height)
        }

        /// Counts a coded unit read.
        mutating func countUnit() throws(Stop) {
            units += 1
            guard units <= HEIFCodedFrames.maximumUnits else {
                throw Stop(refusal: .unbounded("more than \(HEIFCodedFrames.maximumUnits) coded units in its items"))
            }
        }

        /// The sizes of the sequence parameter sets in an `hvcC` record.
        mutating func hevcConfiguration(_ payload: Range<Int>) throws(Stop) -> [(Int, Int)] {
            guard let arrays = integer(payload.lowerBound + 22, 1) else { return [] }
            var sizes: [(Int, Int)] = []
            var at = payload.lowerBound + 23
            for _ in 0..<arrays {
                guard let count = integer(at + 1, 2) else { break }
                at += 3
                for _ in 0..<count {
                    guard let length = integer(at, 2), length <= payload.upperBound - (at + 2) else { break }
                    try countUnit()
                    if let size = Self.hevcSequenceSize(bytes, (at + 2)..<(at + 2 + length)) { sizes.append(size) }
                    at += 2 + length
                }
            }
            return sizes
        }

        /// The sizes of the sequence parameter sets among the NAL units in `range` of `data`, each after a 4-byte
        /// length (libheif 1.15's libde265 plugin reads 4 bytes whatever `hvcC` says); an empty one is passed over.
        mutating func hevcUnits(_ data: [UInt8], _ range: Range<Int>) throws(Stop) -> [(Int, Int)] {
            var sizes: [(Int, Int)] = []
            var at = range.lowerBound
            while let length = Self.integer(data, at, 4), length <= range.upperBound - (at + 4) {
                try countUnit()
                let unit = (at + 4)..<(at + 4 + length)
                if let size = Self.hevcSequenceSize(data, unit) { sizes.append(size) }
                at = unit.upperBound
            }
            return sizes
        }

        /// The picture size of the HEVC NAL unit in `range` of `data` when it is a sequence parameter set (type 33).
        static func hevcSequenceSize(_ data: [UInt8], _ range: Range<Int>) -> (Int, Int)? {
            guard range.count > 2, (data[range.lowerBound] >> 1) & 0x3F == 33 else { return nil }
            // The payload without its emulation prevention bytes (00 00 03), of which the fields needed lie in the
            // first hundred or so bytes.
            var payload: [UInt8] = []
            var zeros = 0
            for byte in data[(range.lowerBound + 2)..<min(range.upperBound, range.lowerBound + 300)] {
                if zeros >= 2, byte == 3 {
                    zeros = 0
                    continue
                }
                zeros = byte == 0 ? zeros + 1 : 0
                payload.append(byte)
            }
            var bits = BitReader(payload)
            _ = bits.read(4)  // sps_video_parameter_set_id
            guard let subLayers = bits.read(3) else { return nil }
            _ = bits.read(1)
            _ = bits.read(8 + 32 + 48 + 8)  // general profile, compatibility, constraints, level
            var profilePresent: [Bool] = []
            var levelPresent: [Bool] = []
            for _ in 0..<subLayers {
                profilePresent.append(bits.read(1) == 1)
                levelPresent.append(bits.read(1) == 1)
            }
            if subLayers > 0 { for _ in subLayers..<8 { _ = bits.read(2) } }
            for layer in 0..<subLayers {
                if profilePresent[layer] { _ = bits.read(88) }
                if levelPresent[layer] { _ = bits.read(8) }
            }
            _ = bits.exponentialGolomb()  // sps_seq_parameter_set_id
            guard let chroma = bits.exponentialGolomb() else { return nil }
            if chroma == 3 { _ = bits.read(1) }
            guard let width = bits.exponentialGolomb(), let height = bits.exponentialGolomb() else { return nil }
            return (width, height)
        }

        /// The sizes of the AV1 sequence headers among the OBUs in `range` of `data`.
        mutating func av1Units(_ data: [UInt8], _ range: Range<Int>) throws(Stop) -> [(Int, Int)] {
            var sizes: [(Int, Int)] = []
            var at = range.lowerBound
            while at < range.upperBound {
                try countUnit()
                let header = Int(data[at])
                guard header & 0x80 == 0 else { break }
                let type = header >> 3 & 0xF
                var start = at + 1 + (header & 0x04 != 0 ? 1 : 0)
                var length = range.upperBound - start
                if header & 0x02 != 0 {
                    // leb128
                    var value = 0
                    var count = 0
                    while count < 8, start < range.upperBound {
                        let byte = Int(data[start])
                        value |= (byte & 0x7F) << (7 * count)
                        start += 1
                        count += 1
                        if byte & 0x80 == 0 { break }
                    }
                    length = value
                }
                guard start <= range.upperBound, length >= 0, length <= range.upperBound - start else { break }
                if type == 1, let size = Self.av1SequenceSize(data, start..<(start + length)) { sizes.append(size) }
                at = start + length
            }
            return sizes
        }

        /// `max_frame_width_minus_1 + 1` and `max_frame_height_minus_1 + 1` of the sequence header OBU payload in
        /// `range` of `data`.
        static func av1SequenceSize(_ data: [UInt8], _ range: Range<Int>) -> (Int, Int)? {
            var bits = BitReader(Array(data[range.lowerBound..<min(range.upperBound, range.lowerBound + 300)]))
            _ = bits.read(3)  // seq_profile
            _ = bits.read(1)  // still_picture
            guard let reduced = bits.read(1) else { return nil }
            if reduced == 1 {
                _ = bits.read(5)
            } else {
                guard let timing = bits.read(1) else { return nil }
                var decoderModel = 0
                var bufferDelayLength = 0
                if timing == 1 {
                    _ = bits.read(64)
                    if bits.read(1) == 1 { _ = bits.exponentialGolomb() }  // uvlc(), read as ue(v)
                    decoderModel = bits.read(1) ?? 0
                    if decoderModel == 1 {
                        bufferDelayLength = (bits.read(5) ?? 0) + 1
                        _ = bits.read(32 + 5 + 5)
                    }
                }
                guard let displayDelay = bits.read(1), let operatingPoints = bits.read(5) else { return nil }
                for _ in 0...operatingPoints {
                    _ = bits.read(12)
                    if (bits.read(5) ?? 0) > 7 { _ = bits.read(1) }
                    if decoderModel == 1, bits.read(1) == 1 { _ = bits.read(2 * bufferDelayLength + 1) }
                    if displayDelay == 1, bits.read(1) == 1 { _ = bits.read(4) }
                }
            }
            guard let widthBits = bits.read(4), let heightBits = bits.read(4),
                let width = bits.read(widthBits + 1), let height = bits.read(heightBits + 1)
            else { return nil }
            return (width + 1, height + 1)
        }
    }

    /// Reads bits most significant first; nil past the end.
    fileprivate struct BitReader {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func read(_ count: Int) -> Int? {
            guard count >= 0, position + count <= bytes.count * 8 else {
                position = bytes.count * 8 + 1
                return nil
            }
            var value = 0
            for _ in 0..<count {
                let bit = Int(bytes[position >> 3] >> (7 - UInt8(position & 7))) & 1
                // Fields over 62 bits are skipped, never used as a value.
                value = count > 62 ? 0 : value << 1 | bit
                position += 1
            }
            return value
        }

        /// ue(v).
        mutating func exponentialGolomb() -> Int? {
            var zeros = 0
            while let bit = read(1), bit == 0 {
                zeros += 1
                guard zeros < 32 else { return nil }
            }
            guard position <= bytes.count * 8, let rest = read(zeros) else { return nil }
            return (1 << zeros) - 1 + rest
        }

    }
}
