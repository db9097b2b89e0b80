#!/usr/bin/env bash
# System packages perftriage needs: babeltrace2 + its Python bindings (python3-bt2, Debian only)
# and python3-venv. Installs what is missing when run as root with apt-get; otherwise says what
# to install and carries on (everything that does not read CTF works without bt2). The C decoder of
# the CTF reader (analysis/ctf/_decode.c) is built from gcc, python3-dev and libbabeltrace2-dev,
# installed the same way; without them the reader uses its Python decoder (about 2x slower).
set -u
missing=()
[ -x /usr/bin/babeltrace2 ] || missing+=(babeltrace2)
[ -d /usr/lib/python3/dist-packages/bt2 ] || missing+=(python3-bt2)
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
[ -f "$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)/Python.h" ] || missing+=(python3-dev)
[ -f /usr/include/babeltrace2/babeltrace.h ] || missing+=(libbabeltrace2-dev)
# --test: what the tests run for real besides: a Prometheus server and promtool (counters from a
# running server), lttng-tools and lttng-ust's headers (perftriage record trace records a small
# traced program built by the test: user space works here, the kernel needs lttng-modules),
# linux-perf (the kernel recorded by perf where LTTng has no modules, as here), and sysstat's sadf
# (a sar archive is read through it)
if [ "${1:-}" = "--test" ]; then
  command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
  command -v lttng >/dev/null 2>&1 || missing+=(lttng-tools)
  [ -n "$(ls /usr/include/lttng/tracepoint.h /usr/include/*/lttng/tracepoint.h 2>/dev/null)" ] || missing+=(liblttng-ust-dev)
  command -v sadf >/dev/null 2>&1 || missing+=(sysstat)  # sar archives are read through sadf
  command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
fi
# --test as root: the kernel's tracepoints readable for perf (tracefs is mounted at boot on most
# hosts, not on a fresh container or VM; without it the perf tests and requests_perf skip)
if [ "${1:-}" = "--test" ] && [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] \
   && [ -z "$(ls -A /sys/kernel/tracing 2>/dev/null)" ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "setup: tracefs could not be mounted: the perf tests skip" >&2
fi
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
       "without python3-bt2, CTF traces cannot be read, everything else works;" \
       "without gcc, python3-dev or libbabeltrace2-dev, CTF traces are read by the slower Python decoder" >&2
fi
exit 0
