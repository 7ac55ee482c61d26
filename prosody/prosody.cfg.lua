-- Prosody for spade_memory: the same file serves docker-compose and the
-- integration tests. Paths, ports and rates come from the environment (Prosody
-- reads ENV_NAME as $NAME); prosody/env.sh sets the defaults, start.sh the
-- certificate and the accounts.
--
-- Prosody authenticates every client and stamps each stanza with the sender's
-- real JID: with it, the owner of a memory (the sender's bare JID) can be trusted.

run_as_root = true  -- containers and CI run as root; start.sh runs it in the foreground (-F)
pidfile = ENV_PROSODY_DATA .. "/prosody.pid"
data_path = ENV_PROSODY_DATA
certificates = ENV_PROSODY_DATA .. "/certs"

interfaces = { ENV_PROSODY_INTERFACE }
c2s_ports = { tonumber(ENV_PROSODY_C2S_PORT) }

local modules = {
    "roster"; "saslauth"; "tls"; "disco"; "ping"; "register";
    "presence"; "message"; "iq"; "posix"; "limits";
}
-- Federation (server-to-server) is off unless PROSODY_S2S=true: then servers of other
-- domains connect on port 5269 of PROSODY_INTERFACE, and this one to theirs (found by
-- DNS: SRV _xmpp-server._tcp.DOMAIN, else DOMAIN's address). Each side proves its
-- domain by dialback (XEP-0220) over TLS, and a stanza is accepted from a link only
-- with a sender of a domain that link proved; the memory agents serve a remote account
-- only in the spaces granted to it or its domain.
if ENV_PROSODY_S2S == "true" then
    table.insert(modules, "dialback")
    s2s_interfaces = { ENV_PROSODY_INTERFACE }
    s2s_require_encryption = true
else
    modules_disabled = { "s2s" }  -- one server
end
-- PROSODY_MODULES: more modules to load (space-separated), from PROSODY_PLUGINS (a
-- folder) when they are not Prosody's own.
for name in (ENV_PROSODY_MODULES or ""):gmatch("%S+") do
    table.insert(modules, name)
end
if (ENV_PROSODY_PLUGINS or "") ~= "" then
    plugin_paths = { ENV_PROSODY_PLUGINS }
end
modules_enabled = modules

-- A client may send at most PROSODY_C2S_RATE (32 kB/s by default, about forty
-- memory requests a second): Prosody stops reading a faster connection, so one
-- flooding client cannot bury the memory agents' queue under everyone else's
-- requests. The memory agents are not limited (their replies are their traffic),
-- nor are the bare JIDs listed in PROSODY_UNLIMITED (space-separated: agents you
-- trust to write a lot, such as a bulk importer).
limits = { c2s = { rate = ENV_PROSODY_C2S_RATE; burst = "2s" } }
local unlimited = {
    "base-memory@" .. ENV_PROSODY_DOMAIN;
    "interaction-memory@" .. ENV_PROSODY_DOMAIN;
    "beads-sync@" .. ENV_PROSODY_DOMAIN;
}
for jid in (ENV_PROSODY_UNLIMITED or ""):gmatch("%S+") do
    table.insert(unlimited, jid)
end
unlimited_jids = unlimited

-- In-band registration is closed: accounts are created with prosodyctl
-- (start.sh's PROSODY_ACCOUNTS, or `sh prosody/prosodyctl.sh register NAME DOMAIN
-- PASSWORD`). PROSODY_ALLOW_REGISTRATION=true opens it, for a private test server.
allow_registration = (ENV_PROSODY_ALLOW_REGISTRATION == "true")
registration_throttle_max = 100000
min_seconds_between_registrations = 0

authentication = "internal_hashed"
storage = "internal"
-- slixmpp (SPADE's XMPP library) refuses to log in without TLS.
c2s_require_encryption = true

log = { { levels = { min = ENV_PROSODY_LOG_LEVEL }; to = "console" } }

VirtualHost (ENV_PROSODY_DOMAIN)
    ssl = {
        certificate = ENV_PROSODY_DATA .. "/certs/" .. ENV_PROSODY_DOMAIN .. ".crt";
        key = ENV_PROSODY_DATA .. "/certs/" .. ENV_PROSODY_DOMAIN .. ".key";
    }

-- Group chats (XEP-0045) for the interaction memory agent's rooms: rooms show their
-- members' real addresses (the agent binds no other) and exist as soon as they are
-- joined; only accounts of this server create them.
Component ("conference." .. ENV_PROSODY_DOMAIN) "muc"
    muc_room_default_public_jids = true
    muc_room_locking = false
    restrict_room_creation = "local"
