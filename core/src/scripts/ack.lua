-- Fragments (prepended, in this order): take_fields.lua, metrics.lua, batch/keys.lua, batch/status.lua, batch/expire.lua, batch/results.lua, batch/fire.lua, batch/check.lua, batch/succeeded.lua, batch/failed.lua
-- Acknowledge a batch of jobs that ran successfully: take each off the
-- in-progress hash, count them, and record them in the capped history.
-- Two commands for the whole batch's in-progress entries (HMGET to see
-- which are still there, one HDEL), whatever its size.
--
-- KEYS[1] NS:in_progress:<identity> (hash; ignored when ARGV[1] is "0")
-- KEYS[2] NS:stat:processed
-- KEYS[3] NS:stat:processed:<yyyy-mm-dd>
-- KEYS[4] NS:history (list, newest on the left)
-- KEYS[5] NS:workers:<identity> (hash of busy slots)
-- ARGV[1] "1" with reliable fetch (remove from KEYS[1]), "0" with basic fetch
-- ARGV[2] history cap (entries kept)
-- ARGV[3] n, the number of jobs acknowledged
-- ARGV[4 .. 3+n]      the jobs' delivery tokens (their fields in KEYS[1])
-- ARGV[4+n .. 3+2n]   one history entry (JSON) per job, same order
-- ARGV[4+2n]          m, the number of locks to release
-- ARGV[5+2n ..]       m pairs {index of the job (1..n), owner jid}, aligned
--                     with KEYS[6..5+m]: each lock is deleted if the job was
--                     acknowledged here and the lock still holds its jid
-- KEYS[6..5+m]        the locks (periodic run lock, unique lock) to release
-- then, from b = 5+2n+2m:
-- ARGV[b]             TTL of the workers hash (seconds)
-- ARGV[b+1]           s, the number of slots that started a job
-- ARGV[b+2 ..]        s pairs {slot, busy entry JSON} to record in KEYS[5]
-- ARGV[b+2+2s]        e, the number of slots whose job ended
-- ARGV[b+3+2s ..]     e slots to take off KEYS[5]
-- then, from c = b+3+2s+e:
-- ARGV[c]             r, the number of results to keep (jobs with result_ttl)
-- ARGV[c+1 ..]        r triples {index of the job (1..n), TTL seconds, result
--                     JSON}, aligned with KEYS[6+m ..] pairs
--                     {NS:result:<jid>, NS:result_ready:<jid>}: kept only for a
--                     job acknowledged here, with one token on the ready list
-- then, from d = c+1+3r, the jobs of a batch (batch/, prepended):
-- KEYS[6+m+2r]        NS:outbox (hash), where their callbacks are handed over
-- ARGV[d]             t, the number of jobs that belong to a batch
-- ARGV[d+1], [d+2]    (only when t > 0) the batch keys' prefix NS:batch:, now
-- ARGV[d+3], [d+4]    sharded by queue, the prefix of the filed markers
--                     (NS:filed:<identity>:) and their TTL; else "" and 0
-- ARGV[d+5 ..]        t quadruples {index of the job (1..n), its batch id,
--                     its jid, the value it returned (JSON) or "" (kept
--                     only for batch_result jobs)}: each acknowledged here
--                     counts as a success of its batch (a batch's jobs
--                     counted together), its value kept in the batch's
--                     results when given. Sharded by queue, a job's entry
--                     is taken off in progress after this, on its queue's
--                     slot: its marker (the prefix and its token) is set
--                     here, and a job whose marker is set already (a
--                     repeat) is not counted again; recovery takes an entry
--                     with a marker off instead of running it again (the
--                     same two steps as a failure filed, completion/file.rs)
-- then, from e = d+1 (t = 0) or d+5+4t, the metrics section
-- (scripts/metrics.lua), its keys from KEYS[7+m+2r]: the executions
-- settled since the last metrics written (K = 0 most calls: they are
-- written once a second)
--
-- Returns the hand-over ids of the batch callbacks written to the outbox
-- (for outbox.rs to push). With reliable fetch a job no longer in
-- progress here (requeued by shutdown or by recovery while it ran) is not
-- counted, nor counted in its batch: its requeued copy will be.
local reliable = ARGV[1] == "1"
local cap = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local counted = 0
local history = {}
local kept = {}
local held = {}
if reliable and n > 0 then
  for _, i in ipairs(take_fields(KEYS[1], 4, 3 + n)) do
    held[i - 3] = false
  end
end
for i = 1, n do
  local keep = held[i] ~= false
  kept[i] = keep
  if keep then
    counted = counted + 1
    history[#history + 1] = ARGV[3 + n + i]
  end
end
local m = tonumber(ARGV[4 + 2 * n] or "0")
for j = 1, m do
  local index = tonumber(ARGV[3 + 2 * n + 2 * j])
  local owner = ARGV[4 + 2 * n + 2 * j]
  if kept[index] and redis.call("GET", KEYS[5 + j]) == owner then
    redis.call("DEL", KEYS[5 + j])
  end
end
-- Busy slots, in chunks (unpacking thousands at once overflows Lua's stack).
local b = 5 + 2 * n + 2 * m
local s = tonumber(ARGV[b + 1])
for i = b + 2, b + 1 + 2 * s, 1000 do
  redis.call("HSET", KEYS[5], unpack(ARGV, i, math.min(i + 999, b + 1 + 2 * s)))
end
if s > 0 then
  redis.call("EXPIRE", KEYS[5], ARGV[b])
end
local e = tonumber(ARGV[b + 2 + 2 * s])
local first = b + 3 + 2 * s
for i = first, first + e - 1, 1000 do
  redis.call("HDEL", KEYS[5], unpack(ARGV, i, math.min(i + 999, first + e - 1)))
end
local c = first + e
local r = tonumber(ARGV[c] or "0")
for k = 1, r do
  local index = tonumber(ARGV[c + 3 * k - 2])
  if kept[index] then
    local ttl = ARGV[c + 3 * k - 1]
    local ready = KEYS[5 + m + 2 * k]
    redis.call("SET", KEYS[4 + m + 2 * k], ARGV[c + 3 * k], "EX", ttl)
    redis.call("DEL", ready)
    redis.call("RPUSH", ready, "1")
    redis.call("EXPIRE", ready, ttl)
  end
end
local d = c + 1 + 3 * r
local t = tonumber(ARGV[d] or "0")
local handed = {}
if t > 0 then
  -- Counted per batch: one call for all of a batch's jobs here.
  local prefix, at, units, values, order = ARGV[d + 1], ARGV[d + 2], {}, {}, {}
  local markers, marker_ttl = ARGV[d + 3], ARGV[d + 4]
  for k = 1, t do
    local i = d + 4 * k + 1
    local index = tonumber(ARGV[i])
    local count = kept[index]
    if count and markers ~= "" then
      count = redis.call("SET", markers .. ARGV[3 + index], "1", "NX", "EX", marker_ttl)
    end
    if count then
      local bid, jid = ARGV[i + 1], ARGV[i + 2]
      if not units[bid] then
        units[bid], values[bid] = {}, {}
        order[#order + 1] = bid
      end
      table.insert(units[bid], jid)
      if ARGV[i + 3] ~= "" then
        table.insert(values[bid], jid)
        table.insert(values[bid], ARGV[i + 3])
      end
    end
  end
  for _, bid in ipairs(order) do
    batch_succeeded(prefix, bid, units[bid], at, KEYS[6 + m + 2 * r], handed, values[bid])
  end
end
record_metrics(7 + m + 2 * r, t > 0 and d + 5 + 4 * t or d + 1)
if counted > 0 then
  redis.call("INCRBY", KEYS[2], counted)
  redis.call("INCRBY", KEYS[3], counted)
  if cap > 0 then
    redis.call("LPUSH", KEYS[4], unpack(history))
    redis.call("LTRIM", KEYS[4], 0, cap - 1)
  end
end
return handed
