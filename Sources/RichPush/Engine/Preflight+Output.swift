extension Preflight {
    /// The preflight as one JSON object (`richpush preflight --json`, `POST /v1/preflight`): `input`, `format`,
    /// `ready`, `references` (one per reference and platform), `problems` (the payload's own), `content` (the
    /// payload ready to send) and `elapsed_ms`.
    public func json(input: String?) -> PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = []
        if let input { members.append(("input", .text(input))) }
        if let format { members.append(("format", format.json)) }
        members += [
            ("ready", .bool(ready)),
            ("references", .array(verdicts.map(\.json))),
            ("problems", .array(problems.map(\.json))),
            ("content", content?.json ?? .null),
        ]
        members.append(("elapsed_ms", EnrichmentResult.milliseconds(elapsed)))
        return .object(JSONObject(members))
    }

    /// The preflight for a person: a line for the input, then one per reference and platform (`ok` or `NO`), with
    /// what else there is to know under it, and the payload's own problems.
    public func text(input: String) -> String {
        var lines: [String] = []
        let shown = verdicts.filter(\.reaches).count
        let head =
            format.map { "\($0.name.rawValue), decided by \($0.decidedBy)" } ?? "not a payload"
        lines.append(
            "\(input) (\(head)): " + (ready ? "ready" : "NOT ready")
                + (verdicts.isEmpty ? ", no media reference" : ", \(shown) of \(verdicts.count) will show"))
        let width = verdicts.map(\.platform.rawValue.count).max() ?? 0
        for verdict in verdicts {
            let name = verdict.platform.rawValue
            let platform = name + String(repeating: " ", count: width - name.count)
            lines.append("  \(verdict.reaches ? "ok" : "NO") \(platform) \(verdict.field): \(verdict.summary)")
            lines.append("        \(verdict.source)")
            if verdict.lacksExtension {
                lines.append(
                    "        note: no file extension in the URL's path; an extension that names the file after the URL "
                        + "(Apple's samples, FCM's iOS docs) attaches nothing")
            }
            if let provenance = verdict.media?.provenance, !provenance.redirects.isEmpty {
                lines.append("        redirected: " + provenance.redirects.joined(separator: " -> "))
            }
            if verdict.contentTypeAgrees == false, let type = verdict.fetchedType {
                let sent = verdict.media?.provenance?.contentType.map { "Content-Type \($0)" } ?? "no Content-Type"
                lines.append(
                    "        note: the origin sent \(sent); the bytes are \(type.mime) (an extension that trusts the "
                        + "header attaches nothing)")
            }
            for note in verdict.notes { lines.append("        note: \(note.code): \(note.detail)") }
        }
        for problem in problems { lines.append("  \(problem.source): \(problem.code): \(problem.detail)") }
        // Each element is one line: what the payload, an origin or a store put in one is escaped, never a line of
        // its own.
        return lines.map(TerminalText.printable).joined(separator: "\n") + "\n"
    }
}

extension Preflight.Verdict {
    /// What the phone gets, in a few words: `attached: public.jpeg, 5905 bytes, 160 x 120`.
    var summary: String {
        switch outcome {
        case .refused(let code, let detail):
            return "refused, \(code): \(detail)"
        case .attached, .transformed:
            guard let media else { return "attached" }
            var text =
                if case .transformed(let steps) = outcome {
                    "attached after \(steps.map(\.rawValue).joined(separator: ", ")): "
                } else {
                    "attached as sent: "
                }
            text += "\(media.type.uti), \(media.bytes) bytes"
            if let size = media.dimensions { text += ", \(size.width) x \(size.height)" }
            if case .published(let url)? = media.publication { text += ", published at \(url)" }
            return text
        }
    }

    /// The reference object of the JSON form.
    var json: PushPayload.JSON {
        var members: [(key: String, value: PushPayload.JSON)] = [
            ("field", .text(field)), ("source", .text(source)), ("platform", .text(platform.rawValue)),
            ("convention", .text(convention)),
        ]
        switch outcome {
        case .attached:
            members.append(("verdict", .text("attached")))
        case .transformed(let steps):
            members.append(("verdict", .text("transformed")))
            members.append(("transformed", .array(steps.map { .text($0.rawValue) })))
        case .refused(let code, let detail):
            members += [("verdict", .text("refused")), ("code", .text(code.rawValue)), ("detail", .text(detail))]
        }
        if let media {
            members += [
                ("type", .text(media.type.uti)), ("mime", .text(media.type.mime)), ("bytes", .integer(media.bytes)),
                ("sha256", .text(media.sha256)),
            ]
            if let size = media.dimensions { members.append(("dimensions", size.json)) }
            if case .published(let url)? = media.publication { members.append(("published_url", .text(url))) }
        }
        if let provenance = media?.provenance {
            members.append(("redirects", .array(provenance.redirects.map { .text($0) })))
            members.append(("content_type_sent", provenance.contentType.map { .text($0) } ?? .null))
        }
        if let agrees = contentTypeAgrees { members.append(("content_type_agrees", .bool(agrees))) }
        members.append(("extension_in_url", .bool(!lacksExtension)))
        if !notes.isEmpty { members.append(("notes", .array(notes.map(\.json)))) }
        return .object(JSONObject(members))
    }
}
