# Defaults shared by start.sh and prosodyctl.sh (sourced, not run).
export PROSODY_DATA="${PROSODY_DATA:-/var/lib/spade-memory-prosody}"
export PROSODY_DOMAIN="${PROSODY_DOMAIN:-localhost}"
export PROSODY_C2S_PORT="${PROSODY_C2S_PORT:-5222}"
export PROSODY_INTERFACE="${PROSODY_INTERFACE:-127.0.0.1}"
export PROSODY_LOG_LEVEL="${PROSODY_LOG_LEVEL:-info}"
export PROSODY_ALLOW_REGISTRATION="${PROSODY_ALLOW_REGISTRATION:-false}"
export PROSODY_C2S_RATE="${PROSODY_C2S_RATE:-32kb/s}"
export PROSODY_S2S="${PROSODY_S2S:-false}"
