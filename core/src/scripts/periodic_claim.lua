-- Fragments (prepended, in this order): wake.lua
-- Claim one cron slot of a periodic entry and push its job, in one atomic
-- step. Every process of the fleet ticks; exactly one wins a slot. Claim and
-- push are one script so the claim can never stand without its job (a
-- push that fails leaves the slot unclaimed, for the next tick to fire).
--
-- KEYS[1] NS:periodic:running:<pjid> (run lock; any key when ARGV[2] is "0")
-- KEYS[2] NS:periodic:last_slot:<pjid> (string: the last slot claimed)
-- KEYS[3] NS:queues (set)
-- KEYS[4] NS:queue:<q> (list), or sharded by queue NS:outbox (hash; the
--         queue is on another slot: see outbox.rs)
-- ARGV[1] the slot (epoch seconds, integer)
-- ARGV[2] "1" for an `until_executed` entry, else "0"
-- ARGV[3] jid of the job to push
-- ARGV[4] run-lock TTL while queued (whole seconds)
-- ARGV[5] queue name
-- ARGV[6] the job payload (built by the caller)
-- ARGV[7] for an entry never claimed before: slots older than this are
--         recorded as seen but not fired (a new entry does not fire a slot
--         that passed before it existed)
-- ARGV[8] the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[9] sharded by queue: the hand-over id the job is written to KEYS[4]
--         under; absent or "" to push onto KEYS[4]
--
-- Returns {status, previous last_slot or ""}: status 1 = claimed and
-- pushed; 0 = the slot was already claimed (or predates a new entry);
-- -1 = skipped because the previous run still holds the run lock (the slot
-- is recorded as claimed: `until_executed` never overlaps itself).
local previous = redis.call("GET", KEYS[2])
local slot = tonumber(ARGV[1])
if previous then
  if slot <= tonumber(previous) then
    return {0, previous}
  end
elseif slot < tonumber(ARGV[7]) then
  redis.call("SET", KEYS[2], ARGV[1])
  return {0, ""}
end
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
  redis.call("SET", KEYS[2], ARGV[1])
  return {-1, previous or ""}
end
-- Fail before writing anything if the push would fail.
local handover = ARGV[9] or ""
local want = handover == "" and "list" or "hash"
local kind = redis.call("TYPE", KEYS[4])["ok"]
if kind ~= want and kind ~= "none" then
  return redis.error_reply("WRONGTYPE " .. KEYS[4] .. " is a " .. kind .. ", not a " .. want)
end
if handover == "" then
  wake_if_was_empty(ARGV[8], ARGV[5], redis.call("LPUSH", KEYS[4], ARGV[6]), 1)
else
  redis.call("HSET", KEYS[4], handover, ARGV[5] .. "\n" .. ARGV[6])
end
redis.call("SADD", KEYS[3], ARGV[5])
redis.call("SET", KEYS[2], ARGV[1])
if ARGV[2] == "1" then
  redis.call("SET", KEYS[1], ARGV[3], "EX", ARGV[4])
end
return {1, previous or ""}
