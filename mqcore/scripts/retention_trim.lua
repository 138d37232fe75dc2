-- One bounded retention round on one partition stream, never past a group's unread entries.
-- KEYS[1] = partition stream
-- ARGV[1] = MAXLEN to keep ('' = no length rule)
-- ARGV[2] = MINID of the age rule: entries below it are old enough to go ('' = no age rule)
-- ARGV[3] = '1' to delete entries every group has consumed (read and acked), else '0'
-- ARGV[4] = entries per round (bounds the work: XRANGE COUNT ARGV[4]+1, XTRIM of at most ARGV[4])
-- ARGV[5] = '1' to only plan (delete nothing)
-- ARGV[6..] = groups an operator opted out (their unread entries may go)
-- Returns {deleted, cut, held_by, wanted, refs}: entries deleted (or that would be), the
-- MINID used ('' = none), the group whose unread entries stopped the round ('' = none),
-- the entries the rules wanted gone in this round before any group held them back, and
-- the out-of-line payload references (x-payload-hash-ref) of the entries deleted.
-- A group's floor: its lowest pending id, or the id after its last-delivered id.
local key = KEYS[1]
local per_round = tonumber(ARGV[4])
local ignored = {}
for i = 6, #ARGV do ignored[ARGV[i]] = true end

--#include ids

if redis.call('EXISTS', key) == 0 then return {0, '', '', 0, {}} end
local page = redis.call('XRANGE', key, '-', '+', 'COUNT', per_round + 1)
if #page == 0 then return {0, '', '', 0, {}} end
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

-- the floor of every group that was not opted out: the lowest holds the trim back; the
-- consumed rule wants what the furthest group consumed, so the report names the holder
local floor, holder, furthest = nil, '', nil
local groups = redis.call('XINFO', 'GROUPS', key)
for _, g in ipairs(groups) do
  local f = {}
  for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
  local gfloor = id_after(f['last-delivered-id'])
  if tonumber(f['pending']) > 0 then
    local low = redis.call('XPENDING', key, f['name'])[2]
    if low and id_less(low, gfloor) then gfloor = low end
  end
  if not ignored[f['name']] then
    if floor == nil or id_less(gfloor, floor) then floor, holder = gfloor, f['name'] end
    if furthest == nil or id_less(furthest, gfloor) then furthest = gfloor end
  end
end
if ARGV[3] == '1' and furthest ~= nil then want(furthest) end
if cut == nil then return {0, '', '', 0, {}} end
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
if n == 0 then return {0, cut, held, wanted, {}} end
if ARGV[5] == '1' then return {n, cut, held, wanted, {}} end
-- payload keys of the entries going (the caller checks each names this partition's prefix)
local refs = {}
for i = 1, n do
  local fields = page[i][2]
  for j = 1, #fields, 2 do
    if fields[j] == 'headers' then
      local ok, headers = pcall(cjson.decode, fields[j + 1])
      if ok and type(headers) == 'table' and type(headers['x-payload-hash-ref']) == 'string' then
        refs[#refs + 1] = headers['x-payload-hash-ref']
      end
    end
  end
end
return {redis.call('XTRIM', key, 'MINID', '=', cut), cut, held, wanted, refs}
