-- Where a Spark batch ends: for each partition, the id of the n-th entry after a start,
-- without sending the entries (the driver plans batches of at most maxRecordsPerTrigger).
-- KEYS[1..n] = partition streams of one topic
-- ARGV[1] = entries this call may step over in all (bounds its Redis time, ~1 µs each)
-- ARGV[2 + 3(i-1) ..] = per KEYS[i]: start id (exclusive), ceiling id (inclusive), entries wanted
-- Returns per key {last id reached ('' = none), entries stepped over, entries asked for}:
-- fewer stepped over than asked for means the ceiling was reached; keys past the call's
-- bound get {'', 0, 0} (not looked at: the caller asks again).
local budget = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS do
    local base = 2 + 3 * (i - 1)
    local want = tonumber(ARGV[base + 2])
    if budget <= 0 then
        out[i] = {'', 0, 0}
    else
        local take = math.min(want, budget)
        local rows = redis.call('XRANGE', KEYS[i], '(' .. ARGV[base], ARGV[base + 1], 'COUNT', take)
        budget = budget - #rows
        if #rows == 0 then
            out[i] = {'', 0, take}
        else
            out[i] = {rows[#rows][1], #rows, take}
        end
    end
end
return out
