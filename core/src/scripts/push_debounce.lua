-- Fragments (prepended, in this order): flow_index.lua
-- Push a debounced job (see flow.rs): the pushes of one class, queue and
-- key within the window of each other collapse into one job in the
-- schedule, due a window after the last push (and no later than the
-- longest wait after the first), carrying the last push's payload under
-- the first push's jid. A burst's job is found by its payload in the
-- schedule: once it has come due (moved to its queue, running, done) the
-- next push starts a new burst. The state hash expires a minute after the
-- latest the burst's job can come due, so a key that goes quiet leaves
-- nothing behind.
--
-- KEYS[1] NS:debounce:<digest of class, queue and key> (hash: jid,
--         payload as scheduled, first = when the burst began)
-- KEYS[2] NS:schedule (zset)
-- KEYS[3] NS:stat:collapsed, KEYS[4] NS:stat:collapsed:<yyyy-mm-dd>
--         (counters of the pushes that collapsed into a burst's job)
-- KEYS[5] NS:flow_keys (see flow_index.lua)
-- ARGV[1] the payload up to its jid (the payload is ARGV[1] .. jid ..
--         ARGV[2]: a jid is hex, so no re-encoding, which would round
--         large integers in args)
-- ARGV[2] the payload after its jid
-- ARGV[3] this push's jid
-- ARGV[4] now (epoch seconds, the fleet's clock)
-- ARGV[5] the window (seconds)
-- ARGV[6] the longest wait after the first push (seconds), or ""
-- ARGV[7] the key's member of NS:flow_keys
-- ARGV[8..12] the status record of a job pushed with result_ttl, for the
--         burst's job (see keep_result in flow_index.lua): the prefix of
--         its key (NS:result:, "" for none), the record's head, middle and
--         tail around its jid and due time, and how long it lasts
--
-- Returns {jid that will run, 1 when this push began a burst, else 0}.
local now, window = tonumber(ARGV[4]), tonumber(ARGV[5])
local longest = tonumber(ARGV[6])
local state = redis.call("HMGET", KEYS[1], "jid", "payload", "first")
local jid, first, began = ARGV[3], now, 1
if state[1] and state[2] and redis.call("ZSCORE", KEYS[2], state[2]) then
  jid, first, began = state[1], tonumber(state[3]) or now, 0
  redis.call("ZREM", KEYS[2], state[2])
  redis.call("INCR", KEYS[3])
  redis.call("INCR", KEYS[4])
end
local due = now + window
if longest then
  due = math.min(due, first + longest)
end
local payload = ARGV[1] .. jid .. ARGV[2]
redis.call("ZADD", KEYS[2], string.format("%.6f", due), payload)
redis.call("HSET", KEYS[1], "jid", jid, "payload", payload, "first", string.format("%.6f", first))
redis.call("EXPIRE", KEYS[1], math.ceil(due - now) + 60)
list_flow_key(KEYS[5], ARGV[7], now + math.ceil(due - now) + 60, now)
keep_result(ARGV[8], jid, ARGV[9], ARGV[10], ARGV[11], ARGV[12], now, due)
return { jid, began }
