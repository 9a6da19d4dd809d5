// SPDX-License-Identifier: Apache-2.0
// The server-side Lua scripts of the Redis transport. Each runs atomically,
// so a state change is never half done, whatever dies in between.
//
// Keys of a queue Q (docs/transports/redis.md):
//   Q             list: ready elements (envelope bytes or a header frame)
//   Q:bq:leases   sorted set: "<token>:<element>" scored with the lease deadline
//   Q:bq:delayed  sorted set: "<token>:<element>" scored with the due time
// A token is 32 lowercase hex characters, unique per reservation or delayed
// message, so the element starts at byte 34 of a member (Lua index 34) and
// identical elements stay distinct members. Times are the server's clock
// (TIME) in milliseconds, so the clocks of the clients never matter.
#pragma once

#include <string_view>

namespace babelqueue::redis_detail {

inline constexpr std::size_t kTokenLength = 32;

// KEYS: Q, Q:bq:leases, Q:bq:delayed
// ARGV: max, visibility ms, token base (24 hex), move limit, sweep (1 or 0)
// With sweep 1, first moves due delayed members and expired leases back to
// the end of Q (the client asks for it at least every 100 ms per queue, and
// whenever the previous claim found nothing). Then pops up to max elements
// and leases each as base..%08x(i)..':'..element.
// ARGV[6]: the horizon in ms (default an hour).
// Returns {0, element...}, or {ms until the next due time within the horizon,
// or -1} when nothing was popped, so a waiting receive knows when to look
// again. The due time is found by counting (ZCOUNT, a binary search over the
// horizon), never by reading a member: a member holds its whole element, and
// copying a 64 MB one on every empty claim made each take longer than a
// command timeout.
inline constexpr std::string_view kClaimScript = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[5] == '1' then
  local limit = tonumber(ARGV[4])
  for _, key in ipairs({KEYS[3], KEYS[2]}) do
    local due = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, limit)
    for _, member in ipairs(due) do
      redis.call('RPUSH', KEYS[1], string.sub(member, 34))
    end
    if #due > 0 then redis.call('ZREM', key, unpack(due)) end
  end
end
local popped = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if popped then
  local deadline = now + tonumber(ARGV[2])
  local leases = {}
  local out = {0}
  for i, element in ipairs(popped) do
    leases[#leases + 1] = deadline
    leases[#leases + 1] = ARGV[3] .. string.format('%08x', i) .. ':' .. element
    out[#out + 1] = element
  end
  redis.call('ZADD', KEYS[2], unpack(leases))
  return out
end
local horizon = tonumber(ARGV[6] or '3600000')
local next_due = -1
for _, key in ipairs({KEYS[3], KEYS[2]}) do
  if redis.call('ZCOUNT', key, '-inf', now + horizon) > 0 then
    local low, high = 0, horizon
    while low < high do
      local middle = math.floor((low + high) / 2)
      if redis.call('ZCOUNT', key, '-inf', now + middle) > 0 then high = middle else low = middle + 1 end
    end
    if next_due < 0 or low < next_due then next_due = low end
  end
end
return {next_due}
)lua";

// KEYS: Q, Q:bq:leases, Q:bq:delayed   ARGV: lease member, delay ms
// Only while the lease is still held: ends it and puts the element back at
// the end of Q, or into the delayed set when delay > 0. Returns 1, or 0 when
// the lease was no longer held (nothing changed).
inline constexpr std::string_view kReleaseScript = R"lua(
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
local delay = tonumber(ARGV[2])
if delay <= 0 then
  redis.call('RPUSH', KEYS[1], string.sub(ARGV[1], 34))
else
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[3], now + delay, ARGV[1])
end
return 1
)lua";

// KEYS: Q:bq:leases   ARGV: lease member, lease ms
// Only while the lease is still held: its deadline becomes now + lease.
// Returns 1, or 0 when it was no longer held.
inline constexpr std::string_view kExtendScript = R"lua(
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
)lua";

// KEYS: Q:bq:delayed   ARGV: member, delay ms
// A delayed publish: the member waits until now + delay.
inline constexpr std::string_view kDelayScript = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
)lua";

}  // namespace babelqueue::redis_detail
