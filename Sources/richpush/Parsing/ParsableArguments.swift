import RichPush
import Synchronization

/// A type whose properties declare arguments (`@Option`, `@Flag`, `@Argument`, `@OptionGroup`), as in
/// swift-argument-parser: a command, or a group of options several commands share.
protocol ParsableArguments {
    /// Every argument with its default; the parser then binds what the command line gave.
    init()
}

extension ParsableArguments {
    /// Its declared arguments, in the order of its properties.
    var declaredArguments: [any DeclaredArgument] {
        Mirror(reflecting: self).children.compactMap { $0.value as? any DeclaredArgument }
    }

    /// What they declare, groups expanded in place.
    var declarations: [ArgumentDeclaration] { declaredArguments.flatMap(\.declarations) }

    /// What the type declares as `Self()` makes it, read by reflection once a type (`serve --tenants` reads a command
    /// line a tenant: reflecting the command's every option group for each was a third of loading a tenant). Names,
    /// placeholders, fields and kinds are the same for every instance; a default is not (`EngineOptions(deadline:)`
    /// makes other defaults for `preflight`): read those from the instance's `declarations`.
    static var declarations: [ArgumentDeclaration] {
        let type = ObjectIdentifier(Self.self)
        if let known = declarationsRead.withLock({ $0[type] }) { return known }
        let read = Self().declarations
        declarationsRead.withLock { $0[type] = read }
        return read
    }

    /// The options declared and never read by the command: none once it has planned (a test checks it).
    var unread: [String] { declaredArguments.flatMap(\.unread) }

    /// `configuration` checked by the library's one validator; its error names the field, the message the option
    /// that sets it (`network.resolve[3]` is `--resolve`). The engine's own messages name options the same way: the
    /// configuration's `settingNames` are the declared options' fields (a refused http URL says `--allow-http`).
    func validated(_ configuration: Enricher.Configuration) throws(UsageError) -> Enricher.Configuration {
        do {
            try configuration.validate()
        } catch {
            let field = error.field.split(separator: "[").first.map(String.init) ?? error.field
            let option = Self.declarations.first { $0.field == field }.map { "--" + $0.name }
            throw UsageError("\(option ?? error.field): \(error.detail)")
        }
        var named = configuration
        named.settingNames = SettingNames(
            Dictionary(
                Self.declarations.compactMap { declaration in declaration.field.map { ($0, "--" + declaration.name) } }
            ) {
                first, _ in first
            })
        return named
    }
}

/// `ParsableArguments.declarations` by type.
private let declarationsRead = Mutex<[ObjectIdentifier: [ArgumentDeclaration]]>([:])
