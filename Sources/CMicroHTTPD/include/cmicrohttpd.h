#ifndef CMICROHTTPD_H
#define CMICROHTTPD_H

// Typed wrappers over libmicrohttpd's variadic calls (MHD_start_daemon, MHD_get_daemon_info), which Swift
// cannot call directly.

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

// What a daemon is started with.
struct cmhd_settings {
    // The address to listen on (IPv4 or IPv6), with its port (0: the system picks one).
    const struct sockaddr *address;
    socklen_t address_length;
    // The most connections at once, in total and from one client address (0: no per-address limit).
    unsigned int connection_limit;
    unsigned int per_address_limit;
    // Seconds a connection may stay idle (no byte received or sent) before it is closed.
    unsigned int idle_timeout_seconds;
    // Memory per connection for headers and buffered body (bytes).
    size_t connection_memory;
};

// Starts a daemon with one internal polling thread (epoll), suspend/resume allowed, on `settings`; NULL when
// it cannot (the port is taken, the address is not this host's).
struct MHD_Daemon *cmhd_start(const struct cmhd_settings *settings, MHD_AccessHandlerCallback handler,
                              void *handler_context, MHD_RequestCompletedCallback completed,
                              void *completed_context);

// The port a daemon listens on (as bound: useful when asked for port 0); 0 when unknown.
uint16_t cmhd_bound_port(struct MHD_Daemon *daemon);

// The number of connections a daemon holds open.
unsigned int cmhd_connection_count(struct MHD_Daemon *daemon);

// A request header's value (NUL-terminated), or NULL.
const char *cmhd_header(struct MHD_Connection *connection, const char *name);

// A query argument's value (decoded), or NULL.
const char *cmhd_argument(struct MHD_Connection *connection, const char *name);

// libmicrohttpd's macros with casts, which Swift does not import.
static const ssize_t cmhd_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const uint64_t cmhd_size_unknown = MHD_SIZE_UNKNOWN;
// And its enumerations' constants, named as the C names them.
static const enum MHD_Result cmhd_yes = MHD_YES;
static const enum MHD_Result cmhd_no = MHD_NO;
static const enum MHD_ValueKind cmhd_header_kind = MHD_HEADER_KIND;
static const enum MHD_ValueKind cmhd_argument_kind = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode cmhd_must_copy = MHD_RESPMEM_MUST_COPY;

#endif
