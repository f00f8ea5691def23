// The Lua scripts of the Redis driver: every step that touches several keys or must not be
// interrupted (dead-lettering, claiming with delivery counts, requeue, GC). Each is registered
// with ioredis `defineCommand`, which sends `EVALSHA` and falls back to `EVAL` on `NOSCRIPT`.
// Every key a script touches shares the hash tag of its KEYS[1], so they run in Redis Cluster.
import { DEAD_LETTER_FIELDS } from '../entry-fields.js';

/** Stream ids compared as (ms, seq) pairs; shared by scripts that need it. */
const ID_LESS = `
local function idless(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, bm = tonumber(am), tonumber(bm)
  if am ~= bm then return am < bm end
  return tonumber(as) < tonumber(bs)
end
`;

/**
 * Moves one entry to the dead-letter stream with why, who and when, and acknowledges it. With
 * `maxlen` > 0 the oldest dead letters beyond it are deleted; returns how many.
 */
const DEAD_LETTER = `
local function deadletter(stream, dead, errors, group, id, consumer, deliveries, reason, now, maxlen)
  local fields = {}
  local e = redis.call('XRANGE', stream, id, id)
  if e[1] then fields = e[1][2] end
  local ekey = stream .. ' ' .. group .. ' ' .. id
  local last = redis.call('HGET', errors, ekey)
  if last then redis.call('HDEL', errors, ekey) end
  if reason == '' then reason = last or 'no error recorded' end
  local args = {}
  for i = 1, #fields do args[#args + 1] = fields[i] end
  for _, v in ipairs({'x-stream', stream, 'x-group', group, 'x-id', id, 'x-consumer', consumer,
                      'x-deliveries', tostring(deliveries), 'x-error', reason, 'x-time', tostring(now)}) do
    args[#args + 1] = v
  end
  redis.call('XADD', dead, '*', unpack(args))
  redis.call('XACK', stream, group, id)
  if maxlen > 0 then return redis.call('XTRIM', dead, 'MAXLEN', maxlen) end
  return 0
end
`;

/** The scripts by command name: keys count and Lua source. */
export const SCRIPTS = {
  /**
   * KEYS: stream, request list. ARGV: element. An RPC request: pushed to the list when the stream
   * of the same address exists (a server ever listened there), else dropped, as XADD NOMKSTREAM
   * drops it; returns the list's length, or nil when dropped.
   */
  tidingsRequest: {
    numberOfKeys: 2,
    lua: `if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('RPUSH', KEYS[2], ARGV[1])`,
  },

  /**
   * KEYS: live-server hash. ARGV: now, body. Copies a fanout cast into every live server's inbox
   * (same hash tag as the hash); servers past their expiry are removed with their inbox. A field
   * the driver could not have written (no expiry time, or not one of this topic's inboxes) is
   * removed from the hash and the key it names left alone.
   */
  tidingsFanout: {
    numberOfKeys: 1,
    lua: `local now = tonumber(ARGV[1])
local inboxes = string.sub(KEYS[1], 1, -9) .. ':fanout:'
local all = redis.call('HGETALL', KEYS[1])
local n = 0
for i = 1, #all, 2 do
  local inbox, expiry = all[i], tonumber(all[i + 1])
  if expiry == nil or string.sub(inbox, 1, #inboxes) ~= inboxes then
    redis.call('HDEL', KEYS[1], inbox)
  elseif expiry < now then
    redis.call('HDEL', KEYS[1], inbox)
    redis.call('UNLINK', inbox)
  elseif redis.call('XADD', inbox, 'NOMKSTREAM', '*', 'b', ARGV[2]) then
    n = n + 1
  end
end
return n`,
  },

  /**
   * KEYS: stream, dead letters, errors. ARGV: group, consumer, min idle ms, count, max deliveries, now,
   * dead letters' max length. Claims entries whose lease expired (or that were requeued) for this
   * consumer and returns them as {id, fields, deliveries}; one that was already delivered max times
   * is dead-lettered and returned as {id, {}, deliveries, 1, older dead letters deleted for it}.
   */
  tidingsClaim: {
    numberOfKeys: 3,
    lua: `${DEAD_LETTER}
local stream, group, me = KEYS[1], ARGV[1], ARGV[2]
local max, now, deadmax = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7] or '0')
local out = {}
local ok, pending = pcall(redis.call, 'XPENDING', stream, group, 'IDLE', ARGV[3], '-', '+', ARGV[4])
if not ok then return out end
for _, p in ipairs(pending) do
  local id, owner, n = p[1], p[2], p[4]
  if max > 0 and n >= max then
    local dropped = deadletter(stream, KEYS[2], KEYS[3], group, id, owner, n, '', now, deadmax)
    out[#out + 1] = {id, {}, n, 1, dropped}
  else
    local c = redis.call('XCLAIM', stream, group, me, ARGV[3], id)
    if c[1] then
      out[#out + 1] = {id, c[1][2], n + 1}
    end
  end
end
return out`,
  },

  /**
   * KEYS: stream, errors. ARGV: group, consumer, id, idle ms, error text.
   * Gives a leased entry back: still pending, with its idle time set so that a claim takes it
   * after the backoff. Nothing happens when another consumer owns it by now.
   */
  tidingsRequeue: {
    numberOfKeys: 2,
    lua: `local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if not p[1] or p[1][2] ~= ARGV[2] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'IDLE', ARGV[4], 'JUSTID')
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], KEYS[1] .. ' ' .. ARGV[1] .. ' ' .. ARGV[3], ARGV[5]) end
return 1`,
  },

  /** KEYS: stream. ARGV: group, consumer, ids... Extends the leases this consumer still holds. */
  tidingsExtend: {
    numberOfKeys: 1,
    lua: `local n = 0
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    n = n + 1
  end
end
return n`,
  },

  /**
   * KEYS: stream, dead letters, errors. ARGV: group, consumer, id, reason, now, dead letters' max
   * length. Dead-letters one entry; returns how many older dead letters were deleted for it.
   */
  tidingsDead: {
    numberOfKeys: 3,
    lua: `${DEAD_LETTER}
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
local n = 1
if p[1] then n = p[1][4] end
return deadletter(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[3], ARGV[2], n, ARGV[4], ARGV[5], tonumber(ARGV[6] or '0'))`,
  },

  /**
   * KEYS: dead letters, origin stream. ARGV: dead-letter id. Puts a dead letter's original fields
   * (those before the x-* metadata the dead-letter function appended last) back on its stream as a new entry and deletes the letter, in
   * one step. Returns 1, or 0 when the letter is gone.
   */
  tidingsReplay: {
    numberOfKeys: 2,
    lua: `local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if not e[1] then return 0 end
local fields, args = e[1][2], {}
local stop = #fields - ${2 * DEAD_LETTER_FIELDS.length}
if stop < 0 or fields[stop + 1] ~= 'x-stream' then return 0 end
for i = 1, stop, 2 do
  args[#args + 1] = fields[i]
  args[#args + 1] = fields[i + 1]
end
if #args == 0 then args = {'b', ''} end
redis.call('XADD', KEYS[2], '*', unpack(args))
redis.call('XDEL', KEYS[1], ARGV[1])
return 1`,
  },

  /**
   * KEYS: stream, pools-seen hash. ARGV: own group ('' for none), now, consumer ttl, pool ttl,
   * default group's max length (0 = none), default group's max age ms (0 = none).
   * GC of one stream: marks the own pool seen, drops pools unseen for pool ttl none of whose
   * consumers read or claimed within it (a member's late sweep does not drop its pool), removes
   * consumers idle past consumer ttl with nothing pending, then trims entries every group is done
   * with (below the oldest pending or undelivered entry of any group; never an unacked one of a
   * pool). The default group (store-and-forward for un-pooled listeners) holds entries back only
   * once an un-pooled listener joined it (a consumer, or a read position past 0-0): one the
   * notifiers created and nobody ever read does not pin what the pools are done with. Its backlog
   * is cut to the max age and (approximately, whole stream nodes) to the max length; the pools'
   * entries are never cut for it. Returns the pools left with no consumer but with entries they
   * have not read or acked (they hold back trimming), as [name, entries-behind, ...].
   */
  tidingsSweep: {
    numberOfKeys: 2,
    lua: `${ID_LESS}
local stream, seen = KEYS[1], KEYS[2]
local mine, now, cttl, pttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local dmax, dage = tonumber(ARGV[5] or '0'), tonumber(ARGV[6] or '0')
if redis.call('EXISTS', stream) == 0 then return {} end
if pttl > 0 and mine ~= '' then redis.call('HSET', seen, mine, now) end
local floor, others, dcut, hasdefault, idle = nil, nil, nil, false, {}
local function lower(a, b) if b == nil or (a ~= nil and idless(a, b)) then return a end return b end
for _, g in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
  local info = {}
  for i = 1, #g, 2 do info[g[i]] = g[i + 1] end
  local name = info['name']
  local consumers = {}
  for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', stream, name)) do
    local ci = {}
    for i = 1, #c, 2 do ci[c[i]] = c[i + 1] end
    table.insert(consumers, ci)
  end
  local keep = true
  if pttl > 0 and string.sub(name, 1, 5) == 'pool:' then
    local last = redis.call('HGET', seen, name)
    if not tonumber(last) then
      redis.call('HSET', seen, name, now)
    elseif now - tonumber(last) > pttl then
      -- A member that read (or claimed) within pool ttl is alive, even when its own sweep is late to mark the pool seen.
      local active = false
      for _, ci in ipairs(consumers) do if ci['idle'] <= pttl then active = true end end
      if active then
        redis.call('HSET', seen, name, now)
      else
        redis.call('XGROUP', 'DESTROY', stream, name)
        redis.call('HDEL', seen, name)
        keep = false
      end
    end
  end
  if keep then
    local left = #consumers
    for _, ci in ipairs(consumers) do
      if ci['pending'] == 0 and ci['idle'] > cttl then
        redis.call('XGROUP', 'DELCONSUMER', stream, name, ci['name'])
        left = left - 1
      end
    end
    local f = info['last-delivered-id']
    if info['pending'] > 0 then f = redis.call('XPENDING', stream, name)[2] end
    if name == 'default' then
      hasdefault = true
      if dage > 0 then dcut = string.format('%d-0', now - dage) end
      if info['consumers'] == 0 and info['pending'] == 0 and f == '0-0' then f = nil
      elseif dcut ~= nil and idless(f, dcut) then f = dcut end
    else
      others = lower(f, others)
    end
    floor = lower(f, floor)
    if string.sub(name, 1, 5) == 'pool:' and left == 0 then
      local behind = info['pending'] + #redis.call('XRANGE', stream, '(' .. info['last-delivered-id'], '+', 'COUNT', 1000)
      if behind > 0 then table.insert(idle, name); table.insert(idle, behind) end
    end
  end
end
-- Only a never-read default group, with a max age: what is older goes.
if floor == nil then floor = dcut end
if floor ~= nil and floor ~= '0-0' then redis.call('XTRIM', stream, 'MINID', '~', floor) end
if dmax > 0 and hasdefault then
  local over = redis.call('XLEN', stream) - dmax
  if over > 0 and others == nil then redis.call('XTRIM', stream, 'MAXLEN', '~', dmax)
  elseif over > 0 and others ~= '0-0' then redis.call('XTRIM', stream, 'MINID', '~', others, 'LIMIT', over) end
end
return idle`,
  },

  /**
   * KEYS: stream, request list. ARGV: group, consumer. An RPC server leaving the stream of its own
   * name (`<topic>.<server>`): it leaves the group, and when no consumer is left, every entry was
   * read and the request list of that name is empty, the stream goes too, so servers with unique
   * names (one per pod) leave nothing behind. A request sent afterwards is dropped (the stream is
   * its list's existence mark: `tidingsRequest`, XADD NOMKSTREAM), as one to a server that never ran.
   */
  tidingsLeave: {
    numberOfKeys: 2,
    lua: `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
pcall(redis.call, 'XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
if redis.call('LLEN', KEYS[2]) > 0 then return 0 end
local info, last = redis.call('XINFO', 'STREAM', KEYS[1]), nil
for i = 1, #info, 2 do
  if info[i] == 'last-generated-id' then last = info[i + 1] end
end
local groups = redis.call('XINFO', 'GROUPS', KEYS[1])
for _, g in ipairs(groups) do
  local gi = {}
  for i = 1, #g, 2 do gi[g[i]] = g[i + 1] end
  if gi['consumers'] > 0 or gi['pending'] > 0 or gi['last-delivered-id'] ~= last then return 0 end
end
redis.call('UNLINK', KEYS[1])
return 1`,
  },

  /**
   * KEYS: named servers' streams hash, live-server hash. ARGV: now, grace ms. GC of servers that
   * died without leaving (SIGKILL, lost host): a `<topic>.<server>` stream no server of that name
   * refreshed for `grace` past its expiry goes, with what nobody read in it; so do expired fanout
   * inboxes (fanout casts remove them too, but a topic may see none). A field the driver could not
   * have written (no expiry time, a key that is not one of this topic's) is dropped from its hash,
   * the key it names left alone. A named server's request list (`:req:` for `:rpc:`) goes with its
   * stream. Returns the streams removed.
   */
  tidingsReap: {
    numberOfKeys: 2,
    lua: `local now, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
local base = string.sub(KEYS[2], 1, -9)
local function gc(hash, prefix, after, list)
  local all, gone = redis.call('HGETALL', hash), {}
  for i = 1, #all, 2 do
    local key, expiry = all[i], tonumber(all[i + 1])
    if expiry == nil or string.sub(key, 1, #prefix) ~= prefix then
      redis.call('HDEL', hash, key)
    elseif expiry + after < now then
      redis.call('HDEL', hash, key)
      redis.call('UNLINK', key)
      if list then redis.call('UNLINK', list .. string.sub(key, #prefix + 1)) end
      table.insert(gone, key)
    end
  end
  return gone
end
local gone = gc(KEYS[1], base .. ':rpc:', grace, base .. ':req:')
gc(KEYS[2], base .. ':fanout:', 0, nil)
return gone`,
  },

  /**
   * KEYS: stream. ARGV: group, consumer, idle ms. A consumer leaving: what it still holds becomes
   * claimable at once by the other members; without anything pending it leaves the group.
   */
  tidingsRelease: {
    numberOfKeys: 1,
    lua: `local ok, mine = pcall(redis.call, 'XPENDING', KEYS[1], ARGV[1], '-', '+', 10000, ARGV[2])
if not ok then return 0 end
if #mine == 0 then
  redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
  return 0
end
for _, p in ipairs(mine) do
  redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, p[1], 'IDLE', ARGV[3], 'JUSTID')
end
return #mine`,
  },
} as const;

/** A script's command name. */
export type ScriptName = keyof typeof SCRIPTS;
