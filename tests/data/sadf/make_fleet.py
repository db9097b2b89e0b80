"""Four sar recordings of one machine, one after the other, as four servers of one fleet: the
hostname web-0N, the times moved to the first recording's (the same instants)."""
import sys
from datetime import datetime
src, dst = sys.argv[1], sys.argv[2]
files = [open(f"{src}/raw{i}.csv").read().splitlines() for i in range(1, 5)]
def t0(lines):
    for ln in lines:
        if not ln.startswith("#"):
            return datetime.strptime(ln.split(";")[2], "%Y-%m-%d %H:%M:%S UTC")
base = t0(files[0])
for i, lines in enumerate(files, 1):
    shift = base - t0(lines)
    out = []
    for ln in lines:
        if ln.startswith("#"):
            out.append(ln); continue
        c = ln.split(";")
        c[0] = f"web-0{i}"
        c[2] = (datetime.strptime(c[2], "%Y-%m-%d %H:%M:%S UTC") + shift).strftime("%Y-%m-%d %H:%M:%S UTC")
        out.append(";".join(c))
    open(f"{dst}/web-0{i}.csv", "w").write("\n".join(out) + "\n")
