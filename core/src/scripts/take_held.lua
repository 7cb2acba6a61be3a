-- Fragments (prepended, in this order): take_fields.lua
-- Sharded by queue: take acknowledged jobs off one queue's in-progress hash
-- of this process (on the queue's slot). Counting, history, locks and
-- results follow on the namespace's slot (ack.lua), for the jobs that were
-- still held: one no longer there was put back on its queue by shutdown
-- or recovery while it ran, and its copy will run again.
--
-- KEYS[1]   {NS:<q>}:in_progress:<identity> (hash)
-- ARGV[1..] the jobs' delivery tokens (their fields in KEYS[1])
--
-- Returns the tokens that were not held (take_fields.lua, prepended).
local missing = {}
for _, i in ipairs(take_fields(KEYS[1], 1, #ARGV)) do
  missing[#missing + 1] = ARGV[i]
end
return missing
