#ifndef CMICROHTTPD_H
#define CMICROHTTPD_H

// Typed wrappers over libmicrohttpd's variadic calls (MHD_start_daemon, MHD_get_daemon_info,
// MHD_get_connection_info), which Swift cannot call directly.

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

// What a daemon is started with.
struct cmhd_settings {
    // The most connections the daemon holds at once (the caller admits connections; this is a backstop).
    unsigned int connection_limit;
    // Seconds a connection may stay idle (no byte received or sent) before it is closed
    // (MHD_OPTION_CONNECTION_TIMEOUT).
    unsigned int idle_timeout_seconds;
    // Memory per connection for the request's head, its fields' records and the buffers (bytes;
    // MHD_OPTION_CONNECTION_MEMORY_LIMIT), and the least the read buffer grows by (MHD_OPTION_CONNECTION_MEMORY_INCREMENT).
    size_t connection_memory;
    size_t connection_memory_increment;
};

// The daemon's callbacks, all given the same context.
struct cmhd_callbacks {
    void *context;
    MHD_AccessHandlerCallback access;
    // MHD_OPTION_NOTIFY_COMPLETED: a request is over.
    MHD_RequestCompletedCallback completed;
    // MHD_OPTION_NOTIFY_CONNECTION: a connection started or closed (CLOSED comes before its socket is closed).
    MHD_NotifyConnectionCallback connection;
    // MHD_OPTION_URI_LOG_CALLBACK: a request line is in (the target raw, before its query is split and decoded);
    // what it returns is the request's context (the access handler's and `completed`'s `*req_cls`).
    void *(*target)(void *context, const char *uri, struct MHD_Connection *connection);
};

// Starts a daemon with one internal polling thread (epoll), suspend/resume allowed and no listening socket of its
// own (MHD_USE_NO_LISTEN_SOCKET: connections come through MHD_add_connection); NULL when it cannot.
struct MHD_Daemon *cmhd_start(const struct cmhd_settings *settings, const struct cmhd_callbacks *callbacks);

// Accepts a connection on a listening socket, non-blocking and closed on exec (accept4, which Swift's Glibc module
// does not expose); the socket, or -1 with errno.
int cmhd_accept(int listener, struct sockaddr *address, socklen_t *length);

// The number of connections a daemon holds open.
unsigned int cmhd_connection_count(struct MHD_Daemon *daemon);

// A connection's socket (MHD_CONNECTION_INFO_CONNECTION_FD).
int cmhd_connection_socket(struct MHD_Connection *connection);

// Where a connection's own context is kept (MHD_CONNECTION_INFO_SOCKET_CONTEXT): set when it starts.
void **cmhd_connection_context(struct MHD_Connection *connection);

// The size of the request's head as received, request line to the empty line included
// (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE); 0 before the head is in.
size_t cmhd_head_size(struct MHD_Connection *connection);

// The status of the response queued on a connection (MHD_CONNECTION_INFO_HTTP_STATUS): ours, or one libmicrohttpd
// queued itself (its own 400, 413 or 500 for a body it refused); 0 when none is.
unsigned int cmhd_queued_status(struct MHD_Connection *connection);

// A request header's value (NUL-terminated), or NULL.
const char *cmhd_header(struct MHD_Connection *connection, const char *name);

// Marks the request in progress on a connection as if it had asked for `Connection: close`: libmicrohttpd sends its
// response with `Connection: close` and closes the connection after it, whatever the response is (one made once and
// shared among connections too). Called before the response's head is written.
void cmhd_close_after_response(struct MHD_Connection *connection);

// A query argument's value (decoded), or NULL.
const char *cmhd_argument(struct MHD_Connection *connection, const char *name);

// libmicrohttpd's macros with casts, which Swift does not import.
static const ssize_t cmhd_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t cmhd_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
static const uint64_t cmhd_size_unknown = MHD_SIZE_UNKNOWN;
// And its enumerations' constants, named as the C names them.
static const enum MHD_Result cmhd_yes = MHD_YES;
static const enum MHD_Result cmhd_no = MHD_NO;
static const enum MHD_ValueKind cmhd_header_kind = MHD_HEADER_KIND;
static const enum MHD_ValueKind cmhd_argument_kind = MHD_GET_ARGUMENT_KIND;
static const enum MHD_ResponseMemoryMode cmhd_must_copy = MHD_RESPMEM_MUST_COPY;
static const enum MHD_ConnectionNotificationCode cmhd_connection_started = MHD_CONNECTION_NOTIFY_STARTED;
static const enum MHD_ConnectionNotificationCode cmhd_connection_closed = MHD_CONNECTION_NOTIFY_CLOSED;
static const enum MHD_RequestTerminationCode cmhd_terminated_completed_ok = MHD_REQUEST_TERMINATED_COMPLETED_OK;
static const enum MHD_RequestTerminationCode cmhd_terminated_with_error = MHD_REQUEST_TERMINATED_WITH_ERROR;
static const enum MHD_RequestTerminationCode cmhd_terminated_timeout_reached = MHD_REQUEST_TERMINATED_TIMEOUT_REACHED;
static const enum MHD_RequestTerminationCode cmhd_terminated_daemon_shutdown = MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN;
static const enum MHD_RequestTerminationCode cmhd_terminated_read_error = MHD_REQUEST_TERMINATED_READ_ERROR;
static const enum MHD_RequestTerminationCode cmhd_terminated_client_abort = MHD_REQUEST_TERMINATED_CLIENT_ABORT;

#endif
