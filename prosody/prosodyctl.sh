#!/bin/sh
# prosodyctl on prosody.cfg.lua with start.sh's environment, e.g.
#   sh prosody/prosodyctl.sh register NAME DOMAIN PASSWORD
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
exec prosodyctl --config "$here/prosody.cfg.lua" "$@"
