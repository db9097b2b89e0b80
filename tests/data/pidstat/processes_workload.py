"""Six worker processes doing a bit of CPU work and sleeping; from 15 s on worker 4 writes and
fsyncs a file every round."""
import os, time, tempfile, multiprocessing as mp
def work(i, t0, stop):
    fd, path = tempfile.mkstemp(dir="/tmp")
    while time.time() < stop:
        t = time.time()
        while time.time() - t < 0.03:
            sum(range(2000))
        if i == 4 and time.time() - t0 > 15:
            os.write(fd, os.urandom(256 * 1024)); os.fsync(fd)
        time.sleep(0.1)
    os.close(fd); os.unlink(path)
if __name__ == "__main__":
    t0 = time.time()
    ps = [mp.Process(target=work, args=(i, t0, t0 + 42)) for i in range(6)]
    [p.start() for p in ps]
    print(",".join(str(p.pid) for p in ps), flush=True)
    [p.join() for p in ps]
