extension Fetcher {
    /// A fetcher with these settings.
    /// - Throws: `ConfigurationError` naming the first wrong field (see `Enricher.Configuration.validate()`);
    ///   `FetcherError` when libmagic's database cannot be loaded, or when the attachments root is
    ///   refused (a symbolic link, not a directory, another user's, writable by group or others; see
    ///   `AttachmentStore`) or cannot be made.
    public convenience init(configuration: Enricher.Configuration) throws {
        try configuration.validate()
        try self.init(
            network: configuration.network, limits: configuration.limits, store: configuration.store,
            transform: configuration.transform, names: configuration.settingNames)
    }
}
