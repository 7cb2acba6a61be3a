-- Fragments (prepended, in this order): flow_index.lua
-- Sharded by queue: what a replacing push writes on the namespace's slot
-- after its job was pushed or replaced on its queue's (push_replace.lua
-- with ARGV[18] "1"; see flow.rs): the key's entry in the index of flow
-- keys, and the status record of the job that will run. (A crash between
-- the two steps leaves the key unlisted until its next push, and the job
-- without a record until its worker writes one.)
--
-- KEYS[1] NS:flow_keys (see flow_index.lua)
-- ARGV[1] the key's member of NS:flow_keys
-- ARGV[2] when the key's state expires (epoch seconds)
-- ARGV[3] now (epoch seconds, the fleet's clock)
-- ARGV[4] the prefix of the status record's key (NS:result:, "" for none)
-- ARGV[5] the jid that will run (the push's answer)
-- ARGV[6], ARGV[7] the record's head and rest around its jid
-- ARGV[8] how long the record lasts (seconds)
--
-- Returns 1.
list_flow_key(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
keep_result(ARGV[4], ARGV[5], ARGV[6], ARGV[7], "", ARGV[8], 0, nil)
return 1
