/* A thread pool serving requests: the workload of tests/data/perf (record.sh records it).
   Every 20th request syncs a file to disk (fdatasync) and every 20th+10 sleeps 8 ms (outlier
   requests); worker-3 deviates as MODE says: cpu (default) spins 4x as long per request, io
   writes and syncs a file of its own per request, sleep sleeps 2 ms more per request, syscalls
   makes 200 more system calls per request. Ground truth on stdout.
   Usage: srv [REQUESTS [GAP_US [DIR [MODE]]]] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NW 6
static int total, next_id, avail, done;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char dir[256];
static const char *mode = "cpu";

__attribute__((noinline)) void request_begin(long id) { __asm__ volatile("" ::"r"(id)); }
__attribute__((noinline)) void request_end(long id) { __asm__ volatile("" ::"r"(id)); }

static double loops_per_us;

static void spin_loops(long n) {
  volatile unsigned long x = 1;
  for (long i = 0; i < n; i++) x = x * 2862933555777941757UL + 3037000493UL;
}

static void calibrate(void) {  /* no clock reads while serving: a few events per request */
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  spin_loops(20000000);
  clock_gettime(CLOCK_MONOTONIC, &b);
  loops_per_us = 20000000.0 / ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3);
}

static void spin(long us) { spin_loops((long)(us * loops_per_us)); }

static void *worker(void *arg) {
  long w = (long)arg;
  char name[16], path[300], buf[4096];
  snprintf(name, sizeof name, "worker-%ld", w);
  pthread_setname_np(pthread_self(), name);
  snprintf(path, sizeof path, "%s/w%ld.dat", dir, w);
  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
  memset(buf, 'x', sizeof buf);
  for (;;) {
    pthread_mutex_lock(&mu);
    while (next_id >= avail && !done) pthread_cond_wait(&cv, &mu);
    if (next_id >= avail) { pthread_mutex_unlock(&mu); break; }
    long id = next_id++;
    pthread_mutex_unlock(&mu);
    request_begin(id);
    int odd = w == 3;
    spin(odd && !strcmp(mode, "cpu") ? 1600 : 400);
    if (odd && !strcmp(mode, "io")) { pwrite(fd, buf, sizeof buf, 64 * 4096 + (id % 16) * 4096); fdatasync(fd); }
    if (odd && !strcmp(mode, "sleep")) { struct timespec t = {0, 2000000}; nanosleep(&t, NULL); }
    if (odd && !strcmp(mode, "syscalls")) for (int k = 0; k < 200; k++) getppid();
    pwrite(fd, buf, sizeof buf, (id % 64) * 4096);
    int fcfd = open("/etc/hostname", O_RDONLY); read(fcfd, buf, 64); close(fcfd);
    const char *kind = "normal";
    if (id % 20 == 0) { fdatasync(fd); kind = "sync"; }
    else if (id % 20 == 10) { struct timespec t = {0, 8000000}; nanosleep(&t, NULL); kind = "sleep"; }
    request_end(id);
    printf("%ld %ld %s\n", id, w, kind);
  }
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  total = argc > 1 ? atoi(argv[1]) : 600;
  int rate_us = argc > 2 ? atoi(argv[2]) : 1000;
  snprintf(dir, sizeof dir, "%s", argc > 3 ? argv[3] : "/tmp");
  if (argc > 4) mode = argv[4];
  setvbuf(stdout, NULL, _IOLBF, 0);
  calibrate();
  pthread_t th[NW];
  for (long i = 0; i < NW; i++) pthread_create(&th[i], NULL, worker, (void *)i);
  for (int i = 0; i < total; i++) {  /* requests arrive at a steady rate */
    pthread_mutex_lock(&mu);
    avail++; pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    usleep(rate_us);
  }
  pthread_mutex_lock(&mu); done = 1; pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
  for (int i = 0; i < NW; i++) pthread_join(th[i], NULL);
  return 0;
}
