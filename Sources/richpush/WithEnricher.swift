import RichPush

/// Runs `body` with an enricher made from `configuration`, then shuts it down (awaited: its cache's links are
/// gone before the command returns). Returns 70 (EX_SOFTWARE), having said why, when it cannot be made (libmagic's
/// database missing, the attachments root refused): the command's own clean-up still runs.
func withEnricher(_ configuration: Enricher.Configuration, _ body: (Enricher) async -> Int32) async -> Int32 {
    let enricher: Enricher
    do {
        enricher = try Enricher(configuration: configuration)
    } catch let error as FetcherError where error.field == StoreOptions.field {
        Output.error("richpush: \(error) \(StoreOptions.hint)")
        return 70
    } catch {
        Output.error("richpush: \(error)")
        return 70
    }
    let status = await body(enricher)
    await enricher.shutdown()
    return status
}
