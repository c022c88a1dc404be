/// An option, `--name <value>`: declared with its help, its value's kind and range, and its default (the value it
/// holds when not given; help shows it), or without one when it must be given. Given more than once, an array
/// option collects every value (they replace its default); any other refuses the second.
///
/// ```
/// @Option("deadline", .seconds(in: Enricher.Configuration.timeoutRange), help: "Time each payload may take.")
/// var deadline = Enricher.Configuration().timeout
/// ```
@propertyWrapper
struct Option<Value>: DeclaredArgument, NamedOption {
    private let declaration: ArgumentDeclaration
    private let slot: Slot<Value>
    private let convert: (_ texts: [String], _ option: String) throws(UsageError) -> Value

    /// An option with a default; help shows `default` when given, else the default value as the kind writes it.
    init(
        wrappedValue: Value, _ name: String, _ value: OptionValue<Value>, help: String, default: String? = nil,
        field: String? = nil
    ) {
        declaration = ArgumentDeclaration(
            name: name, kind: .option(placeholder: value.placeholder), help: help, range: value.range,
            requirement: .defaultValue(`default` ?? value.describe(wrappedValue)), repeatable: false, field: field)
        slot = Slot(wrappedValue)
        convert = { texts, option throws(UsageError) in try value.parse(texts[texts.count - 1], option) }
    }

    /// An option that must be given.
    init(_ name: String, _ value: OptionValue<Value>, help: String, field: String? = nil) {
        declaration = ArgumentDeclaration(
            name: name, kind: .option(placeholder: value.placeholder), help: help, range: value.range,
            requirement: .required, repeatable: false, field: field)
        slot = Slot(nil)
        convert = { texts, option throws(UsageError) in try value.parse(texts[texts.count - 1], option) }
    }

    /// An option that may be left out; help shows `default` (what its absence means), or the default value.
    init<Wrapped>(
        wrappedValue: Wrapped? = nil, _ name: String, _ value: OptionValue<Wrapped>, help: String,
        default: String? = nil, field: String? = nil
    ) where Value == Wrapped? {
        declaration = ArgumentDeclaration(
            name: name, kind: .option(placeholder: value.placeholder), help: help, range: value.range,
            requirement: .defaultValue(`default` ?? wrappedValue.map(value.describe) ?? "none"), repeatable: false,
            field: field)
        slot = Slot(wrappedValue)
        convert = { texts, option throws(UsageError) in try value.parse(texts[texts.count - 1], option) }
    }

    /// A repeatable option: every value given, in order, replacing the default.
    init<Element>(
        wrappedValue: [Element] = [], _ name: String, _ value: OptionValue<Element>, help: String,
        default: String? = nil, field: String? = nil
    ) where Value == [Element] {
        let shown = wrappedValue.isEmpty ? "none" : wrappedValue.map(value.describe).joined(separator: ", ")
        declaration = ArgumentDeclaration(
            name: name, kind: .option(placeholder: value.placeholder), help: help, range: value.range,
            requirement: .defaultValue(`default` ?? shown), repeatable: true, field: field)
        slot = Slot(wrappedValue)
        convert = { texts, option throws(UsageError) in
            var values: [Element] = []
            for text in texts { values.append(try value.parse(text, option)) }
            return values
        }
    }

    var wrappedValue: Value { slot.read() }

    /// The option itself: `$deadline.isGiven`, `$deadline.flag`.
    var projectedValue: Self { self }

    var isGiven: Bool { slot.readIsGiven() }

    var flag: String { "--" + declaration.name }

    var declarations: [ArgumentDeclaration] { [declaration] }

    var unread: [String] { slot.reads == 0 ? ["--" + declaration.name] : [] }

    func bind(_ words: CommandLineWords, command: String) throws(UsageError) {
        let texts = words.values[declaration.name] ?? []
        if case .required = declaration.requirement, texts.last?.isEmpty ?? true {
            throw UsageError("\(command): \(declaration.synopsis) is required")
        }
        guard !texts.isEmpty else { return }
        slot.give(try convert(texts, declaration.name))
    }
}
