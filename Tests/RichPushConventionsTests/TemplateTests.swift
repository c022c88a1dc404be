import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushConventions

@Suite("Templates (Azure Notification Hubs expressions)")
struct TemplateTests {
    func render(_ template: String, _ params: String, strict: Bool = false) throws -> String {
        let renderer = try TemplateRenderer(properties: try JSONParser().parse(Array(params.utf8)), strict: strict)
        return JSONWriter.string(try renderer.render(try JSONParser().parse(Array(template.utf8))))
    }

    @Test("what the expressions produce together is bounded (1 MiB by default), across values and in a concatenation")
    func outputBound() throws {
        var renderer = try TemplateRenderer(properties: try JSONParser().parse(Array(#"{"x":"123456"}"#.utf8)))
        renderer.maximumBytes = 12
        let parse = { (text: String) throws -> PushPayload.JSON in try JSONParser().parse(Array(text.utf8)) }
        let rendered = JSONWriter.string(try renderer.render(try parse(#"{"a":"$(x)","b":"$(x)"}"#)))
        #expect(rendered == #"{"a":"123456","b":"123456"}"#)
        for template in [#"{"a":"$(x)","b":"$(x)","c":"$(x, 1)"}"#, #"{"a":"{$(x) + $(x) + 'z'}"}"#] {
            #expect(throws: TemplateError.self, "\(template)") { try renderer.render(try parse(template)) }
        }
        // The default: a property of 600 KB twice is over 1 MiB; once is not.
        let big = String(repeating: "x", count: 600_000)
        let large = try TemplateRenderer(properties: try JSONParser().parse(Array(#"{"x":"\#(big)"}"#.utf8)))
        #expect(throws: TemplateError.self) { try large.render(try parse(#"{"a":"{$(x) + $(x)}"}"#)) }
        _ = try large.render(try parse(#"{"a":"$(x)"}"#))
    }

    @Test(
        "each expression form",
        arguments: [
            (##"{"a":"$(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"$(NAME)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"$(name, 3)"}"##, ##"{"a":"Ada"}"##),
            (##"{"a":".(name, 8)"}"##, ##"{"a":"Ada L..."}"##),
            (##"{"a":".(name, 40)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":".(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"%(name)"}"##, ##"{"a":"Ada%20Lovelace"}"##),
            (##"{"a":"#(count)"}"##, ##"{"a":42}"##),
            (##"{"a":"#(price)"}"##, ##"{"a":1.5e3}"##),
            (##"{"a":"#(name)"}"##, ##"{"a":"Ada Lovelace"}"##),
            (##"{"a":"{'n=' + #(count)}"}"##, ##"{"a":"n=42"}"##),
            (##"{"a":"{$(name, 3) + \" & \" + 'co'}"}"##, ##"{"a":"Ada & co"}"##),
            (##"{"a":"$(missing)"}"##, ##"{"a":""}"##),
            (
                ##"{"a":"Hello $(name)","$(name)":1,"n":[true,"$(name, 1)"]}"##,
                ##"{"a":"Hello $(name)","$(name)":1,"n":[true,"A"]}"##
            ),
        ])
    func forms(template: String, expected: String) throws {
        #expect(try render(template, ##"{"name":"Ada Lovelace","count":42,"price":"1.5e3"}"##) == expected)
    }

    @Test("#(prop) is a number only when the property is one alone: with space or a line break around it, a string")
    func numberWithSpace() throws {
        let rendered = try render(##"{"a":"#(n)","b":"#(m)","c":"#(k)"}"##, #"{"n":" 5\n\n","m":"\t7\r\n","k":"8"}"#)
        #expect(rendered == #"{"a":" 5\n\n","b":"\t7\r\n","c":8}"#)
        #expect(!rendered.contains("\n"), "one line")
    }

    @Test("#(prop) of a negative number, or of digits around something that is no number, is a string")
    func notNumbers() throws {
        let rendered = try render(
            ##"{"a":"#(n)","b":"#(m)","c":"#(k)","d":"#(z)"}"##, #"{"n":"-3","m":"1-2","k":"2.5","z":"0"}"#)
        #expect(rendered == #"{"a":"-3","b":"1-2","c":2.5,"d":0}"#)
    }

    @Test(
        "a malformed expression is always an error naming it",
        arguments: [
            ##"{"a":"$(name"}"##, ##"{"a":"{$(name) + }"}"##, ##"{"a":"{$(name) 'x'}"}"##, ##"{"a":"$(name, x)"}"##,
            ##"{"a":"{'open}"}"##, ##"{"a":"%(name, 3)"}"##, ##"{"a":"$(na me)"}"##, ##"{"a":"{not json}"}"##,
        ])
    func malformed(template: String) {
        do {
            _ = try render(template, ##"{"name":"Ada"}"##)
            Issue.record("accepted \(template)")
        } catch {
            #expect((error as? TemplateError)?.detail.hasPrefix("malformed expression") == true, "\(error)")
        }
    }

    @Test(
        "strings that are not, as a whole, an expression are left alone",
        arguments: [
            ##"{"a":"$(name) and more"}"##, ##"{"a":"{}"}"##, ##"{"a":" { } "}"##, ##"{"a":"{\"k\":\"$(name)\"}"}"##,
            ##"{"payload":"just words $(name)"}"##, ##"{"notifee_options":"{}"}"##,
            ##"{"payload":"{ \"image_attachment\" : \"https://z/1.png\" }"}"##,
            ##"{"deep":{"payload":"{\"image_attachment\":\"$(name)\"}"}}"##,
            // A JSON object nested past the parser's depth (64) in a string: text too, not a broken concatenation.
            ##"{"data":""## + String(repeating: ##"{\"a\":"##, count: 80) + "1" + String(repeating: "}", count: 80)
                + ##""}"##,
        ])
    func leftAlone(template: String) throws {
        #expect(try render(template, ##"{"name":"Ada"}"##, strict: true) == template)
    }

    @Test("ZEGOCLOUD's and Notifee's JSON-string objects are rendered inside and encoded again")
    func jsonStrings() throws {
        let rendered = try render(
            ##"{"payload":"{\"image_attachment\":\"$(img)\",\"n\":\"#(n)\"}","notifee_options":"{\"body\":\"{'Hi ' "##
                + ##"+ $(name)}\"}"}"##,
            ##"{"img":"https://z/1.png","n":3,"name":"Ada"}"##)
        #expect(
            rendered
                == ##"{"payload":"{\"image_attachment\":\"https://z/1.png\",\"n\":3}","##
                + ##""notifee_options":"{\"body\":\"Hi Ada\"}"}"##
        )
        // A malformed expression inside is an error too.
        #expect(throws: TemplateError.self) { try render(##"{"payload":"{\"a\":\"$(img\"}"}"##, "{}") }
    }

    @Test(
        "lengths count UTF-16 code units, as .NET does; a surrogate pair is never split",
        arguments: [
            ("$(s, 12)", "Zoë 👩‍💻 Ko"), ("$(s, 5)", "Zoë "), ("$(s, 6)", "Zoë 👩"), (".(s, 8)", "Zoë ..."),
            (".(s, 18)", "Zoë 👩‍💻 Kowalski"), (".(s, 17)", "Zoë 👩‍💻 Kowa..."),
        ])
    func utf16Lengths(expression: String, expected: String) throws {
        let renderer = try TemplateRenderer(
            properties: try JSONParser().parse(Array(##"{"s":"Zoë 👩‍💻 Kowalski"}"##.utf8)))
        #expect(try renderer.evaluate(expression)?.stringValue == expected)
    }

    @Test("--strict turns a missing property into an error naming it")
    func strict() throws {
        let missing = [(##"{"a":"$(who)"}"##, ##"{"a":""}"##), (##"{"a":"{'x' + $(who)}"}"##, ##"{"a":"x"}"##)]
        for (template, lenient) in missing {
            let error = #expect(throws: TemplateError.self) { try render(template, "{}", strict: true) }
            #expect(error?.detail.contains("'who'") == true, "\(template): \(String(describing: error))")
            #expect(try render(template, "{}") == lenient)
        }
        #expect(throws: TemplateError.self) { try render(##"{"a":"$(x)"}"##, ##"{"x":{"deep":1}}"##) }
    }
}
