import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushMedia

private func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
private func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) } }
private func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(payload.count + 8) + Array(type.utf8) + payload }
private func full(_ type: String, _ payload: [UInt8]) -> [UInt8] { box(type, [0, 0, 0, 0] + payload) }

@Suite("HEIF coded frames")
struct HEIFCodedFramesTests {
    static let ftyp = box("ftyp", Array("heic".utf8) + be32(0) + Array("mif1heic".utf8))
    /// photo.heic's `hvcC` box (its SPS: 160 x 120).
    static let hvcC = Array(fixture("photo.heic")[211..<331])

    /// A HEIF file of `items` (id and type), the primary `primary`, `dimg` references, properties `ipco` (boxes) and
    /// their associations (item, 1-based indexes), and `iloc`'s payload when given; `mdat` after the `meta` box.
    static func heif(
        primary: Int, items: [(Int, String)], dimg: [(Int, [Int])] = [], other: [UInt8] = [], ipco: [[UInt8]],
        ipma: [(Int, [Int])], iloc: [UInt8]? = nil, mdat: [UInt8] = []
    ) -> [UInt8] {
        let infe = items.flatMap { box("infe", [2, 0, 0, 0] + be16($0.0) + be16(0) + Array($0.1.utf8) + [0]) }
        let references = dimg.flatMap { box("dimg", be16($0.0) + be16($0.1.count) + $0.1.flatMap(be16)) }
        let associations = ipma.flatMap { be16($0.0) + [UInt8($0.1.count)] + $0.1.map { UInt8(0x80 | $0) } }
        let meta = full(
            "meta",
            full("pitm", be16(primary)) + full("iinf", be16(items.count) + infe) + full("iref", references + other)
                + (iloc.map { box("iloc", $0) } ?? [])
                + box("iprp", box("ipco", ipco.flatMap { $0 }) + full("ipma", be32(ipma.count) + associations)))
        return ftyp + meta + (mdat.isEmpty ? [] : box("mdat", mdat))
    }

    /// A HEIC of a `grid` item (the primary, 10, its `ispe` 60 x 60) made of item 1 referenced `tiles` times, with a
    /// thumbnail (2) and an alpha plane (3): items 1-3 carry the HEVC configuration of photo.heic (160 x 120). With
    /// `selfReferences`, the grid is also made of itself that many times.
    static func grid(tiles: Int, selfReferences: Int = 0) -> [UInt8] {
        let alpha = full("auxC", Array("urn:mpeg:hevc:2015:auxid:1".utf8) + [0])
        return heif(
            primary: 10, items: [(10, "grid"), (1, "hvc1"), (2, "hvc1"), (3, "hvc1")],
            dimg: [(10, Array(repeating: 1, count: tiles) + Array(repeating: 10, count: selfReferences))],
            other: box("thmb", be16(2) + be16(1) + be16(10)) + box("auxl", be16(3) + be16(1) + be16(10)),
            ipco: [hvcC, full("ispe", be32(60) + be32(60)), alpha], ipma: [(1, [1]), (2, [1]), (3, [1, 3]), (10, [2])])
    }

    @Test("a HEIC's frame size is its HEVC sequence parameter set's, an AVIF's its AV1 sequence header's in the data")
    func fixtures() {
        let heic = HEIFCodedFrames.read(fixture("photo.heic"))
        #expect(heic.refusal == nil)
        #expect(heic.frames == [.init(item: 1, codec: "HEVC", width: 160, height: 120, fromProperty: false)])
        let avif = HEIFCodedFrames.read(fixture("photo.avif"))
        #expect(avif.frames == [.init(item: 1, codec: "AV1", width: 160, height: 120, fromProperty: false)])
        #expect(avif.pixels == 19_200)
    }

    @Test("an ispe property that lies is not the size counted")
    func ispeLie() {
        for name in ["photo.heic", "photo.avif"] {
            let frames = HEIFCodedFrames.read(ImageWriters.heif(fixture(name), ispe: 60, 60))
            #expect(frames.pixels == 19_200, "\(name)")
        }
    }

    @Test("a grid counts each tile as often as it is referenced, and its alpha plane, not its thumbnail")
    func gridTiles() {
        let frames = HEIFCodedFrames.read(Self.grid(tiles: 4))
        let tile = HEIFCodedFrames.Frame(item: 1, codec: "HEVC", width: 160, height: 120, fromProperty: false)
        var plane = tile
        plane.item = 3
        #expect(frames.frames == Array(repeating: tile, count: 4) + [plane])
        #expect(frames.pixels == 5 * 19_200)
    }

    @Test("more items, depth or boxes than are read are refused as unbounded; sizes past Int's range saturate")
    func unbounded() {
        // The grid and its 65,535 tiles: as many as are counted. Then a grid also made of itself, over and over.
        let frames = HEIFCodedFrames.read(Self.grid(tiles: 65_535))
        #expect(frames.refusal == nil)
        #expect(frames.frames.count == 65_536)
        // A grid made of a grid twice, that one of 65,535 tiles; and a grid also made of itself.
        let nested = Self.heif(
            primary: 10, items: [(10, "grid"), (11, "grid"), (1, "hvc1")],
            dimg: [(10, [11, 11]), (11, Array(repeating: 1, count: 65_535))], ipco: [Self.hvcC], ipma: [(1, [1])])
        #expect(HEIFCodedFrames.read(nested).refusal == .unbounded("more than 65536 items referenced"))
        #expect(HEIFCodedFrames.read(nested).frames.isEmpty)
        let itself = HEIFCodedFrames.read(Self.grid(tiles: 65_534, selfReferences: 1))
        #expect(itself.refusal == .unbounded("items derived more than 4 deep"))
        // Grids of grids down to a tile: four deep is read, five is not.
        for depth in [4, 5] {
            let grids = (0..<depth).map { 10 + $0 }
            let bytes = Self.heif(
                primary: 10, items: grids.map { ($0, "grid") } + [(1, "hvc1")],
                dimg: grids.map { ($0, [$0 == grids.last! ? 1 : $0 + 1]) }, ipco: [Self.hvcC], ipma: [(1, [1])])
            let read = HEIFCodedFrames.read(bytes)
            #expect(read.refusal == (depth == 4 ? nil : .unbounded("items derived more than 4 deep")), "\(depth)")
        }
        // 100,001 boxes before the meta box.
        let photo = fixture("photo.heic")
        let padded =
            Array(photo[0..<28]) + Array(repeating: box("free", []), count: 100_001).flatMap { $0 }
            + Array(photo[28...])
        #expect(HEIFCodedFrames.read(padded).refusal == .unbounded("more than 100000 boxes in one box"))
        let huge = HEIFCodedFrames(
            frames: Array(
                repeating: .init(item: 1, codec: "HEVC", width: 1 << 32, height: 1 << 32, fromProperty: false), count: 2
            ))
        #expect(huge.pixels == Int.max)
    }

    /// photo.avif: `meta` at 28-327, `mdat` at 327-1344, the coded item's one extent at 335-1154.
    @Test(
        """
        read as first bytes, a HEIF says how many more would show more: the meta box whole, as many as may be read \
        while a box before it runs past them, an item's data past them or cut by them (its first 64 KiB); nothing \
        past the meta box
        """)
    func wanted() {
        let photo = fixture("photo.avif")
        func wanted(_ bytes: [UInt8], prefix: Bool = true) -> Int? {
            HEIFCodedFrames.read(bytes, prefix: prefix).wanted
        }
        #expect(wanted(Array(photo.prefix(100))) == 327, "the meta box cut")
        #expect(wanted(Array(photo.prefix(30))) == Int.max, "the meta box's header cut: its size unknown")
        #expect(wanted(Array(photo.prefix(20))) == Int.max, "the ftyp box cut")
        #expect(wanted(Array(photo.prefix(330))) == 1154, "the item's data past them")
        #expect(wanted(Array(photo.prefix(400))) == 1154, "the item's data cut")
        #expect(wanted(Array(photo.prefix(1154))) == nil, "the item's data whole; the mdat box is not asked for")
        #expect(wanted(photo) == nil)
        #expect(wanted(Array(photo.prefix(100)), prefix: false) == nil, "not read as first bytes")
        // A box before the meta box running past them: as many as may be read; once it is whole, the meta box's end.
        let free = [0, 1, 0, 0].map(UInt8.init) + Array("free".utf8) + [UInt8](repeating: 0, count: 65_528)
        let freeFirst = Array(photo[0..<28]) + free + Array(photo[28...])
        #expect(wanted(Array(freeFirst.prefix(4096))) == Int.max)
        #expect(wanted(Array(freeFirst.prefix(28 + 65_536 + 100))) == 28 + 65_536 + 299, "the meta box (299 bytes) cut")
        let toTheEnd = Array(photo[0..<28]) + [0, 0, 0, 0] + Array("mdat".utf8) + [UInt8](repeating: 0, count: 100)
        #expect(wanted(toTheEnd) == Int.max)
        // An item's extent of length 0 (to the file's end), past the bytes read: its first 64 KiB.
        var open = photo
        open.replaceSubrange(117..<121, with: [0, 0, 0, 0])
        #expect(wanted(Array(open.prefix(330))) == 335 + 65_536)
    }

    /// A frame's `ispe` stands for its size only where its data was read: read as first bytes that cut it, a sequence
    /// header further on may say more or less (a review's file: an alpha plane's `ispe` of 12,000 x 12,000 over a
    /// 160 x 120 frame 2 MiB on, which explain refused and enrich attached).
    @Test(
        "read as first bytes that cut an item's data, its ispe is not counted; read whole, it is where nothing else is")
    func ispeWhereDataCut() {
        // photo.avif's ispe made 60 x 60; its sequence header is in the item's data (libavif's av1C holds none).
        let lying = ImageWriters.heif(fixture("photo.avif"), ispe: 60, 60)
        let whole = HEIFCodedFrames.read(lying)
        #expect(whole.frames.map(\.pixels) == [19_200])
        // Two bytes of the item's data read: its sequence header is not in them.
        let cut = HEIFCodedFrames.read(Array(lying.prefix(337)), prefix: true)
        #expect(cut.frames.isEmpty, "\(cut.frames)")
        #expect(cut.wanted == 1154)
        let past = HEIFCodedFrames.read(Array(lying.prefix(330)), prefix: true)
        #expect(past.frames.isEmpty, "\(past.frames)")
    }

    /// libheif reads the last `meta` box it parses; the first is not the one it decodes.
    @Test("a file of two meta boxes, none, or no frame of its primary image is refused as unreadable")
    func unreadable() {
        let photo = fixture("photo.avif")
        let twice = Array(photo[0..<327]) + Array(photo[28..<327]) + Array(photo[327...])
        #expect(
            HEIFCodedFrames.read(twice).refusal == .unreadable("it has 2 meta boxes (libheif reads the last it parses)")
        )
        #expect(HEIFCodedFrames.read(Self.ftyp).refusal == .unreadable("it has no meta box"))
        let noFrame = Self.heif(primary: 10, items: [(10, "grid")], ipco: [], ipma: [])
        #expect(
            HEIFCodedFrames.read(noFrame).refusal
                == .unreadable("no coded frame of its primary image has a size (a sequence header or ispe)"))
    }

    /// The decoder sees an item's extents as one stream: an OBU cut between two extents is read whole.
    @Test("an item's extents are joined before its units are walked")
    func splitExtents() {
        let photo = fixture("photo.avif")
        // photo.avif's item 1: 819 bytes at 335, a temporal delimiter (12 00), then the sequence header (0A 09 ...).
        let data = Array(photo[335..<(335 + 819)])
        let av1C = Array(photo[230..<242])
        func file(_ offset: Int) -> [UInt8] {
            let iloc =
                [0, 0, 0, 0, 0x44, 0x00] + be16(1) + be16(1) + be16(0) + be16(2) + be32(offset) + be32(3)
                + be32(offset + 3) + be32(816)
            return Self.heif(
                primary: 1, items: [(1, "av01")], ipco: [av1C, full("ispe", be32(60) + be32(60))],
                ipma: [(1, [1, 2])], iloc: iloc, mdat: data)
        }
        // Where the data lands: after the meta box and the mdat header, which do not depend on the offset's value.
        let offset = file(0).count - data.count
        let frames = HEIFCodedFrames.read(file(offset))
        #expect(frames.frames == [.init(item: 1, codec: "AV1", width: 160, height: 120, fromProperty: false)])
    }

    static let boxTypes = [
        "meta", "pitm", "iinf", "infe", "iref", "dimg", "auxl", "thmb", "iprp", "ipco", "ipma", "iloc", "idat", "hvcC",
        "av1C", "ispe", "auxC", "pixi", "colr", "hdlr", "mdat",
    ].map { Array($0.utf8) }

    /// Every box of the fixtures and the grid cut to each payload length from 0 to 8 (what random mutations almost
    /// never make), then a seeded run of random mutations: a trap in the parser would end the process (a `serve` and
    /// every payload in it), so each is read or refused, nothing else.
    @Test("every box cut short, and mutated HEIC, AVIF and grid files, are read or refused, never trapping")
    func mutations() {
        let originals = [fixture("photo.heic"), fixture("photo.avif"), fixture("anim.avif"), Self.grid(tiles: 3)]
        var cut = 0
        for original in originals {
            for at in 4..<(original.count - 4) where Self.boxTypes.contains(Array(original[at..<(at + 4)])) {
                for length in 0...8 {
                    var bytes = original
                    bytes.replaceSubrange((at - 4)..<at, with: be32(8 + length))
                    _ = HEIFCodedFrames.read(bytes)
                    cut += 1
                }
            }
        }
        #expect(cut > 400, "\(cut) boxes cut")
        var generator = SplitMix64(seed: 0x5EED_4E1F)
        var read = 0
        for round in 0..<4000 {
            var bytes = originals[round % originals.count]
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] =
                    [0, 0xFF, 0x7F, 0x80, UInt8.random(in: 0...255, using: &generator)][
                        Int.random(in: 0..<5, using: &generator)]
            }
            if round % 7 == 0 { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            if HEIFCodedFrames.read(bytes).refusal == nil { read += 1 }
        }
        #expect(read > 1000, "most mutated files still have their boxes: \(read) of 4000 read")
    }
}
