import RichPush

/// `richpush render`: expands an Azure Notification Hubs template with its properties.
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        name: "render",
        abstract: "Expand a template notification (Azure Notification Hubs expressions) into a payload.",
        discussion: """
            Expressions: $(prop), $(prop, n), .(prop), .(prop, n), %(prop), #(prop), and {e1 + 'literal' + e2}.
            Prints the payload as one line of JSON. EXIT STATUS: 0; 1 when the template cannot be rendered (the
            message names the expression or property); 64 on a usage error.
            """)

    @Option("template", .text("file"), help: "The template: a JSON payload whose string values may be expressions.")
    var template: String

    @Option("params", .text("file"), help: "The properties: a JSON object of name to string or number.")
    var params: String

    @Flag("strict", help: "A missing property is an error instead of an empty string.")
    var strict: Bool

    struct Plan: Sendable {
        let template: PushPayload.JSON
        let renderer: TemplateRenderer
    }

    func plan() throws(UsageError) -> Plan {
        let loaded = try Self.load(template, option: $template.flag)
        // What is printed is a payload: an object (a template that is a string or an array rendered into one
        // `enrich` refuses as not-object).
        guard case .object = loaded else {
            throw UsageError(
                "\($template.flag) \(template): a template is a payload, a JSON object; this is "
                    + loaded.kindDescription)
        }
        let properties = try Self.load(params, option: $params.flag)
        // Properties that are not an object of strings and numbers are the file given, not the template: a usage
        // error (64), as an unreadable one is, where rendering said so with 1.
        do throws(TemplateError) {
            return Plan(template: loaded, renderer: try TemplateRenderer(properties: properties, strict: strict))
        } catch {
            throw UsageError("\($params.flag) \(params): \(error.detail)")
        }
    }

    static func run(_ plan: Plan) async -> Int32 {
        do {
            let rendered = JSONWriter.bytes(try plan.renderer.render(plan.template))
            // What is printed is what `enrich` and `stream` read, within their payload limit: the renderer's bound
            // counts its expressions' text, and escaping (a control character is six bytes, more inside a JSON
            // string) can write more.
            let limit = JSONParser.Limits().maximumBytes
            guard rendered.count <= limit else {
                Output.error(
                    "richpush render: the payload is \(rendered.count) bytes once written; the payload limit is "
                        + "\(limit)")
                return 1
            }
            let lost = StreamFailure(.output)
            _ = Output.writeResults(rendered + [0x0A], failure: lost)
            return lost.exitStatus() ?? 0
        } catch {
            Output.error("richpush render: \(error.detail)")
            return 1
        }
    }

    private static func load(_ path: String, option: String) throws(UsageError) -> PushPayload.JSON {
        do throws(PayloadError) {
            return try JSONParser().parseFile(try InputReader.read(path, limit: 1 << 20).get())
        } catch {
            throw UsageError("\(option) \(path): \(error.code) (\(error.detail))")
        }
    }
}
