-- Prosody for spade_memory: the same file serves docker-compose and the
-- integration tests. Paths and ports come from the environment (Prosody reads
-- ENV_NAME as $NAME); prosody/start.sh sets the defaults and the certificate.
--
-- Prosody authenticates every client and stamps each stanza with the sender's
-- real JID: with it, the owner of a memory (the sender's bare JID) can be trusted.

run_as_root = true  -- containers and CI run as root; start.sh runs it in the foreground (-F)
pidfile = ENV_PROSODY_DATA .. "/prosody.pid"
data_path = ENV_PROSODY_DATA
certificates = ENV_PROSODY_DATA .. "/certs"

interfaces = { ENV_PROSODY_INTERFACE }
c2s_ports = { tonumber(ENV_PROSODY_C2S_PORT) }

modules_enabled = {
    "roster"; "saslauth"; "tls"; "disco"; "ping"; "register";
    "presence"; "message"; "iq"; "posix";
}
-- No s2s (one server), and no mod_limits: its 10 kB/s per client throttles memory traffic.
modules_disabled = { "s2s"; "limits" }

-- Agents create their own accounts (SPADE's auto_register). Close this on a
-- shared server and create accounts with `prosodyctl register` instead.
allow_registration = (ENV_PROSODY_ALLOW_REGISTRATION ~= "false")
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
