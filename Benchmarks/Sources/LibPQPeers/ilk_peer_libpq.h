/*
 * ilk_peer_libpq.h — libpq (PostgreSQL's client library; Debian/Ubuntu: libpq-dev), found with
 * pkg-config as libpq, for PostgresBenchmarks' floor: pg_try_advisory_lock and
 * pg_advisory_unlock through PQexecPrepared directly. Interlock's own module of the library
 * (CLibPQ) is not a product of the Interlock package, so the benchmarks declare theirs.
 */
#if defined(__has_include)
#if !__has_include(<libpq-fe.h>)
#error "PostgresBenchmarks needs libpq, whose header libpq-fe.h was not found: sudo apt-get install libpq-dev"
#endif
#endif
#include <libpq-fe.h>
