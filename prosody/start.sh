#!/bin/sh
# Start Prosody in the foreground with prosody.cfg.lua (docker-compose and tests).
# A self-signed certificate for the domain is made on first start.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export PROSODY_DATA="${PROSODY_DATA:-/var/lib/spade-memory-prosody}"
export PROSODY_DOMAIN="${PROSODY_DOMAIN:-localhost}"
export PROSODY_C2S_PORT="${PROSODY_C2S_PORT:-5222}"
export PROSODY_INTERFACE="${PROSODY_INTERFACE:-127.0.0.1}"
export PROSODY_LOG_LEVEL="${PROSODY_LOG_LEVEL:-info}"
mkdir -p "$PROSODY_DATA/certs"
cert="$PROSODY_DATA/certs/$PROSODY_DOMAIN"
if [ ! -f "$cert.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$PROSODY_DOMAIN" \
        -addext "subjectAltName=DNS:$PROSODY_DOMAIN" \
        -keyout "$cert.key" -out "$cert.crt" 2>/dev/null
fi
exec prosody -F --config "$here/prosody.cfg.lua"
