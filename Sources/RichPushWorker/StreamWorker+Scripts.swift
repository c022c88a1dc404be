/// The Lua scripts the worker runs on the server: each checks, in the same atomic step as its write, that this
/// consumer still owns the entry it writes for.
extension StreamWorker {
    /// KEYS: input, output. ARGV: group, consumer, then an id and its result for each entry. For each, writes
    /// the result only if the entry is still pending for this consumer (another may have claimed it), and only
    /// once should an id come twice; then acknowledges every entry written, in one XACK: 1 for each written,
    /// else 0. The per-entry check is XPENDING with the consumer filter (Redis 6.2, as XAUTOCLAIM), so that Redis
    /// answers only for an entry this consumer owns. One XACK for the batch instead of one an entry: each call
    /// inside a script costs about a microsecond of Redis's CPU besides the command's own work.
    static let writeScript = """
        local done, acknowledged, seen = {}, {}, {}
        for i = 3, #ARGV, 2 do
          local id = ARGV[i]
          if not seen[id] and #redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1, ARGV[2]) > 0 then
            seen[id] = true
            redis.call('XADD', KEYS[2], '*', 'source', id, 'result', ARGV[i + 1])
            acknowledged[#acknowledged + 1] = id
            done[#done + 1] = 1
          else
            done[#done + 1] = 0
          end
        end
        if #acknowledged > 0 then redis.call('XACK', KEYS[1], ARGV[1], unpack(acknowledged)) end
        return done
        """

    /// KEYS: input, dead-letter stream. ARGV: group, consumer, id, reason, deliveries. As `writeScript`, for an
    /// entry delivered too often; its payload (empty when it has none, or was deleted) is copied on the server.
    static let deadLetterScript = """
        local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
        if #p == 0 or p[1][2] ~= ARGV[2] then return 0 end
        local payload, entry = '', redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
        if entry then
          for i = 1, #entry[2] - 1, 2 do
            if entry[2][i] == 'payload' then payload = entry[2][i + 1] break end
          end
        end
        redis.call('XADD', KEYS[2], '*', 'source', ARGV[3], 'payload', payload,
          'reason', ARGV[4], 'deliveries', ARGV[5])
        redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
        return 1
        """

    /// KEYS: input. ARGV: group, consumer. Removes the consumer if no entry is pending for it, in one step (no
    /// entry can be delivered to it in between): 1 removed, 0 kept.
    static let removeConsumerScript = """
        if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
        redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
        return 1
        """

    /// KEYS: input. ARGV: group, an age in milliseconds, this consumer. Removes the other consumers with no pending
    /// entry idle longer than the age; returns their names. `idle` is the time since the consumer's last read or
    /// claim (a live worker's reader comes back every second, or holds entries pending).
    static let removeIdleConsumersScript = """
        local removed = {}
        for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
          local fields = {}
          for i = 1, #consumer, 2 do fields[consumer[i]] = consumer[i + 1] end
          if fields['pending'] == 0 and fields['idle'] > tonumber(ARGV[2]) and fields['name'] ~= ARGV[3] then
            redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], fields['name'])
            removed[#removed + 1] = fields['name']
          end
        end
        return removed
        """
}
