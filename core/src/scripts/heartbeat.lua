-- Fragments (prepended, in this order): clock.lua
-- One heartbeat: register the process, write its info and busy slots with a
-- TTL, and (reliable fetch) stamp its last beat in Redis's own clock so host
-- clock skew never decides that a live process is dead.
--
-- KEYS[1] NS:processes (set)
-- KEYS[2] NS:process:<identity> (hash)
-- KEYS[3] NS:workers:<identity> (hash)
-- KEYS[4] NS:in_progress_identities (set)
-- KEYS[5] NS:last_beat (hash)
-- ARGV[1] identity
-- ARGV[2] info JSON
-- ARGV[3] busy count
-- ARGV[4] "true" | "false" (quiet)
-- ARGV[5] TTL of the process and workers hashes (seconds)
-- ARGV[6] "1" with reliable fetch (register for orphan recovery), else "0"
-- ARGV[7] this host's clock (epoch seconds), used only where TIME is refused
--         (see clock.lua, prepended)
-- ARGV[8]  the process's resident memory in KiB (Sidekiq's `rss`, which its
--          Web UI shows), or "" where it is not known
-- ARGV[9..] busy slots as field, value pairs
--
-- Returns the beat time written (epoch seconds).
local now = math.floor(now_or(ARGV[7]))
redis.call("SADD", KEYS[1], ARGV[1])
redis.call("HSET", KEYS[2], "info", ARGV[2], "busy", ARGV[3], "quiet", ARGV[4], "beat", now)
if ARGV[8] ~= "" then
  redis.call("HSET", KEYS[2], "rss", ARGV[8])
end
redis.call("EXPIRE", KEYS[2], ARGV[5])
redis.call("DEL", KEYS[3])
-- In chunks: unpacking every slot at once overflows Lua's stack past a few
-- thousand busy slots, and the whole beat would fail.
for i = 9, #ARGV, 1000 do
  redis.call("HSET", KEYS[3], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
if #ARGV >= 10 then
  redis.call("EXPIRE", KEYS[3], ARGV[5])
end
if ARGV[6] == "1" then
  redis.call("SADD", KEYS[4], ARGV[1])
  redis.call("HSET", KEYS[5], ARGV[1], now)
end
return now
