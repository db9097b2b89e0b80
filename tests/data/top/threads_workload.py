"""8 worker threads (named worker-N) doing matrix products (numpy releases the GIL) and sleeping;
from 40 s on worker-5 does three times as many per round."""
import ctypes, threading, time
import numpy as np
libc = ctypes.CDLL("libc.so.6")
T0 = time.time()
def work(i, stop):
    libc.prctl(15, ctypes.c_char_p(f"worker-{i}".encode()), 0, 0, 0)
    a = np.random.default_rng(i).random((400, 400)) / 400
    while time.time() < stop:
        k = 6 if i == 5 and time.time() - T0 > 40 else 2
        for _ in range(k):
            a = np.tanh(a @ a)
        time.sleep(0.05)
stop = T0 + 122
ts = [threading.Thread(target=work, args=(i, stop)) for i in range(1, 9)]
[t.start() for t in ts]; [t.join() for t in ts]
