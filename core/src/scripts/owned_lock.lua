-- Fragments: none
-- Compare-and-act on locks whose value is their owner's jid (a periodic
-- run lock `NS:periodic:running:<pjid>` or a unique lock `NS:unique:<d>`):
-- each key is extended or deleted only if it still holds that exact jid,
-- so an older run can never shorten, extend or release a lock that has
-- since passed to a newer one.
--
-- KEYS[1..n] the lock keys
-- ARGV[1]    "expire" | "delete" | "retake" (expire if still the owner's,
--            or take it again for the owner if it lapsed: a job put back
--            on its queue keeps its periodic run lock)
-- ARGV[2]    TTL for "expire" (whole seconds; ignored for "delete")
-- ARGV[3..]  the owner jid of each key, aligned with KEYS
--
-- Returns the number of locks changed.
local changed = 0
for i = 1, #KEYS do
  local owner = redis.call("GET", KEYS[i])
  if ARGV[1] == "retake" and not owner then
    redis.call("SET", KEYS[i], ARGV[2 + i], "EX", ARGV[2])
    changed = changed + 1
  elseif owner == ARGV[2 + i] then
    if ARGV[1] == "delete" then
      redis.call("DEL", KEYS[i])
    else
      redis.call("EXPIRE", KEYS[i], ARGV[2])
    end
    changed = changed + 1
  end
end
return changed
