/// Path arithmetic without NSString (FoundationEssentials has none).
enum Path {
    /// The last component: `a/b/c.json` → `c.json` (a trailing slash ignored).
    static func lastComponent(_ path: String) -> String {
        let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        return trimmed.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? trimmed
    }

    /// The directory part: `a/b/c.json` → `a/b`; `c.json` → `.`.
    static func directory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
