#!/usr/bin/env bash
# System packages perftriage needs: babeltrace2 + its Python bindings (python3-bt2, Debian only)
# and python3-venv. Installs what is missing when run as root with apt-get; otherwise says what
# to install and carries on (everything that does not read CTF works without bt2).
set -u
missing=()
[ -x /usr/bin/babeltrace2 ] || missing+=(babeltrace2)
[ -d /usr/lib/python3/dist-packages/bt2 ] || missing+=(python3-bt2)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} with apt-get" >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
      || echo "setup: apt-get could not install ${missing[*]}; install them by hand" >&2
  fi
else
  echo "setup: missing system packages: ${missing[*]} (Debian/Ubuntu: sudo apt-get install ${missing[*]});" \
       "without python3-bt2, CTF traces cannot be read, everything else works" >&2
fi
exit 0
