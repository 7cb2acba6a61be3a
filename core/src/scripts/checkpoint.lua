-- Fragments: none
-- A running job's checkpoint (long_jobs/): its payload, now carrying the
-- cursor it resumes from, replaces the one in its in-progress record, but
-- only while that record holds it: a job settled, recovered or given back
-- since is not brought back by a late write.
--
-- KEYS[1]  NS:in_progress:<identity> (hash; {NS:<q>}:… sharded by queue)
-- ARGV[1]  the delivery's token (its field in KEYS[1])
-- ARGV[2]  the payload with its cursor
--
-- Returns 1 if written, 0 if the job was no longer held.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
