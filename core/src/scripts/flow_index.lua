-- Prepended to the flow-control pushes (see flow.rs).
--
-- Each writes its
-- key's entry in the namespace's index of flow keys, NS:flow_keys (a
-- sorted set of '["<mode>","<queue>","<class>","<key>"]', the JSON the
-- caller made, scored by when the key's state expires), which the ops API
-- and the dashboard read. A push also drops up to 100 entries whose state
-- has expired, so the index holds the live keys and what expired since
-- the last flow pushes, at a bounded cost per push.
local function list_flow_key(index, member, expires_at, now)
  local stale = redis.call("ZRANGEBYSCORE", index, "-inf", string.format("(%.6f", now), "LIMIT", 0, 100)
  if #stale > 0 then
    redis.call("ZREM", index, unpack(stale))
  end
  redis.call("ZADD", index, string.format("%.6f", expires_at), member)
end

-- The status record of the job that will run (see results.rs), for a job
-- pushed with result_ttl: the caller cannot write it, as the jid (a burst's
-- or a replaced job's) and the due time are decided here. The record is
-- `head .. jid .. mid`, then, when it is scheduled, the due time and
-- `tail`; it lasts `ttl` seconds, and until then for a scheduled job.
-- Nothing is written for an empty `prefix` (no result_ttl).
local function keep_result(prefix, jid, head, mid, tail, ttl, now, due)
  if prefix == nil or prefix == "" then
    return
  end
  local record = head .. jid .. mid
  local lasts = tonumber(ttl)
  if due then
    record = record .. string.format("%.6f", due) .. tail
    lasts = lasts + math.max(0, math.ceil(due - now))
  end
  redis.call("SET", prefix .. jid, record, "EX", lasts)
end
