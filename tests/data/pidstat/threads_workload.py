"""A thread pool of 8 workers, each naming itself worker-N (prctl), doing a bit of CPU work and
sleeping; from 20 s on worker-5 writes and fsyncs a file and spins twice as long."""
import ctypes, os, threading, time, tempfile
libc = ctypes.CDLL("libc.so.6")
T0 = time.time()
def name(n):
    libc.prctl(15, ctypes.c_char_p(n.encode()), 0, 0, 0)
def work(i, stop):
    name(f"worker-{i}")
    fd, path = tempfile.mkstemp(dir="/tmp")
    while time.time() < stop:
        bad = i == 5 and time.time() - T0 > 20
        t = time.time()
        while time.time() - t < (0.06 if bad else 0.03):
            sum(range(2000))
        if bad:
            os.write(fd, os.urandom(256 * 1024)); os.fsync(fd)
        time.sleep(0.1)
    os.close(fd); os.unlink(path)
stop = T0 + 62
ts = [threading.Thread(target=work, args=(i, stop)) for i in range(1, 9)]
[t.start() for t in ts]; [t.join() for t in ts]
