import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

/// The registry skips a convention whose `rootKeys` the payload's root does not hold: these check that the skip is
/// real (a skipped convention is not called) and that it changes nothing (each declaration is true of every payload,
/// and the registry's scan equals every convention's scan merged). Off the pool: 4 s of CPU over every fixture.
@Suite("Convention registry: conventions skipped by their root keys", .offPool)
struct ConventionGateTests {
    /// A convention that counts its calls and otherwise is `base`.
    final class Counting: MediaConvention {
        let base: any MediaConvention
        let calls = LockedValue(0)
        init(_ base: any MediaConvention) { self.base = base }
        var name: String { base.name }
        var rootKeys: [String]? { base.rootKeys }
        func scan(_ payload: PushPayload) -> ConventionScan {
            calls.withLock { $0 += 1 }
            return base.scan(payload)
        }
    }

    /// A user's convention that declares no root keys.
    struct Undeclared: MediaConvention {
        var name: String { "undeclared" }
        func scan(_ payload: PushPayload) -> ConventionScan {
            var scan = ConventionScan()
            scan.take(payload.root["media"], field: "media", convention: name, identifier: "media")
            return scan
        }
    }

    func payload(_ text: String) throws -> PushPayload { try PushPayload(parsing: Array(text.utf8)) }

    @Test("a convention is called only for a payload whose root holds one of its keys, written with escapes or not")
    func skipped() throws {
        let adobe = Counting(AdobeMediaConvention())
        let undeclared = Counting(Undeclared())
        var registry = ConventionRegistry([adobe])
        registry.register(undeclared)
        let inputs: [(text: String, adobeCalled: Bool)] = [
            (#"{"aps":{"mutable-content":1},"payload":{"image_attachment":"https://z.example/i.png"}}"#, false),
            (#"{"aps":{"mutable-content":1},"adb_media":"https://a.example/1.jpg"}"#, true),
            (#"{"adb\u005fmedia":"https://a.example/1.jpg"}"#, true),
            (#"{"adb_media":42}"#, true),
            (#"{"adb_mediaX":"https://a.example/1.jpg","media":"https://m.example/2.jpg"}"#, false),
        ]
        for (number, input) in inputs.enumerated() {
            let found = registry.scan(try payload(input.text))
            #expect(adobe.calls.withLock { $0 } == inputs[...number].filter(\.adobeCalled).count, "\(input.text)")
            // A convention without root keys reads every payload.
            #expect(undeclared.calls.withLock { $0 } == number + 1)
            if input.adobeCalled {
                #expect(!found.references.isEmpty || !found.problems.isEmpty)
            }
        }
        // A payload made in code (not parsed) is gated by the same keys.
        _ = registry.scan(PushPayload(JSONObject([("aps", .object(JSONObject())), ("zego", .text("x"))])))
        #expect(adobe.calls.withLock { $0 } == 3)
    }

    @Test(
        "KeyPathConvention's root keys: its marker's first key, else its path's and hint's, @json steps passed",
        arguments: [
            (KeyPathConvention(name: "a", path: ["extra", "@json", "image"], identifier: "a"), ["extra"]),
            (
                KeyPathConvention(name: "b", path: ["@json", "image"], hintPath: ["t"], identifier: "b"),
                ["image", "t"]
            ),
            (KeyPathConvention.klaviyo, ["body"]),
            (KeyPathConvention.bloomreach, ["source"]),
            (KeyPathConvention(name: "c", path: ["x"], hintPath: ["@json"], identifier: "c"), nil),
            (KeyPathConvention(name: "d", path: [], identifier: "d"), nil),
        ])
    func keyPathRootKeys(convention: KeyPathConvention, keys: [String]?) {
        #expect(convention.rootKeys == keys)
    }

    /// Every fixture payload (an FCM message's `apns.payload` too).
    static let fixtures: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: FixtureDirectory.payloads)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted()
    }()

    /// Values that reach every branch of the conventions: each kind of JSON, a URL, a path, a file name, an object
    /// with a URL, a JSON string.
    static let values: [PushPayload.JSON] = [
        .integer(1), .text("x"), .object(JSONObject()), .array([]), .null, .bool(true),
        .text("https://m.example/a.jpg"), .text("/local/a.jpg"), .text("sale.png"),
        .object(JSONObject([("url", .text("https://m.example/b.png")), ("k.message", .integer(1))])),
        .array([.text("https://m.example/c.gif")]),
        .text(#"{"image_attachment":"https://m.example/d.jpg","data":{"deeplink":"app://x"}}"#),
    ]

    /// The root's keys and values, and payloads made from them: each without one key, with one key's value replaced
    /// by each of `values`, and each key alone (beside `aps` and without it) with each value.
    static func variants(of root: JSONObject) -> [JSONObject] {
        let members = root.members.map { (key: $0.key.value, value: $0.value) }
        var variants = [root]
        let aps = PushPayload.JSON.object(JSONObject([("alert", .text("a")), ("mutable-content", .integer(1))]))
        for (index, member) in members.enumerated() {
            var without = members
            without.remove(at: index)
            variants.append(JSONObject(without))
            for value in values {
                var replaced = members
                replaced[index].value = value
                variants.append(JSONObject(replaced))
                variants.append(JSONObject([(member.key, value)]))
                variants.append(JSONObject([("aps", aps), (member.key, value)]))
            }
        }
        return variants
    }

    /// Every convention's scan merged, none skipped: what the registry found before it had root keys.
    static func unskipped(_ registry: ConventionRegistry, _ payload: PushPayload) -> ConventionScan {
        var result = ConventionScan()
        for convention in registry.conventions {
            let scan = convention.scan(payload)
            result.problems += scan.problems
            result.overrides += scan.overrides
            result.merge(scan.references)
        }
        return result
    }

    @Test("skipping changes nothing: for every vendor's payload and its variants", arguments: fixtures)
    func unchanged(fixture: String) throws {
        let text = try #require(FileManager.default.contents(atPath: FixtureDirectory.payloads + "/" + fixture))
        guard let parsed = try? PushPayload(parsing: Array(text)) else { return }
        var roots = [parsed.root]
        if let message = FCMMessage(parsed, format: PayloadFormat.detect(parsed)), let inner = message.apnsPayload {
            roots.append(inner.root)
        }
        // The built-ins, and a user's conventions as a conventions file makes them.
        var registry = ConventionRegistry.standard
        registry.register(KeyPathConvention(name: "legacy", path: ["extra", "@json", "image"], identifier: "legacy"))
        registry.register(KeyPathConvention(name: "acme", path: ["@json", "adb_media"], identifier: "acme"))
        var skips = 0
        for root in roots {
            for variant in Self.variants(of: root) {
                // As made in code, and as parsed (a key written with escapes too: the first one's first letter).
                var written = JSONWriter.string(.object(variant))
                if let quote = written.dropFirst().firstIndex(of: "\""),
                    variant.members.first?.key.value.isEmpty == false
                {
                    let letter = written[written.index(after: quote)]
                    let escaped = String(format: "\\u%04x", letter.unicodeScalars.first!.value)
                    written.replaceSubrange(quote...written.index(after: quote), with: "\"" + escaped)
                }
                for payload in [PushPayload(variant), try PushPayload(parsing: Array(written.utf8))] {
                    for convention in registry.conventions {
                        guard let keys = convention.rootKeys, !keys.contains(where: { payload.root[$0] != nil })
                        else { continue }
                        skips += 1
                        let found = convention.scan(payload)
                        #expect(found == ConventionScan(), "\(convention.name) declares \(keys): \(written)")
                    }
                    #expect(registry.scan(payload) == Self.unskipped(registry, payload), "\(written)")
                    #expect(registry.scans(payload).map(\.scan) == registry.conventions.map { $0.scan(payload) })
                }
            }
        }
        #expect(skips > 0)
    }

    @Test("merging compares with each reference when few, through indexes when many: the same either way")
    func merge() {
        var generator = SplitMix64(seed: 26)
        let thumbnails: [Thumbnail?] = [nil, Thumbnail(primary: true), Thumbnail(hidden: true), Thumbnail(time: 1)]
        for round in 0..<300 {
            let count = 1 + round % 40
            let references = (0..<count).map { _ in
                var reference = MediaReference(
                    url: "https://m.example/\(Int.random(in: 0..<8, using: &generator))",
                    convention: "c", identifier: ["a", "a-2", "b"].randomElement(using: &generator)!, field: "f",
                    thumbnail: thumbnails.randomElement(using: &generator)!,
                    platform: Bool.random(using: &generator) ? .ios : .android)
                reference.typeHint = Bool.random(using: &generator) ? "jpg" : nil
                return reference
            }
            // Added in batches of random sizes, as conventions add theirs.
            var merged = ConventionScan()
            var expected: [MediaReference] = []
            var rest = references[...]
            while !rest.isEmpty {
                let batch = Array(rest.prefix(Int.random(in: 1...20, using: &generator)))
                rest = rest.dropFirst(batch.count)
                merged.merge(batch)
                expected = Self.indexedMerge(expected, batch)
            }
            #expect(merged.references == expected, "round \(round)")
        }
    }

    @Test("problems taken from two scans past the bound: the count and the first field not kept are the merged ones")
    func problemsMerged() {
        let problem = { (field: String) in EnrichmentProblem(source: field, code: .badReference, detail: "d") }
        var first = ConventionScan()
        first.problems = (0..<40).map { problem("a[\($0)]") }
        var second = ConventionScan()
        second.problems = (0..<70).map { problem("b[\($0)]") }
        first.takeProblems(of: second)
        #expect(first.problems.count == 64)
        #expect(first.omittedProblems == 46)
        #expect(first.listedProblems.last?.source == "b[24]", "the 65th problem in order: b's 25th")
    }

    @Test("references asking for one identifier get -2, -3, ... in order, with one try each, not one per suffix")
    func sharedIdentifier() {
        let count = 20_000
        var scan = ConventionScan()
        scan.references = [MediaReference(url: "https://m.example/a", convention: "c", identifier: "a-3", field: "f")]
        let added = (0..<count).map {
            MediaReference(url: "https://m.example/\($0)", convention: "c", identifier: "a", field: "f")
        }
        let tried = scan.mergeIndexed(added)
        // The held "a-3" is passed over once; before, the n-th reference tried n suffixes (200 million here).
        #expect(tried == count + (count - 1) + 1, "\(tried) tries for \(count) references")
        let identifiers = scan.references.map(\.identifier)
        #expect(identifiers.prefix(5) == ["a-3", "a", "a-2", "a-4", "a-5"])
        #expect(identifiers.last == "a-\(count + 1)")
        #expect(Set(identifiers).count == count + 1)
    }

    /// `merge` as it was before its linear path: every batch through the two indexes.
    static func indexedMerge(_ held: [MediaReference], _ added: [MediaReference]) -> [MediaReference] {
        var scan = ConventionScan()
        scan.references = held
        scan.mergeIndexed(added)
        return scan.references
    }
}
