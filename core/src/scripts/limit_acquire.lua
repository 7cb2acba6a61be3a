-- Fragments (prepended, in this order): clock.lua
-- Take one unit of a rate limiter's capacity, if it has one to give, in one
-- atomic step, by Redis's clock (clock.lua). The kind and its numbers are
-- read from the definition (limit_define.lua), so every process applies
-- the same limit whatever it was built with.
--
-- concurrent: at most `limit` leases at once. A lease is a member of the
--   state zset scored with its expiry (now + lease_ttl); its holder renews
--   it every third of that while it holds it, so a holder killed with -9
--   frees it within one lease_ttl.
-- bucket: at most `limit` per fixed interval (floor(now / interval)).
-- window: at most `limit` in any sliding `interval` (a zset of grants).
-- leaky: a smooth rate of `limit` per `interval`, with bursts of up to
--   `limit` after a quiet spell (GCRA: the state is the time the next
--   unit is due).
--
-- KEYS[1] NS:limiter:<name> (hash: kind, limit, interval, lease_ttl, over)
-- KEYS[2..5] the state of each kind, NS:limiter_state:<kind>:<name>, for
--         concurrent (zset), bucket (hash), window (zset) and leaky
--         (string); the definition's kind picks one. A key per kind: a
--         redefinition as another kind leaves held leases where they are.
-- ARGV[1] a token unique to this attempt (the lease, or the window's grant)
-- ARGV[2] this host's clock (epoch seconds), used only where TIME is refused
-- ARGV[3] "1": a refusal is counted in the definition's `over` (the first
--         try of a wait: a job, or an acquire call, counts once however
--         often it looks); "0": not counted
--
-- Returns {1, 0}: taken; {1, ms}: taken, a concurrent lease (the member
-- ARGV[1]) that lives `ms` milliseconds unless renewed; {0, ms}: over the limit, capacity expected back in `ms` milliseconds
-- (0: unknown, as when a concurrent holder will release); {-1, 0}: no
-- such limiter.
local def = redis.call("HMGET", KEYS[1], "kind", "limit", "interval", "lease_ttl")
local kind, limit, interval = def[1], tonumber(def[2]), tonumber(def[3])
if not kind or not limit then
  return {-1, 0}
end
local now = now_or(ARGV[2])
local state = ({ concurrent = KEYS[2], bucket = KEYS[3], window = KEYS[4], leaky = KEYS[5] })[kind]
if not state then
  return {-1, 0}
end
local function over(seconds)
  if ARGV[3] ~= "0" then
    redis.call("HINCRBY", KEYS[1], "over", 1)
  end
  return {0, math.max(0, math.ceil(seconds * 1000))}
end

if kind == "concurrent" then
  redis.call("ZREMRANGEBYSCORE", state, "-inf", now)
  if redis.call("ZCARD", state) >= limit then
    return over(0)
  end
  local ttl = tonumber(def[4]) or 15
  redis.call("ZADD", state, now + ttl, ARGV[1])
  return {1, math.ceil(ttl * 1000)}
elseif kind == "bucket" then
  local bucket = math.floor(now / interval)
  local held = redis.call("HMGET", state, "bucket", "count")
  local count = 0
  if tonumber(held[1]) == bucket then
    count = tonumber(held[2]) or 0
  end
  if count >= limit then
    return over((bucket + 1) * interval - now)
  end
  redis.call("HSET", state, "bucket", bucket, "count", count + 1)
  redis.call("PEXPIRE", state, math.ceil(interval * 2000) + 1000)
  return {1, 0}
elseif kind == "window" then
  redis.call("ZREMRANGEBYSCORE", state, "-inf", now - interval)
  if redis.call("ZCARD", state) >= limit then
    local oldest = redis.call("ZRANGE", state, 0, 0, "WITHSCORES")
    return over(tonumber(oldest[2]) + interval - now)
  end
  redis.call("ZADD", state, now, ARGV[1])
  redis.call("PEXPIRE", state, math.ceil(interval * 1000) + 1000)
  return {1, 0}
elseif kind == "leaky" then
  local step = interval / limit
  local due = tonumber(redis.call("GET", state)) or now
  if due < now then
    due = now
  end
  -- A burst of `limit` may run ahead of the steady rate, no further.
  local earliest = due - (interval - step)
  if now < earliest then
    return over(earliest - now)
  end
  redis.call("SET", state, string.format("%.6f", due + step), "PX", math.ceil((due + step - now) * 1000) + 1000)
  return {1, 0}
end
return {-1, 0}
