-- Fragments: none
-- Define a rate limiter, or confirm its definition, in one atomic step:
-- list its name and write its kind and numbers, which the acquire script
-- reads (so every process applies the same limit). A change of kind
-- touches no state: each kind keeps its own (NS:limiter_state:<kind>:
-- <name>, see limit_acquire.lua), so leases held under a concurrent
-- definition still count when it comes back, as two releases of an app
-- flip it during a rolling deploy; the other kinds' states expire.
--
-- KEYS[1] NS:limiter:<name> (hash: kind, limit, interval, lease_ttl, over)
-- KEYS[2] NS:limiters (set)
-- ARGV[1] name
-- ARGV[2] kind: concurrent | bucket | window | leaky
-- ARGV[3] limit
-- ARGV[4] interval (seconds; "0" for concurrent)
-- ARGV[5] lease TTL (seconds; "0" for the other kinds)
--
-- Returns {0}: defined so already; {1}: newly defined; {2, kind, limit,
-- interval, lease_ttl}: redefined, with what it was before.
local old = redis.call("HMGET", KEYS[1], "kind", "limit", "interval", "lease_ttl")
redis.call("SADD", KEYS[2], ARGV[1])
if old[1] == ARGV[2] and old[2] == ARGV[3] and old[3] == ARGV[4] and old[4] == ARGV[5] then
  return {0}
end
redis.call("HSET", KEYS[1], "kind", ARGV[2], "limit", ARGV[3], "interval", ARGV[4], "lease_ttl", ARGV[5])
if not old[1] then
  return {1}
end
return {2, old[1], old[2] or "", old[3] or "", old[4] or ""}
