#!/bin/sh
# Records tests/data/perf/threadpool: srv.c's thread pool traced by perf (no LTTng: any Linux host
# with perf and root), its requests marked by uprobes on request_begin/request_end, converted to
# CTF with wall-clock times. The ground truth (request, worker, kind) goes to truth.txt.
#   sh record.sh [OUT_DIR] [REQUESTS] [GAP_US] [MODE: how worker-3 deviates, srv.c]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
n=${2:-1000}
gap=${3:-2000}
mode=${4:-cpu}
work=$(mktemp -d)
trap 'perf probe -q -d "probe_srv:*" 2>/dev/null || true; rm -rf "$work"' EXIT
gcc -O2 -g -pthread -o "$work/srv" "$here/srv.c"
perf probe -q -x "$work/srv" request_begin 'id=%di:s64'
perf probe -q -x "$work/srv" request_end 'id=%di:s64'
# perf's own writes would trace themselves: --exclude-perf on the system calls only (on the
# scheduler's events it also drops the wake-ups that interrupts make while perf runs)
perf record -q -k mono -a -o "$work/perf.data" \
  -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup -e sched:sched_wakeup_new \
  -e sched:sched_process_fork -e sched:sched_process_exit -e sched:sched_process_exec \
  -e raw_syscalls:sys_enter --exclude-perf -e raw_syscalls:sys_exit --exclude-perf \
  -e irq:irq_handler_entry -e irq:irq_handler_exit -e irq:softirq_entry -e irq:softirq_exit \
  -e timer:hrtimer_expire_entry -e timer:hrtimer_expire_exit \
  -e probe_srv:request_begin -e probe_srv:request_end \
  -- "$work/srv" "$n" "$gap" "$work" "$mode" > "$work/truth.txt"
rm -rf "$out/threadpool"
perf data convert --tod --to-ctf "$out/threadpool" -i "$work/perf.data" >/dev/null
sort -n "$work/truth.txt" > "$out/truth.txt"
