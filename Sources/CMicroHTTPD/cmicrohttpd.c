#define _GNU_SOURCE
#include "cmicrohttpd.h"

struct MHD_Daemon *cmhd_start(const struct cmhd_settings *settings, const struct cmhd_callbacks *callbacks) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME
                         | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    return MHD_start_daemon(flags, 0, NULL, NULL, callbacks->access, callbacks->context,
                            MHD_OPTION_CONNECTION_LIMIT, settings->connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, settings->idle_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, settings->connection_memory,
                            MHD_OPTION_CONNECTION_MEMORY_INCREMENT, settings->connection_memory_increment,
                            MHD_OPTION_NOTIFY_COMPLETED, callbacks->completed, callbacks->context,
                            MHD_OPTION_NOTIFY_CONNECTION, callbacks->connection, callbacks->context,
                            MHD_OPTION_URI_LOG_CALLBACK, callbacks->target, callbacks->context,
                            MHD_OPTION_END);
}

int cmhd_accept(int listener, struct sockaddr *address, socklen_t *length) {
    return accept4(listener, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

unsigned int cmhd_connection_count(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

int cmhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

void **cmhd_connection_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : (void **)&info->socket_context;
}

size_t cmhd_head_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}

unsigned int cmhd_queued_status(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS);
    return info == NULL ? 0 : info->http_status;
}

const char *cmhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

void cmhd_close_after_response(struct MHD_Connection *connection) {
    // The key and value are kept by pointer until the request ends: literals.
    MHD_set_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONNECTION, "close");
}

const char *cmhd_argument(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
}
