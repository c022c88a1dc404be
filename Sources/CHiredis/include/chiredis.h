#ifndef CHIREDIS_H
#define CHIREDIS_H

// hiredis (Debian's libhiredis-dev), for the Redis Streams worker: the blocking client, connected with a
// timeout that also bounds every later read and write.

#include <hiredis/hiredis.h>
#include <stddef.h>

// Connects to HOST:PORT, or to a unix socket when `port` is 0 (`host` is then its path), with `timeout_ms` for
// the connection and for every command after; NULL only when out of memory (else check `err`).
redisContext *chiredis_connect(const char *host, int port, int timeout_ms);

// The `err` and `errstr` of a reply that did not come in time (`chiredis_command`; the worker's own reader of entries
// says the same): an `err` value hiredis does not use.
#define CHIREDIS_ERR_REPLY_TIMEOUT 100
#define CHIREDIS_REPLY_TIMEOUT "timed out reading the reply"

// Sends one command (binary-safe arguments) and reads its reply, whole within `timeout_ms` of the sending (the
// socket's own timeout bounds each read, not a reply a server trickles); NULL on an I/O or protocol error, or
// when the time ran out (the context's `err` and `errstr` say which; the context is then unusable).
redisReply *chiredis_command(
    redisContext *context, int count, const char **arguments, const size_t *lengths, int timeout_ms);

// Sends one command (binary-safe arguments) without reading its reply, for a caller that reads the reply from
// the socket itself (`chiredis_descriptor`); 0, or -1 on an error (`err` and `errstr` say which). hiredis's
// reader is left empty: the context serves later commands as before once the reply has been read whole.
int chiredis_send(redisContext *context, int count, const char **arguments, const size_t *lengths);

// The context's socket, blocking, with the context's timeout on every read (SO_RCVTIMEO).
int chiredis_descriptor(const redisContext *context);

#endif
