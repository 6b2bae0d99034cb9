/*
 * The system library libpq (PostgreSQL's client library; Debian's and Ubuntu's libpq-dev), found
 * with pkg-config as libpq. Only the product InterlockPostgres depends on it: a package that uses
 * the product Interlock alone never builds this module (scripts/check-example-deps.sh).
 */
#if defined(__has_include)
#if !__has_include(<libpq-fe.h>)
#error "InterlockPostgres needs libpq (PostgreSQL's client library), whose header libpq-fe.h was not found. Install it with: sudo apt-get install libpq-dev (Debian, Ubuntu) or sudo dnf install libpq-devel (Fedora), then build again."
#endif
#endif
#include <libpq-fe.h>
/* epoll, for InterlockPostgres's reactor (Glibc's Swift module leaves sys/epoll.h out). */
#include <sys/epoll.h>
