#!/usr/bin/env bash
# Creates .venv from Debian's /usr/bin/python3 (the only Python that python3-bt2 serves), links
# bt2 into it, and installs perftriage editable with its test extras. Idempotent.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -d /usr/lib/python3/dist-packages/bt2 ] && [ ! -e "$site/bt2" ]; then
  ln -s /usr/lib/python3/dist-packages/bt2 "$site/bt2"
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
# byte-compile perftriage: where PYTHONDONTWRITEBYTECODE is set (containers often set it), every
# start would compile its modules again (0.3 s of the app's first screen, as much for the report)
.venv/bin/python -m compileall -q -j 0 analysis tui perftriage > /dev/null
touch .venv/.perftriage-installed
