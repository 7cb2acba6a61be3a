-- Fragments: none
-- Cancel a job by jid: remember it in NS:cancelled (scored by when the
-- entry may be forgotten; older entries are trimmed here) and say so on
-- the wake channel, which every worker process listens to (cancel.rs): a
-- worker drops the job when it takes it, or stops it while it runs.
--
-- The set keeps the newest ARGV[5] entries at most (cancel.rs
-- REMEMBERED_MAX): a flood of cancels cannot grow it, or every worker's
-- memory of it, without bound.
--
-- KEYS[1] NS:cancelled (zset: jid -> forget-after, epoch seconds)
-- ARGV[1] the jid
-- ARGV[2] now (epoch seconds)
-- ARGV[3] forget-after (epoch seconds)
-- ARGV[4] the wake channel
-- ARGV[5] how many entries are kept at most
--
-- Returns 1 if the jid was not cancelled before, else 0.
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[2])
local new = redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
redis.call("ZREMRANGEBYRANK", KEYS[1], 0, -(tonumber(ARGV[5]) + 1))
redis.call("PUBLISH", ARGV[4], "cancel " .. ARGV[1])
return new
