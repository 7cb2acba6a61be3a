-- Fragments: none
-- Send `quiet` or `stop` to one process so it cannot be missed: the command
-- is queued on the process's signal list (which the process drains right
-- after it subscribes, and on every message) and then published as a
-- wake-up. A publish alone is lost when the process has not subscribed yet
-- (just started) or is resubscribing after a lost connection.
--
-- KEYS[1] NS:signals:<identity> (list; Sidekiq's layout: <identity>-signals)
-- ARGV[1] NS:signal:<identity> (pub/sub channel)
-- ARGV[2] "quiet" | "stop" (Sidekiq's layout: "TSTP" | "TERM", what a
--         Sidekiq process, which may be the one signalled, obeys)
-- ARGV[3] TTL of the list (seconds): a process that never comes back must
--         not leave it behind
-- ARGV[4] "RPUSH" (taken with LPOP), or "LPUSH" in Sidekiq's layout, whose
--         processes take with RPOP: first sent, first taken either way
--
-- Returns the number of subscribers the wake-up reached.
redis.call(ARGV[4] == "LPUSH" and "LPUSH" or "RPUSH", KEYS[1], ARGV[2])
redis.call("EXPIRE", KEYS[1], ARGV[3])
return redis.call("PUBLISH", ARGV[1], ARGV[2])
