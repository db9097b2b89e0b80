/* Tracepoints of a request-serving application, as PHP's LTTng extension names them
 * (ust_php:request_entry / request_exit): what perftriage's request markers read. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ust_php

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./ust_php_tp.h"

#if !defined(UST_PHP_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define UST_PHP_TP_H

#include <lttng/tracepoint.h>

/* one class, two events: a request's entry and exit carry the same fields */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(ust_php, request,
    LTTNG_UST_TP_ARGS(const char *, path, const char *, uri, const char *, method, const char *, querystring),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(path, path)
        lttng_ust_field_string(uri, uri)
        lttng_ust_field_string(method, method)
        lttng_ust_field_string(querystring, querystring)))

#define UST_PHP_REQUEST_ARGS \
    LTTNG_UST_TP_ARGS(const char *, path, const char *, uri, const char *, method, const char *, querystring)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ust_php, request, ust_php, request_entry, UST_PHP_REQUEST_ARGS)
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ust_php, request, ust_php, request_exit, UST_PHP_REQUEST_ARGS)

#endif

#include <lttng/tracepoint-event.h>
