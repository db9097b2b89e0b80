#!/bin/sh
# four 40 s sar recordings of this machine; during the third, two CPU hogs and a disk writer
cd /tmp/p/fleet
for i in 1 2 3 4; do
  if [ $i = 3 ]; then
    (timeout 40 sh -c 'while :; do :; done' &) ; (timeout 40 sh -c 'while :; do :; done' &)
    (timeout 40 sh -c 'while :; do dd if=/dev/zero of=/tmp/p/fleet/junk bs=1M count=64 conv=fsync 2>/dev/null; done' &)
  fi
  sar -o sa$i.bin 1 40 > /dev/null 2>&1
  sleep 2
done
rm -f /tmp/p/fleet/junk
echo done > /tmp/p/fleet/DONE
