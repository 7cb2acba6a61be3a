-- The status a callback gets (JSON): what the hash says now.
local function batch_status(bid, batch, event, now)
  local f = redis.call("HMGET", batch, "description", "total", "pending", "dead", "created_at", "parent")
  local status = {
    bid = bid,
    event = event,
    description = f[1] or "",
    total = tonumber(f[2]) or 0,
    pending = tonumber(f[3]) or 0,
    failures = redis.call("HLEN", batch .. ":failures"),
    dead = tonumber(f[4]) or 0,
    created_at = tonumber(f[5]) or 0,
    at = tonumber(now),
  }
  if f[6] and f[6] ~= "" then
    status.parent = f[6]
  end
  return cjson.encode(status)
end
