-- Fragments (prepended, in this order): wake.lua, group.lua, group_lease.lua
-- Sharded by queue: push jobs handed over from the namespace's slot (the
-- outbox, see outbox.rs) onto their queue, each at most once. A hand-over
-- is repeated until its outbox entry is gone (by the process that made it,
-- or by any process's recovery pass after a crash), so each push first
-- sets its marker: a repeat finds the marker and pushes nothing.
--
-- KEYS[1]   {NS:<q>}:queue, or {NS:<q>}:queue@<level> for a priority level
--           other than the default, or a group's list (see groups.rs)
-- KEYS[2]   the jobs a group's backlog cap dropped, counted on the queue's
--           slot ({NS:<q>}:stat:backlog_dropped), KEYS[3] its day's count
--           (see Keys::queue_stat)
-- KEYS[4..6] with ARGV[9] "1": the queue's sequence holds, running
--           counts and parked groups ({NS:<q>}:group_holds, _running,
--           _parked): a sequence's retry comes back (see below)
-- KEYS[4..] (KEYS[7..] with ARGV[9] "1") {NS:<q>}:landed:<hand-over id>,
--           one per payload; or none: a direct push of every payload
--           (sharded by queue, a client's push of grouped jobs, whose
--           ring is on the queue's slot)
-- ARGV[1]   the wake channel (NS:wake; see wake.lua, prepended)
-- ARGV[2]   queue name
-- ARGV[3]   marker TTL (whole seconds)
-- ARGV[4]   the queue's ring (NS:groups:<q>) for a group's list, else ""
-- ARGV[5]   the group, or ""
-- ARGV[6]   NS:priorities, where a queue's first group lists it (group.lua),
--           or "" sharded by queue (the caller lists it first, on the
--           namespace's slot: list_queues.lua)
-- ARGV[7]   the queue's declared limits (NS:group_declared:<q>), or ""
--           when the jobs declare no limit for their group (group.lua)
-- ARGV[8]   the limits they declare, or ""
-- ARGV[9]   "1" when the payloads are sequence jobs (KEYS[4..6]), else ""
-- ARGV[10..] the payloads, aligned with the markers
--
-- Returns the number of jobs pushed (repeats are not counted).
--
-- A sequence's job whose jid holds its key (its retry, filed with
-- group_hold.lua) goes back at the head of its group, and the hold ends,
-- in the same step: the key's next job waits for it, as requeue_due.lua
-- does on one slot.
--
-- A group's backlog cap (group.lua): a direct push past it is refused
-- before anything is written (error BACKLOG <waiting> <cap> <group>), or
-- the group's oldest jobs make room (drop_oldest). A hand-over is a job
-- already accepted (its pusher checked the cap, see Client::check_backlogs):
-- it only makes room.
-- Fail before writing anything (a marker without its job would lose it).
local kind = redis.call("TYPE", KEYS[1])["ok"]
if kind ~= "list" and kind ~= "none" then
  return redis.error_reply("WRONGTYPE " .. KEYS[1] .. " is a " .. kind .. ", not a queue")
end
local pushed = 0
local dropped_stat, dropped_day = KEYS[2], KEYS[3]
if #KEYS == 3 then
  local n = #ARGV - 9
  local refused = backlog_refusal(KEYS[1], ARGV[5], ARGV[8], n)
  if refused then
    return refused
  end
  local length = 0
  for first = 10, #ARGV, 1000 do
    length = redis.call("LPUSH", KEYS[1], unpack(ARGV, first, math.min(first + 999, #ARGV)))
  end
  wake_if_was_empty(ARGV[1], ARGV[2], length, n)
  enter_group(ARGV[4], ARGV[5], ARGV[7], ARGV[8], length, n, ARGV[6], ARGV[1], ARGV[2])
  trim_backlog(KEYS[1], ARGV[8], length, dropped_stat, dropped_day)
  return n
end
local sequence = ARGV[9] == "1"
local first_marker = sequence and 7 or 4
for i = first_marker, #KEYS do
  if redis.call("SET", KEYS[i], "1", "NX", "EX", ARGV[3]) then
    pushed = pushed + 1
    local payload = ARGV[10 + i - first_marker]
    local read, job = false, nil
    if sequence then
      read, job = pcall(cjson.decode, payload)
    end
    local jid = read and type(job) == "table" and type(job["jid"]) == "string" and job["jid"]
    local held = jid and redis.call("HEXISTS", KEYS[4], jid) == 1
    local length = redis.call(held and "RPUSH" or "LPUSH", KEYS[1], payload)
    wake_if_was_empty(ARGV[1], ARGV[2], length, 1)
    enter_group(ARGV[4], ARGV[5], ARGV[7], ARGV[8], length, 1, ARGV[6], ARGV[1], ARGV[2])
    if held then
      end_group_lease(KEYS[4], jid, KEYS[5], KEYS[6], ARGV[4], ARGV[5], ARGV[1], ARGV[2])
    end
    trim_backlog(KEYS[1], ARGV[8], length, dropped_stat, dropped_day)
  end
end
return pushed
