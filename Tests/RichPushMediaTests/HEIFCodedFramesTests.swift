import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushMedia

@Suite("HEIF coded frames")
struct HEIFCodedFramesTests {
    @Test("a HEIC's frame size is its HEVC sequence parameter set's, an AVIF's its AV1 sequence header's in the data")
    func fixtures() throws {
        let heic = try #require(HEIFCodedFrames.read(fixture("photo.heic")))
        #expect(heic.frames == [.init(item: 1, codec: "HEVC", width: 160, height: 120, fromProperty: false)])
        let avif = try #require(HEIFCodedFrames.read(fixture("photo.avif")))
        #expect(avif.frames == [.init(item: 1, codec: "AV1", width: 160, height: 120, fromProperty: false)])
        #expect(avif.pixels == 19_200)
    }

    @Test("an ispe property that lies is not the size counted")
    func ispeLie() throws {
        for name in ["photo.heic", "photo.avif"] {
            let lying = ImageWriters.heif(fixture(name), ispe: 60, 60)
            let frames = try #require(HEIFCodedFrames.read(lying))
            #expect(frames.pixels == 19_200, "\(name)")
        }
    }

    /// A HEIC of a `grid` item (the primary, 10, its `ispe` 60 x 60) made of item 1 referenced `tiles` times, with a
    /// thumbnail (2) and an alpha plane (3): items 1-3 carry the HEVC configuration of photo.heic (160 x 120). With
    /// `selfReferences`, the grid is also made of itself that many times.
    static func grid(tiles: Int, selfReferences: Int = 0) -> [UInt8] {
        func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(value >> $0 & 0xFF) } }
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(payload.count + 8) + Array(type.utf8) + payload }
        func full(_ type: String, _ payload: [UInt8]) -> [UInt8] { box(type, [0, 0, 0, 0] + payload) }
        func infe(_ item: Int, _ type: String) -> [UInt8] {
            box("infe", [2, 0, 0, 0] + be16(item) + be16(0) + Array(type.utf8) + [0])
        }
        let heic = fixture("photo.heic")
        let hvcC = Array(heic[211..<331])
        let alpha = full("auxC", Array("urn:mpeg:hevc:2015:auxid:1".utf8) + [0])
        let ispe = full("ispe", be32(60) + be32(60))
        let ipma =
            be32(4) + be16(1) + [1, 1] + be16(2) + [1, 1] + be16(3) + [2, 1, 3] + be16(10) + [1, 2]
        let meta = full(
            "meta",
            full("pitm", be16(10))
                + full("iinf", be16(4) + infe(10, "grid") + infe(1, "hvc1") + infe(2, "hvc1") + infe(3, "hvc1"))
                + full(
                    "iref",
                    box(
                        "dimg",
                        be16(10) + be16(tiles + selfReferences) + Array(repeating: be16(1), count: tiles).flatMap { $0 }
                            + Array(repeating: be16(10), count: selfReferences).flatMap { $0 })
                        + box("thmb", be16(2) + be16(1) + be16(10)) + box("auxl", be16(3) + be16(1) + be16(10)))
                + box("iprp", box("ipco", hvcC + ispe + alpha) + full("ipma", ipma)))
        return box("ftyp", Array("heic".utf8) + be32(0) + Array("mif1heic".utf8)) + meta
    }

    @Test("a grid counts each tile as often as it is referenced, and its alpha plane, not its thumbnail")
    func gridTiles() throws {
        let frames = try #require(HEIFCodedFrames.read(Self.grid(tiles: 4)))
        let tile = HEIFCodedFrames.Frame(item: 1, codec: "HEVC", width: 160, height: 120, fromProperty: false)
        var plane = tile
        plane.item = 3
        #expect(frames.frames == Array(repeating: tile, count: 4) + [plane])
        #expect(frames.pixels == 5 * 19_200)
    }

    @Test("a grid of more items than are counted is unbounded, and sizes past Int's range saturate")
    func unbounded() throws {
        // The grid and its 65,535 tiles: as many as are counted. Then a grid also made of itself, over and over.
        var bytes = Self.grid(tiles: 65_535)
        let frames = try #require(HEIFCodedFrames.read(bytes))
        #expect(frames.unbounded == nil)
        #expect(frames.frames.count == 65_536)
        bytes = Self.grid(tiles: 65_534, selfReferences: 1)
        let nested = try #require(HEIFCodedFrames.read(bytes))
        #expect(nested.unbounded == "more than 65536 items referenced")
        #expect(nested.frames.isEmpty)
        let huge = HEIFCodedFrames(
            frames: Array(
                repeating: .init(item: 1, codec: "HEVC", width: 1 << 32, height: 1 << 32, fromProperty: false), count: 2
            ))
        #expect(huge.pixels == Int.max)
    }

    /// A trap in the parser would end the process (a `serve` and every payload in it), so mutated files must only be
    /// read or not. A fixed seed: a failure is the same on every run.
    @Test("mutated HEIC, AVIF and grid files are read or not, never trapping")
    func mutations() {
        var generator = SplitMix64(seed: 0x5EED_4E1F)
        let originals = [fixture("photo.heic"), fixture("photo.avif"), fixture("anim.avif"), Self.grid(tiles: 3)]
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
            if HEIFCodedFrames.read(bytes) != nil { read += 1 }
        }
        #expect(read > 1000, "most mutated files still have their boxes: \(read) of 4000 read")
    }
}
