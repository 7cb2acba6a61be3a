-- Fragments: none
-- Send `quiet` or `stop` to one process so it cannot be missed: the command
-- is queued on the process's signal list (which the process drains right
-- after it subscribes, and on every message) and then published as a
-- wake-up. A publish alone is lost when the process has not subscribed yet
-- (just started) or is resubscribing after a lost connection.
--
-- KEYS[1] NS:signals:<identity> (list)
-- ARGV[1] NS:signal:<identity> (pub/sub channel)
-- ARGV[2] "quiet" | "stop"
-- ARGV[3] TTL of the list (seconds): a process that never comes back must
--         not leave it behind
--
-- Returns the number of subscribers the wake-up reached.
redis.call("RPUSH", KEYS[1], ARGV[2])
redis.call("EXPIRE", KEYS[1], ARGV[3])
return redis.call("PUBLISH", ARGV[1], ARGV[2])
