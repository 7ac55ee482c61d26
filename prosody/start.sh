#!/bin/sh
# Start Prosody in the foreground with prosody.cfg.lua (docker-compose and tests).
# A self-signed certificate for the domain is made on first start. In-band
# registration is closed: PROSODY_ACCOUNTS="name:password name2:password2"
# creates (or resets) those accounts of the domain before the server starts.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
mkdir -p "$PROSODY_DATA/certs"
cert="$PROSODY_DATA/certs/$PROSODY_DOMAIN"
if [ ! -f "$cert.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$PROSODY_DOMAIN" \
        -addext "subjectAltName=DNS:$PROSODY_DOMAIN" \
        -keyout "$cert.key" -out "$cert.crt" 2>/dev/null
fi
for account in ${PROSODY_ACCOUNTS:-}; do
    prosodyctl --config "$here/prosody.cfg.lua" register \
        "${account%%:*}" "$PROSODY_DOMAIN" "${account#*:}" >/dev/null 2>&1 \
        || { echo "start.sh: could not create the account ${account%%:*}" >&2; exit 1; }
done
exec prosody -F --config "$here/prosody.cfg.lua"
