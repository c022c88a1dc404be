#include "ccurl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_ptr(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    static const char none = 0;
    struct curl_blob blob;
    blob.data = (void *)(data != NULL ? data : &none);
    blob.len = data != NULL ? length : 0;
    blob.flags = CURL_BLOB_COPY;
    return curl_easy_setopt(handle, option, &blob);
}

CURLcode ccurl_easy_setopt_write_function(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

CURLcode ccurl_easy_setopt_header_function(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

CURLcode ccurl_easy_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

CURLcode ccurl_easy_setopt_prereq_function(CURL *handle, ccurl_prereq_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, value);
}

int ccurl_easy_alpn_is_h2(CURL *handle) {
    struct curl_tlssessioninfo *session = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_TLS_SSL_PTR, &session) != CURLE_OK || session == NULL ||
        session->backend != CURLSSLBACKEND_OPENSSL || session->internals == NULL) {
        return 0;
    }
    const unsigned char *protocol = NULL;
    unsigned int length = 0;
    SSL_get0_alpn_selected((SSL *)session->internals, &protocol, &length);
    return length == 2 && memcmp(protocol, "h2", 2) == 0;
}

int ccurl_easy_session_resumable(CURL *handle) {
    struct curl_tlssessioninfo *session = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_TLS_SSL_PTR, &session) != CURLE_OK || session == NULL ||
        session->backend != CURLSSLBACKEND_OPENSSL || session->internals == NULL) {
        return 0;
    }
    SSL *ssl = (SSL *)session->internals;
    if (SSL_version(ssl) < TLS1_3_VERSION) {
        return SSL_get0_session(ssl) != NULL;
    }
    const SSL_SESSION *current = SSL_get0_session(ssl);
    return current != NULL && SSL_SESSION_has_ticket(current);
}

const char *ccurl_default_cainfo(void) {
    return curl_version_info(CURLVERSION_NOW)->cainfo;
}

int ccurl_easy_input_waiting(CURL *handle, curl_socket_t socket) {
    struct curl_tlssessioninfo *session = NULL;
    if (curl_easy_getinfo(handle, CURLINFO_TLS_SSL_PTR, &session) == CURLE_OK && session != NULL &&
        session->backend == CURLSSLBACKEND_OPENSSL && session->internals != NULL &&
        SSL_pending((SSL *)session->internals) > 0) {
        return 1;
    }
    struct pollfd poller = {.fd = socket, .events = POLLIN, .revents = 0};
    return poll(&poller, 1, 0) > 0 && poller.revents != 0;
}

int ccurl_socket_local_port(curl_socket_t socket) {
    struct sockaddr_storage address;
    socklen_t length = sizeof(address);
    if (getsockname(socket, (struct sockaddr *)&address, &length) != 0) return -1;
    if (address.ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)&address)->sin_port);
    if (address.ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)&address)->sin6_port);
    return -1;
}

CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

CURLSHcode ccurl_share_setopt_long(CURLSH *handle, CURLSHoption option, long value) {
    return curl_share_setopt(handle, option, value);
}

int ccurl_sockaddr_address(const struct curl_sockaddr *address, uint8_t bytes[16]) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)&address->addr;
        memcpy(bytes, &in4->sin_addr, 4);
        return 4;
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&address->addr;
        memcpy(bytes, &in6->sin6_addr, 16);
        return 16;
    }
    return 0;
}

int ccurl_sockaddr_port(const struct curl_sockaddr *address) {
    if (address->family == AF_INET && address->addrlen >= sizeof(struct sockaddr_in)) {
        return ntohs(((const struct sockaddr_in *)&address->addr)->sin_port);
    }
    if (address->family == AF_INET6 && address->addrlen >= sizeof(struct sockaddr_in6)) {
        return ntohs(((const struct sockaddr_in6 *)&address->addr)->sin6_port);
    }
    return 0;
}

curl_socket_t ccurl_sockaddr_open(const struct curl_sockaddr *address) {
    return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

curl_socket_t ccurl_socket_bad(void) { return CURL_SOCKET_BAD; }
size_t ccurl_write_abort(void) { return 0; }
int ccurl_prereq_ok(void) { return CURL_PREREQFUNC_OK; }
int ccurl_prereq_abort(void) { return CURL_PREREQFUNC_ABORT; }

static size_t ccurl_collect(char *data, size_t size, size_t count, void *userdata) {
    ccurl_body_buffer *buffer = userdata;
    size_t length = size * count;
    size_t room = sizeof(buffer->data) - buffer->length;
    size_t kept = length < room ? length : room;
    memcpy(buffer->data + buffer->length, data, kept);
    buffer->length += kept;
    buffer->dropped += length - kept;
    return length;
}

CURLcode ccurl_easy_collect_body(CURL *handle, ccurl_body_buffer *buffer) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, ccurl_collect);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_WRITEDATA, buffer);
}

const char *ccurl_easy_header_value(CURL *handle, const char *name) {
    struct curl_header *header = NULL;
    if (curl_easy_header(handle, name, 0, CURLH_HEADER, -1, &header) != CURLHE_OK) return NULL;
    size_t count = header->amount;
    if (count > 1 && curl_easy_header(handle, name, count - 1, CURLH_HEADER, -1, &header) != CURLHE_OK) return NULL;
    return header->value;
}

static int ccurl_abort_when_set(void *userdata, curl_off_t download_total, curl_off_t downloaded,
                                curl_off_t upload_total, curl_off_t uploaded) {
    (void)download_total, (void)downloaded, (void)upload_total, (void)uploaded;
    return __atomic_load_n((const int *)userdata, __ATOMIC_ACQUIRE) != 0;
}

CURLcode ccurl_easy_abort_when_set(CURL *handle, const int *flag) {
    CURLcode code = curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, ccurl_abort_when_set);
    if (code == CURLE_OK) code = curl_easy_setopt(handle, CURLOPT_XFERINFODATA, (void *)flag);
    return code != CURLE_OK ? code : curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
}

void ccurl_flag_set(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }

int ccurl_flag_is_set(const int *flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE); }
