/* A small "server" for the recording test: N requests on T threads, each between
 * ust_php:request_entry and request_exit; every 10th request of /slow sleeps 20 ms, the others
 * 1 ms. Usage: ust_app N T */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "ust_php_tp.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int n_requests, n_threads;

static void *serve(void *arg)
{
    long id = (long)arg;
    for (int i = id; i < n_requests; i += n_threads) {
        int slow = i % 10 == 0;
        const char *uri = slow ? "/slow" : "/fast";
        char query[32];
        snprintf(query, sizeof query, "id=%d", i);
        lttng_ust_tracepoint(ust_php, request_entry, "/var/www/index.php", uri, "GET", query);
        struct timespec ts = {0, slow ? 20000000L : 1000000L};
        nanosleep(&ts, NULL);
        lttng_ust_tracepoint(ust_php, request_exit, "/var/www/index.php", uri, "GET", query);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    n_requests = argc > 1 ? atoi(argv[1]) : 100;
    n_threads = argc > 2 ? atoi(argv[2]) : 4;
    pthread_t th[64];
    if (n_threads > 64)
        n_threads = 64;
    for (long t = 0; t < n_threads; t++)
        pthread_create(&th[t], NULL, serve, (void *)t);
    for (int t = 0; t < n_threads; t++)
        pthread_join(th[t], NULL);
    return 0;
}
