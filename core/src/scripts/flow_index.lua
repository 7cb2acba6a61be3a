-- Prepended to the flow-control pushes (see flow.rs): each writes its
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
