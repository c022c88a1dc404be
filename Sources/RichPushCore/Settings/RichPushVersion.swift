/// The library's version.
public enum RichPushVersion {
    /// The version string.
    public static let current = "0.1.0"
}
