/**
 * A process is granted at most this share of what the window has left (at least what its first
 * waiting request needs), so the grants shrink as the window fills, to one request near the
 * limit, and what one process holds unused never locks out another for long (decisions 7.10).
 */
export const SHARE_OF_LEFT = 4;

/**
 * One atomic step on a key's window. KEYS[1] is the window's counter; ARGV: limit, owed, min,
 * want, expireAt (ms since the epoch), share. The owed counts (admitted while Redis was away) are
 * added whatever the total; then at most `want` is granted, at least `min` or nothing, never more
 * than is left nor more than a `share`-th of it beyond `min`. Answers {granted, total after}.
 */
export const TAKE_SCRIPT = `
local limit = tonumber(ARGV[1])
local owed = tonumber(ARGV[2])
local min = tonumber(ARGV[3])
local want = tonumber(ARGV[4])
local taken = tonumber(redis.call('GET', KEYS[1]) or '0')
local left = limit - taken - owed
local granted = 0
if want > 0 and left > 0 and left >= min then
  granted = math.min(want, left, math.max(min, math.floor(left / tonumber(ARGV[6]))))
end
if owed + granted > 0 then
  taken = redis.call('INCRBY', KEYS[1], owed + granted)
  redis.call('PEXPIREAT', KEYS[1], ARGV[5])
end
return {granted, taken}
`;

/**
 * Gives back ARGV[1] unused requests of the window KEYS[1], never below zero, and nothing to a
 * window that has expired (a counter made now would outlive it). Answers the total after.
 */
export const GIVE_BACK_SCRIPT = `
local taken = tonumber(redis.call('GET', KEYS[1]) or '0')
if taken <= 0 then return 0 end
return redis.call('DECRBY', KEYS[1], math.min(tonumber(ARGV[1]), taken))
`;
