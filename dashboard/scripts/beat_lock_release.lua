-- KEYS[1] = the beat leader lock of the console store (opsdash:beat-leader)
-- ARGV[1] = the token of the beat that holds it
-- Deletes the lock only while the caller holds it (a beat stopping hands over at once).
-- Returns 1 released, 0 not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
