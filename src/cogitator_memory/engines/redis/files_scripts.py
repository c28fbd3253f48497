"""The Lua scripts of :class:`~cogitator_memory.engines.redis.files.RedisFiles`, one per file primitive.

Each runs atomically on the server, so a batch is written whole or not at all and the check that
no version holds a sequence already is never split from the write. The scripts share the thread
scripts' conventions (:class:`~cogitator_memory.engines.redis.scripts.LuaScript`): ``ARGV[1]`` is
the key prefix, ``ARGV[2]`` the TTL (files never expire, so it is unused), and every key a script
derives carries the prefix, whose hash tag puts it in the slot of the declared key on a cluster.

Key layout under the prefix ``P`` (``SEP`` is the character 0x1F, which scope keys use between
their parts and which no path holds):

``P file:<id>`` (hash)
    ``b`` (the version as JSON without its text), ``c`` (the text; absent for a deletion),
    ``sk`` (scope key), ``p`` (path), ``s`` (sequence), ``a`` (agent), ``e`` (the entry of its
    place, when it has one), ``rf`` (the path it was renamed from, when it was).
``P fchain:<scope key>SEP<path>`` (hash)
    Sequence -> version id: every version of one scope and path. A sequence already there
    refuses the batch (``MEMORY_FILE_CONFLICT``).
``P fheads:<scope key>`` (hash)
    Path -> the id of its head (the version of the highest sequence): what stands is read here,
    never from the chains.
``P fpaths:<scope key>`` (sorted set, every score 0)
    The scope's paths, in byte order, so a directory is one ``ZRANGEBYLEX`` range.
``P fscopes:<agent id>`` (set)
    The agent's scope keys that hold files, for ``within`` queries.
``P fentry:<entry id>``, ``P forigin:<scope key>SEP<path>`` (sets)
    The versions written after an entry, and those renamed from a path.

Reads answer a flat list: each version's JSON then its text (nil when left out or for a deletion).
"""

from __future__ import annotations

from .scripts import LuaScript

_FILES_HEADER = r"""
local SEP = '\31'
local function vkey(id) return P .. 'file:' .. id end
local function chain(sk, path) return P .. 'fchain:' .. sk .. SEP .. path end
local function heads(sk) return P .. 'fheads:' .. sk end
local function paths_of(sk) return P .. 'fpaths:' .. sk end
local function scopes_of(agent) return P .. 'fscopes:' .. agent end
local function by_entry(entry) return P .. 'fentry:' .. entry end
local function by_origin(sk, path) return P .. 'forigin:' .. sk .. SEP .. path end
-- The paths of a scope strictly under a directory.
local function under(sk, prefix)
  return redis.call('ZRANGEBYLEX', paths_of(sk), '[' .. prefix .. '/', '(' .. prefix .. '0')
end
local function at_or_under(path, prefix)
  return path == prefix or string.sub(path, 1, #prefix + 1) == prefix .. '/'
end
-- The four parts of a scope key: agent, user, project, thread ('' when unset).
local function parts(sk)
  local out, start = {}, 1
  while true do
    local i = string.find(sk, SEP, start, true)
    if not i then out[#out + 1] = string.sub(sk, start); return out end
    out[#out + 1] = string.sub(sk, start, i - 1)
    start = i + 1
  end
end
"""


def _script(name: str, body: str) -> LuaScript:
    return LuaScript(name, _FILES_HEADER + body)


# ARGV: P, TTL, then 10 values per version: id, agent, scope key, path, sequence, entry of its place
# (or ''), renamed from (or ''), body, has text ('1'/'0'), text. Answers {'ok'}, {'taken', id} or
# {'conflict', path, sequence}.
ADD_FILE_VERSIONS = _script(
    "add_file_versions",
    r"""
local W = 10
for o = 3, #ARGV, W do
  if redis.call('EXISTS', vkey(ARGV[o])) == 1 then return {'taken', ARGV[o]} end
  if redis.call('HEXISTS', chain(ARGV[o + 2], ARGV[o + 3]), ARGV[o + 4]) == 1 then
    return {'conflict', ARGV[o + 3], ARGV[o + 4]}
  end
end
for o = 3, #ARGV, W do
  local id, agent, sk, path, seq = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3], ARGV[o + 4]
  local entry, origin, body = ARGV[o + 5], ARGV[o + 6], ARGV[o + 7]
  local fields = {'b', body, 'sk', sk, 'p', path, 's', seq, 'a', agent}
  if ARGV[o + 8] == '1' then fields[#fields + 1] = 'c'; fields[#fields + 1] = ARGV[o + 9] end
  if entry ~= '' then
    fields[#fields + 1] = 'e'; fields[#fields + 1] = entry
    redis.call('SADD', by_entry(entry), id)
  end
  if origin ~= '' then
    fields[#fields + 1] = 'rf'; fields[#fields + 1] = origin
    redis.call('SADD', by_origin(sk, origin), id)
  end
  redis.call('HSET', vkey(id), unpack(fields))
  redis.call('HSET', chain(sk, path), seq, id)
  local current = redis.call('HGET', heads(sk), path)
  if not current or tonumber(redis.call('HGET', vkey(current), 's')) < tonumber(seq) then
    redis.call('HSET', heads(sk), path, id)
  end
  redis.call('ZADD', paths_of(sk), 0, path)
  redis.call('SADD', scopes_of(agent), sk)
end
return {'ok'}
""",
)

# ARGV: P, TTL, the query as JSON: {"scopes": [...], "paths": [...] or absent, "prefix": absent or a
# path, "content": true/false}. Answers the heads as a flat list (JSON, text, JSON, text...).
FIND_FILE_HEADS = _script(
    "find_file_heads",
    r"""
local q = cjson.decode(ARGV[3])
local out = {}
local function emit(id)
  local v = redis.call('HMGET', vkey(id), 'b', 'c')
  out[#out + 1] = v[1]
  if q.content then out[#out + 1] = v[2] else out[#out + 1] = false end
end
local function emit_paths(sk, list)
  for i = 1, #list, 500 do
    local ids = redis.call('HMGET', heads(sk), unpack(list, i, math.min(i + 499, #list)))
    for _, id in ipairs(ids) do if id then emit(id) end end
  end
end
for _, sk in ipairs(q.scopes) do
  if q.paths then
    emit_paths(sk, q.paths)
  elseif q.prefix then
    local id = redis.call('HGET', heads(sk), q.prefix)
    if id then emit(id) end
    emit_paths(sk, under(sk, q.prefix))
  else
    local all = redis.call('HVALS', heads(sk))
    for _, id in ipairs(all) do emit(id) end
  end
end
return out
""",
)

# ARGV: P, TTL, the query as JSON: {"agent", "scopes" or "within": [user, project, thread], "paths",
# "prefix", "entries", "origins", "ids"} (absent: any). Answers the versions as a flat list.
QUERY_FILE_VERSIONS = _script(
    "query_file_versions",
    r"""
local q = cjson.decode(ARGV[3])
local function set_of(list)
  if list == nil then return nil end
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end
local scopes = q.scopes
if scopes == nil then
  scopes = {}
  for _, sk in ipairs(redis.call('SMEMBERS', scopes_of(q.agent))) do
    local p = parts(sk)
    if (q.within[1] == '' or p[2] == q.within[1]) and (q.within[2] == '' or p[3] == q.within[2])
      and (q.within[3] == '' or p[4] == q.within[3]) then
      scopes[#scopes + 1] = sk
    end
  end
end
local scope_set, paths, entries, origins, ids = set_of(scopes), set_of(q.paths), set_of(q.entries), set_of(q.origins), set_of(q.ids)
local candidates = {}
local function add_all(list) for _, id in ipairs(list) do candidates[#candidates + 1] = id end end
if q.ids then
  add_all(q.ids)
elseif q.entries then
  for _, entry in ipairs(q.entries) do add_all(redis.call('SMEMBERS', by_entry(entry))) end
else
  for _, sk in ipairs(scopes) do
    if q.paths then
      for _, path in ipairs(q.paths) do add_all(redis.call('HVALS', chain(sk, path))) end
    elseif q.prefix then
      add_all(redis.call('HVALS', chain(sk, q.prefix)))
      for _, path in ipairs(under(sk, q.prefix)) do add_all(redis.call('HVALS', chain(sk, path))) end
    elseif q.origins then
      for _, origin in ipairs(q.origins) do add_all(redis.call('SMEMBERS', by_origin(sk, origin))) end
    else
      for _, path in ipairs(redis.call('ZRANGE', paths_of(sk), 0, -1)) do add_all(redis.call('HVALS', chain(sk, path))) end
    end
  end
end
local out, seen = {}, {}
for _, id in ipairs(candidates) do
  if not seen[id] then
    seen[id] = true
    local v = redis.call('HMGET', vkey(id), 'a', 'sk', 'p', 'e', 'rf', 'b', 'c')
    if v[1] == q.agent and scope_set[v[2]] and (paths == nil or paths[v[3]])
      and (q.prefix == nil or at_or_under(v[3], q.prefix)) and (entries == nil or (v[4] and entries[v[4]]))
      and (origins == nil or (v[5] and origins[v[5]])) and (ids == nil or ids[id]) then
      out[#out + 1] = v[6]
      out[#out + 1] = v[7]
    end
  end
end
return out
""",
)

# ARGV: P, TTL, then version ids. Answers the versions that exist as a flat list, whatever their agent.
GET_FILE_VERSIONS = _script(
    "get_file_versions",
    r"""
local out = {}
for o = 3, #ARGV do
  local v = redis.call('HMGET', vkey(ARGV[o]), 'b', 'c')
  if v[1] then
    out[#out + 1] = v[1]
    out[#out + 1] = v[2]
  end
end
return out
""",
)

# ARGV: P, TTL, then (id, body, text) per version. Writes the redacted body and text of each version
# that exists and holds a text; answers the ids written.
REDACT_FILE_VERSIONS = _script(
    "redact_file_versions",
    r"""
local done = {}
for o = 3, #ARGV, 3 do
  local key = vkey(ARGV[o])
  if redis.call('HEXISTS', key, 'c') == 1 then
    redis.call('HSET', key, 'b', ARGV[o + 1], 'c', ARGV[o + 2])
    done[#done + 1] = ARGV[o]
  end
end
return done
""",
)

SCRIPTS = (ADD_FILE_VERSIONS, FIND_FILE_HEADS, QUERY_FILE_VERSIONS, GET_FILE_VERSIONS, REDACT_FILE_VERSIONS)

__all__ = [
    "ADD_FILE_VERSIONS",
    "FIND_FILE_HEADS",
    "GET_FILE_VERSIONS",
    "QUERY_FILE_VERSIONS",
    "REDACT_FILE_VERSIONS",
    "SCRIPTS",
]
