/// How the engine's messages name a configuration field: a refusal that a setting would lift says which
/// (`http is not allowed (only https; see network.allowHTTP)`). By default a field is named by its path in
/// `Enricher.Configuration`, as `ConfigurationError.field` names it; a host whose users set the engine otherwise
/// gives its own names (the CLI its flags: `--allow-http`), so that a message never names a setting its reader
/// cannot find.
public struct SettingNames: Sendable, Hashable {
    /// The host's name for each field path it renames (`"network.allowHTTP": "--allow-http"`).
    public var names: [String: String]

    /// Names for the fields given; every other field keeps its path.
    public init(_ names: [String: String] = [:]) {
        self.names = names
    }

    /// The name of the field at `path`: the host's, else the path itself.
    public subscript(path: String) -> String { names[path] ?? path }
}
