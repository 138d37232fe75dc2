-- One bounded retention round on one stream, never past the retention floor.
-- KEYS[1] = the stream (a partition, or a topic's dead-letter stream)
-- KEYS[2] = the topic's payload index set
-- ARGV[1] = MAXLEN to keep ('' = no length rule)
-- ARGV[2] = MINID of the age rule: entries below it are old enough to go ('' = no age rule)
-- ARGV[3] = '1' to delete entries every group has consumed (read and acked), else '0'
-- ARGV[4] = entries per round (bounds the work: XRANGE COUNT ARGV[4]+1, XTRIM of at most ARGV[4])
-- ARGV[5] = '1' to only plan (delete nothing)
-- ARGV[6] = payload prefix: the out-of-line payload key a deleted entry owns under it is
--           unlinked with the entry ('' = unlink none: a Java service shares the payload keys)
-- ARGV[7] = '1' when ARGV[6] is the topic's prefix (any partition: a dead-letter stream)
-- ARGV[8..] = groups an operator opted out (their unread entries may go)
-- Returns {deleted, cut, held_by, wanted, unlinked}: entries deleted (or that would be), the
-- MINID used ('' = none), the group whose floor stopped the round ('' = none), the entries
-- the rules wanted gone in this round before any group held them back, and the payload keys
-- unlinked. The cut never passes the retention floor (lib/floor.lua) of the groups not
-- opted out.
local key = KEYS[1]
local per_round = tonumber(ARGV[4])
local ignored = {}
for i = 8, #ARGV do ignored[ARGV[i]] = true end

--#include ids
--#include headers
--#include floor
--#include payloads

if redis.call('EXISTS', key) == 0 then return {0, '', '', 0, 0} end
local page = redis.call('XRANGE', key, '-', '+', 'COUNT', per_round + 1)
if #page == 0 then return {0, '', '', 0, 0} end
-- the round's bound: at most per_round entries (those below the (per_round+1)th id)
local bound = nil
if #page > per_round then bound = page[per_round + 1][1] end

local cut = nil -- rules: delete entries below cut
local beyond = false -- the length rule wants more than this round's page
local function want(id)
  if id ~= nil and (cut == nil or id_less(cut, id)) then cut = id end
end
if ARGV[1] ~= '' then
  local excess = redis.call('XLEN', key) - tonumber(ARGV[1])
  if excess > 0 then
    if excess < #page then
      want(page[excess + 1][1])
    else -- the rule cuts past this round's page: at least up to its end
      beyond = true
      want(bound or id_after(page[#page][1]))
    end
  end
end
if ARGV[2] ~= '' then want(ARGV[2]) end

-- the lowest floor holds the trim back; the consumed rule wants what the furthest group
-- consumed, so the report names the holder
local floor, holder, furthest = partition_floor(key, ignored)
if ARGV[3] == '1' and furthest ~= nil then want(furthest) end
if cut == nil then return {0, '', '', 0, 0} end
-- a group holds the rules back when its floor is below where they want to cut
local held = ''
if floor ~= nil and (id_less(floor, cut) or (beyond and not id_less(cut, floor))) then held = holder end
if bound ~= nil and id_less(bound, cut) then cut = bound end

local function below(id)
  local n = 0
  for _, e in ipairs(page) do
    if id_less(e[1], id) then n = n + 1 else break end
  end
  return n
end
local wanted = below(cut)
if floor ~= nil and id_less(floor, cut) then cut = floor end
local n = below(cut)
if n == 0 then return {0, cut, held, wanted, 0} end
if ARGV[5] == '1' then return {n, cut, held, wanted, 0} end
-- the payload keys the entries going own go with them
local unlinked = 0
for i = 1, n do
  unlinked = unlinked + unlink_payload(entry_payload_ref(page[i][2], ARGV[6], ARGV[7] == '1'), KEYS[2])
end
return {redis.call('XTRIM', key, 'MINID', '=', cut), cut, held, wanted, unlinked}
