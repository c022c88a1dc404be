#include "chiredis.h"

#include <sys/time.h>

redisContext *chiredis_connect(const char *host, int port, int timeout_ms) {
    struct timeval timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *context = port == 0 ? redisConnectUnixWithTimeout(host, timeout)
                                      : redisConnectWithTimeout(host, port, timeout);
    if (context != NULL && context->err == 0) {
        redisSetTimeout(context, timeout);
        if (port != 0) redisEnableKeepAlive(context);
    }
    return context;
}

redisReply *chiredis_command(redisContext *context, int count, const char **arguments, const size_t *lengths) {
    return (redisReply *)redisCommandArgv(context, count, arguments, lengths);
}

int chiredis_send(redisContext *context, int count, const char **arguments, const size_t *lengths) {
    if (redisAppendCommandArgv(context, count, arguments, lengths) != REDIS_OK) return -1;
    int done = 0;
    do {
        if (redisBufferWrite(context, &done) != REDIS_OK) return -1;
    } while (!done);
    return 0;
}

int chiredis_descriptor(const redisContext *context) { return context->fd; }
