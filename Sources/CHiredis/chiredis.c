#include "chiredis.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

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

static long long chiredis_now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

redisReply *chiredis_command(
    redisContext *context, int count, const char **arguments, const size_t *lengths, int timeout_ms) {
    if (chiredis_send(context, count, arguments, lengths) != 0) return NULL;
    long long deadline = chiredis_now_ms() + timeout_ms;
    for (;;) {
        void *reply = NULL;
        if (redisGetReplyFromReader(context, &reply) != REDIS_OK) return NULL;
        if (reply != NULL) return (redisReply *)reply;
        long long left = deadline - chiredis_now_ms();
        struct pollfd socket = {.fd = context->fd, .events = POLLIN};
        int ready = left > 0 ? poll(&socket, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) {
            context->err = ready == 0 ? CHIREDIS_ERR_REPLY_TIMEOUT : REDIS_ERR_IO;
            snprintf(context->errstr, sizeof context->errstr, "%s",
                     ready == 0 ? CHIREDIS_REPLY_TIMEOUT : strerror(errno));
            return NULL;
        }
        if (redisBufferRead(context) != REDIS_OK) return NULL;
    }
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
