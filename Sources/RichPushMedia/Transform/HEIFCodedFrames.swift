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

    /// The coded items decoded for the primary image, once per reference.
    package let frames: [Frame]
    /// Why the frames were not all counted, when the file holds more items or coded units than are read: its
    /// primary image is then refused whatever its pixels (`frames` is empty).
    package let unbounded: String?

    /// Their pixels together, saturating.
    package var pixels: Int {
        frames.reduce(0) { total, frame in
            let (sum, overflow) = total.addingReportingOverflow(frame.pixels)
            return overflow ? Int.max : sum
        }
    }

    /// The most coded units (NAL units, OBUs) read in one file's item data: 100,000, where a photo's tiles have a
    /// few each. Past it the file is not read further (`unbounded`).
    static let maximumUnits = 100_000
    /// The most items decoded for the primary image, counted once per reference: 65,536, a 256 x 256 grid.
    static let maximumReferences = 65_536

    /// The frames of the HEIF file `bytes`, or nil when its boxes do not say (no `meta`, no primary item): the
    /// decoder's own checks then judge it.
    package static func read(_ bytes: [UInt8]) -> HEIFCodedFrames? {
        var parser = Parser(bytes: bytes)
        return parser.frames()
    }

    package init(frames: [Frame], unbounded: String? = nil) {
        self.frames = frames
        self.unbounded = unbounded
    }
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

        init(bytes: [UInt8]) { self.bytes = bytes }

        func integer(_ at: Int, _ count: Int) -> Int? {
            guard count >= 0, count <= 8, at >= 0, at + count <= bytes.count else { return nil }
            var value: UInt64 = 0
            for index in at..<(at + count) { value = value << 8 | UInt64(bytes[index]) }
            return value > UInt64(Int.max) ? nil : Int(value)
        }

        func boxes(in range: Range<Int>) -> [Box] {
            var found: [Box] = []
            var start = range.lowerBound
            while start + 8 <= range.upperBound, found.count < 100_000 {
                guard var size = integer(start, 4) else { break }
                var header = 8
                if size == 1 {
                    guard let large = integer(start + 8, 8) else { break }
                    size = large
                    header = 16
                } else if size == 0 {
                    size = range.upperBound - start
                }
                guard size >= header, size <= range.upperBound - start else { break }
                let type = String(decoding: bytes[(start + 4)..<(start + 8)], as: UTF8.self)
                found.append(Box(type: type, payload: (start + header)..<(start + size)))
                start += size
            }
            return found
        }

        mutating func frames() -> HEIFCodedFrames? {
            guard let meta = boxes(in: 0..<bytes.count).first(where: { $0.type == "meta" }),
                meta.payload.count >= 4
            else { return nil }
            let children = boxes(in: (meta.payload.lowerBound + 4)..<meta.payload.upperBound)
            func child(_ type: String) -> Box? { children.first { $0.type == type } }
            guard let pitm = child("pitm"), let primary = primaryItem(pitm) else { return nil }
            let types = child("iinf").map(itemTypes) ?? [:]
            let (derived, auxiliary) = child("iref").map(references) ?? ([:], [:])
            let properties = child("iprp").map(itemProperties) ?? [:]
            let locations = child("iloc").map(itemLocations) ?? [:]
            let idat = child("idat")?.payload

            // The items decoded: the primary, what derived items are made of, the alpha planes of all of these.
            var decoded: [UInt32] = []
            var pending = [(primary, 0)]
            while let (item, depth) = pending.popLast() {
                guard decoded.count < HEIFCodedFrames.maximumReferences else {
                    return HEIFCodedFrames(
                        frames: [], unbounded: "more than \(HEIFCodedFrames.maximumReferences) items referenced")
                }
                decoded.append(item)
                guard depth < 4 else { continue }
                for part in derived[item] ?? [] { pending.append((part, depth + 1)) }
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
                    sizes[item] = frame(
                        item, type: types[item], properties: properties[item] ?? [], location: locations[item],
                        idat: idat)
                    guard units <= HEIFCodedFrames.maximumUnits else {
                        return HEIFCodedFrames(
                            frames: [], unbounded: "more than \(HEIFCodedFrames.maximumUnits) coded units in its items")
                    }
                }
                if let frame = sizes[item] ?? nil { frames.append(frame) }
            }
            return HEIFCodedFrames(frames: frames)
        }

        func fullBoxVersion(_ box: Box) -> Int? { integer(box.payload.lowerBound, 1) }

        func primaryItem(_ box: Box) -> UInt32? {
            guard let version = fullBoxVersion(box) else { return nil }
            return integer(box.payload.lowerBound + 4, version == 0 ? 2 : 4).map { UInt32($0) }
        }

        func itemTypes(_ box: Box) -> [UInt32: String] {
            guard let version = fullBoxVersion(box) else { return [:] }
            let start = box.payload.lowerBound + 4 + (version == 0 ? 2 : 4)
            var types: [UInt32: String] = [:]
            for entry in boxes(in: start..<box.payload.upperBound) where entry.type == "infe" {
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
        func references(_ box: Box) -> (derived: [UInt32: [UInt32]], auxiliary: [UInt32: [UInt32]]) {
            guard let version = fullBoxVersion(box) else { return ([:], [:]) }
            let idSize = version == 0 ? 2 : 4
            var derived: [UInt32: [UInt32]] = [:]
            var auxiliary: [UInt32: [UInt32]] = [:]
            for reference in boxes(in: (box.payload.lowerBound + 4)..<box.payload.upperBound) {
                var at = reference.payload.lowerBound
                guard let from = integer(at, idSize), let count = integer(at + idSize, 2) else { continue }
                at += idSize + 2
                guard at + count * idSize <= reference.payload.upperBound else { continue }
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

        /// Each item's properties, in the order `ipma` gives them.
        func itemProperties(_ box: Box) -> [UInt32: [Box]] {
            let children = boxes(in: box.payload)
            guard let ipco = children.first(where: { $0.type == "ipco" }) else { return [:] }
            let listed = boxes(in: ipco.payload)
            var properties: [UInt32: [Box]] = [:]
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
                        if index >= 1, index <= listed.count {
                            properties[UInt32(item), default: []].append(listed[index - 1])
                        }
                    }
                }
            }
            return properties
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
            let name = bytes[(box.payload.lowerBound + 4)..<box.payload.upperBound].prefix { $0 != 0 }
            return String(decoding: name, as: UTF8.self).hasSuffix("auxid:1")
                || String(decoding: name, as: UTF8.self).hasSuffix("auxiliary:alpha")
        }

        /// The byte ranges of an item's data, within the file (construction method 0) or `idat` (1).
        func dataRanges(_ location: Location, idat: Range<Int>?) -> [Range<Int>] {
            let space: Range<Int>
            switch location.method {
            case 0: space = 0..<bytes.count
            case 1:
                guard let idat else { return [] }
                space = idat
            default: return []
            }
            return location.extents.compactMap { extent in
                let (start, overflow) = space.lowerBound.addingReportingOverflow(location.base)
                let (first, overflowAgain) = start.addingReportingOverflow(extent.offset)
                guard !overflow, !overflowAgain, first >= space.lowerBound, first < space.upperBound else { return nil }
                let end =
                    extent.length == 0
                    ? space.upperBound : min(space.upperBound, first + min(extent.length, space.count))
                return first..<end
            }
        }

        mutating func frame(
            _ item: UInt32, type: String?, properties: [Box], location: Location?, idat: Range<Int>?
        ) -> Frame? {
            let codec: String
            switch type {
            case "hvc1": codec = "HEVC"
            case "av01": codec = "AV1"
            default: return nil
            }
            var sizes: [(Int, Int)] = []
            var lengthSize = 4
            for property in properties {
                if codec == "HEVC", property.type == "hvcC" {
                    let (found, length) = hevcConfiguration(property.payload)
                    sizes += found
                    lengthSize = length
                }
                if codec == "AV1", property.type == "av1C", property.payload.count > 4 {
                    sizes += av1Units((property.payload.lowerBound + 4)..<property.payload.upperBound)
                }
            }
            for range in location.map({ dataRanges($0, idat: idat) }) ?? [] {
                sizes += codec == "HEVC" ? hevcUnits(range, lengthSize: lengthSize) : av1Units(range)
            }
            let found = sizes.map { Frame(item: item, codec: codec, width: $0.0, height: $0.1, fromProperty: false) }
            if let largest = found.max(by: { $0.pixels < $1.pixels }) { return largest }
            guard let ispe = properties.first(where: { $0.type == "ispe" }),
                let width = integer(ispe.payload.lowerBound + 4, 4),
                let height = integer(ispe.payload.lowerBound + 8, 4)
            else { return nil }
            return Frame(item: item, codec: codec, width: width, height: height, fromProperty: true)
        }

        /// The sizes of the sequence parameter sets in an `hvcC` record, and its NAL units' length size.
        mutating func hevcConfiguration(_ payload: Range<Int>) -> ([(Int, Int)], Int) {
            guard let flags = integer(payload.lowerBound + 21, 1), let arrays = integer(payload.lowerBound + 22, 1)
            else { return ([], 4) }
            var sizes: [(Int, Int)] = []
            var at = payload.lowerBound + 23
            for _ in 0..<arrays {
                guard let count = integer(at + 1, 2) else { break }
                at += 3
                for _ in 0..<count {
                    guard let length = integer(at, 2), at + 2 + length <= payload.upperBound else { break }
                    units += 1
                    if let size = hevcSequenceSize((at + 2)..<(at + 2 + length)) { sizes.append(size) }
                    at += 2 + length
                }
            }
            return (sizes, (flags & 3) + 1)
        }

        /// The sizes of the sequence parameter sets among the length-prefixed NAL units in `range`.
        mutating func hevcUnits(_ range: Range<Int>, lengthSize: Int) -> [(Int, Int)] {
            var sizes: [(Int, Int)] = []
            var at = range.lowerBound
            while units <= HEIFCodedFrames.maximumUnits, let length = integer(at, lengthSize),
                at + lengthSize + length <= range.upperBound, length > 0
            {
                units += 1
                let unit = (at + lengthSize)..<(at + lengthSize + length)
                if let size = hevcSequenceSize(unit) { sizes.append(size) }
                at = unit.upperBound
            }
            return sizes
        }

        /// The picture size of the HEVC NAL unit in `range` when it is a sequence parameter set (type 33).
        func hevcSequenceSize(_ range: Range<Int>) -> (Int, Int)? {
            guard range.count > 2, (bytes[range.lowerBound] >> 1) & 0x3F == 33 else { return nil }
            // The payload without its emulation prevention bytes (00 00 03), of which the fields needed lie in the
            // first hundred or so bytes.
            var payload: [UInt8] = []
            var zeros = 0
            for byte in bytes[(range.lowerBound + 2)..<min(range.upperBound, range.lowerBound + 300)] {
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

        /// The sizes of the AV1 sequence headers among the OBUs in `range`.
        mutating func av1Units(_ range: Range<Int>) -> [(Int, Int)] {
            var sizes: [(Int, Int)] = []
            var at = range.lowerBound
            while at < range.upperBound, units <= HEIFCodedFrames.maximumUnits {
                units += 1
                let header = Int(bytes[at])
                guard header & 0x80 == 0 else { break }
                let type = header >> 3 & 0xF
                var start = at + 1 + (header & 0x04 != 0 ? 1 : 0)
                var length = range.upperBound - start
                if header & 0x02 != 0 {
                    // leb128
                    var value = 0
                    var count = 0
                    while count < 8, start < range.upperBound {
                        let byte = Int(bytes[start])
                        value |= (byte & 0x7F) << (7 * count)
                        start += 1
                        count += 1
                        if byte & 0x80 == 0 { break }
                    }
                    length = value
                }
                guard start <= range.upperBound, length >= 0, length <= range.upperBound - start else { break }
                if type == 1, let size = av1SequenceSize(start..<(start + length)) { sizes.append(size) }
                at = start + length
            }
            return sizes
        }

        /// `max_frame_width_minus_1 + 1` and `max_frame_height_minus_1 + 1` of the sequence header OBU payload in
        /// `range`.
        func av1SequenceSize(_ range: Range<Int>) -> (Int, Int)? {
            var bits = BitReader(Array(bytes[range.lowerBound..<min(range.upperBound, range.lowerBound + 300)]))
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
                    if bits.read(1) == 1 { _ = bits.uvlc() }
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

        /// AV1's uvlc().
        mutating func uvlc() -> Int? { exponentialGolomb() }
    }
}
