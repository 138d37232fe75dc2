-- Commit one pipeline batch exactly once: sink writes, committed-batch marker, the pipeline
-- group's position (XGROUP SETID ... ENTRIESREAD) and the checkpoint record.
-- KEYS[1] = checkpoint record hash, KEYS[2] = checkpoint index zset, KEYS[3] = checkpoint meta hash
-- KEYS[4] = sink marker hash (sink -> last committed batch id), KEYS[5] = commit journal hash
-- KEYS[6 .. 5+P] = partition streams to ack, KEYS[6+P .. 5+2P] = their commit frontier hashes
-- KEYS[6+2P .. 5+2P+O] = output hashes, then S stage hashes (fields "<output index>|<field>")
-- ARGV[1] = sink, ARGV[2] = batch id, ARGV[3] = run id, ARGV[4] = now (epoch ms)
-- ARGV[5] = records, ARGV[6] = end offsets (JSON {partition: id}), ARGV[7] = group
-- ARGV[8] = P, ARGV[9] = O, ARGV[10] = S, ARGV[11] = pipeline, ARGV[12] = topic
-- ARGV[13] = '1' when the batch's writes went through the commit journal (commit_seal.lua,
--   commit_apply.lua: then O = S = 0 and no triples; the journal must name this batch with
--   every chunk applied, and is deleted here), '0' for writes applied here (inline)
-- ARGV[14] = commit frontier encoding: 'plain' or 'kryo' (MQConfig.encoding java-kryo:
--   what Java's housekeeper decodes), '' to leave the frontier alone
-- ARGV[15 .. 14+P] = end id per acked partition (0-0: unchanged)
-- ARGV[15+P ..] = triples (output index 1..O, field, integer increment)
-- Returns 1 when committed, 0 when the marker shows the batch was committed already
-- (its stage hashes are deleted either way), {'open', batch id} when the journal holds
-- another batch's commit (inline) or not this one, fully applied (journaled), or
-- {'missing', key} when a stage hash is gone (evicted or expired: its increments would be
-- lost while the marker moves on; the batch must run again): nothing written in these cases.
--#include position
--#include ids
--#include kryo
--#include floor
--#include frontier
local batch = tonumber(ARGV[2])
local p = tonumber(ARGV[8])
local journaled = ARGV[13] == '1'
-- a journal sealed before the encoding was an argument has its P end ids right after ARGV[13]
local ends, mode = 14, 'plain'
if not (journaled and #ARGV == 13 + p) then ends, mode = 15, ARGV[14] end
local o = tonumber(ARGV[9])
local s = tonumber(ARGV[10])
local first_out = 6 + 2 * p
local first_stage = first_out + o
local committed = tonumber(redis.call('HGET', KEYS[4], ARGV[1]) or '-1')
if committed >= batch then
  for i = first_stage, first_stage + s - 1 do
    redis.call('UNLINK', KEYS[i])
  end
  return 0
end
local open = redis.call('HMGET', KEYS[5], 'batch', 'next', 'groups')
if journaled then
  if open[1] ~= ARGV[2] or open[2] ~= open[3] then return {'open', open[1] or ''} end
  redis.call('DEL', KEYS[5])
elseif open[1] then
  return {'open', open[1]}
end
for k = first_stage, first_stage + s - 1 do
  -- every stage hash holds at least one field: one that does not exist is lost
  if redis.call('EXISTS', KEYS[k]) == 0 then return {'missing', KEYS[k]} end
end
-- 1. the batch's writes (inline)
local i = ends + p
while i + 2 <= #ARGV do
  redis.call('HINCRBY', KEYS[first_out + tonumber(ARGV[i]) - 1], ARGV[i + 1], ARGV[i + 2])
  i = i + 3
end
for k = first_stage, first_stage + s - 1 do
  local staged = redis.call('HGETALL', KEYS[k])
  for j = 1, #staged, 2 do
    local sep = string.find(staged[j], '|', 1, true)
    if sep then
      local idx = tonumber(string.sub(staged[j], 1, sep - 1))
      redis.call('HINCRBY', KEYS[first_out + idx - 1], string.sub(staged[j], sep + 1), staged[j + 1])
    end
  end
  redis.call('UNLINK', KEYS[k])
end
-- 2. the marker
redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
-- 3. the pipeline group's position, with ENTRIESREAD so XINFO lag stays exact where that is
-- cheap: at most 250 entries counted in all, shared by the partitions in turn (each costs
-- Redis its reading and Lua its copy, ~5 us for an entry of six fields: a topic of many
-- partitions far behind its end would otherwise hold Redis for milliseconds per partition)
local acked = 0
local count_budget = 250
for k = 1, p do
  local stream = KEYS[5 + k]
  local id = ARGV[ends - 1 + k]
  if id ~= '0-0' and redis.call('EXISTS', stream) == 1 then
    count_budget = count_budget - set_position(stream, ARGV[7], id, count_budget)
    set_frontier(stream, KEYS[5 + p + k], ARGV[7], id, mode)
    acked = acked + 1
  end
end
-- 4. the checkpoint record
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'in_progress' or status == 'restored' then
  redis.call('HINCRBY', KEYS[3], 'in_progress', -1)
elseif not status then
  redis.call('HSET', KEYS[1], 'pipeline', ARGV[11], 'topic', ARGV[12], 'sink', ARGV[1],
    'batch_id', ARGV[2], 'trigger_at_ms', ARGV[4], 'restored', '0')
  redis.call('HINCRBY', KEYS[3], 'triggered', 1)
end
redis.call('ZADD', KEYS[2], batch, ARGV[2])
redis.call('HSET', KEYS[1], 'status', 'completed', 'run_id', ARGV[3], 'committed_at_ms', ARGV[4],
  'records', ARGV[5], 'end_offsets', ARGV[6], 'sink_committed', '1', 'acked', ARGV[5],
  'acked_partitions', acked, 'failure_reason', '')
redis.call('HINCRBY', KEYS[3], 'completed', 1)
redis.call('HSET', KEYS[3], 'last_completed_id', ARGV[2], 'last_completed_at_ms', ARGV[4],
  'end_offsets', ARGV[6])
return 1
