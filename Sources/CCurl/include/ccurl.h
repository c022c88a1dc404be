#ifndef CCURL_H
#define CCURL_H

// Typed wrappers over libcurl's variadic calls (curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt),
// which Swift cannot call directly, plus small helpers for the socket callbacks.

#include <curl/curl.h>
#include <stdint.h>

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *userdata);
typedef curl_socket_t (*ccurl_opensocket_callback)(void *userdata, curlsocktype purpose,
                                                   struct curl_sockaddr *address);
typedef int (*ccurl_prereq_callback)(void *userdata, char *primary_ip, char *local_ip, int primary_port,
                                     int local_port);

// curl_easy_setopt, one function per argument type.
CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode ccurl_easy_setopt_ptr(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
// A blob option (CURLOPT_CAINFO_BLOB and the like): `length` bytes at `data`, copied by libcurl (CURL_BLOB_COPY);
// no bytes (`data` NULL or `length` 0) set an empty blob, not none.
CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length);
CURLcode ccurl_easy_setopt_write_function(CURL *handle, ccurl_write_callback callback);
CURLcode ccurl_easy_setopt_header_function(CURL *handle, ccurl_write_callback callback);
CURLcode ccurl_easy_setopt_opensocket_function(CURL *handle, ccurl_opensocket_callback callback);
CURLcode ccurl_easy_setopt_prereq_function(CURL *handle, ccurl_prereq_callback callback);

// curl_easy_getinfo, one function per result type.
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode ccurl_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value);

// Whether the connection of `handle`, its TLS handshake done, agreed on HTTP/2 by ALPN: OpenSSL's
// SSL_get0_alpn_selected (what libcurl reads to choose the protocol) on the SSL that CURLINFO_TLS_SSL_PTR gives.
// libcurl 7.88 exposes no other sign before the response: CURLINFO_HTTP_VERSION stays 0 until the status line. 0 for
// another protocol, no ALPN, no connection, a connection without TLS, or a libcurl built on another TLS library.
int ccurl_easy_alpn_is_h2(CURL *handle);

// Whether the connection of `handle`, its TLS handshake done, has a session another connection can resume, so
// that libcurl's new-session callback (which OpenSSL calls as it takes the session) has put it in the share: over
// TLS 1.2 at the handshake's end; over TLS 1.3 once the server's NewSessionTicket, sent after the handshake, has been
// read (OpenSSL replaces the connection's session with one holding the ticket, then calls the callback). 0 before,
// and for no connection, a connection without TLS or a libcurl built on another TLS library.
int ccurl_easy_session_resumable(CURL *handle);

// The CA bundle this libcurl trusts when CURLOPT_CAINFO is not set (curl_version_info's cainfo, a macro's
// version Swift cannot name); NULL when it was built without one.
const char *ccurl_default_cainfo(void);

// Whether the connection of `handle`, about to carry a request (curl's pre-request callback), has bytes waiting that
// no request asked for: decrypted bytes OpenSSL holds (SSL_pending on CURLINFO_TLS_SSL_PTR's SSL), or `socket`
// readable now (poll without waiting: bytes, or the peer's FIN). An idle HTTP/1.x connection has none; an origin
// that sent more than its Content-Length left the rest there, which the next response would be read from.
int ccurl_easy_input_waiting(CURL *handle, curl_socket_t socket);

// The local port of `socket` (getsockname), in host order; -1 when it has none.
int ccurl_socket_local_port(curl_socket_t socket);

// curl_multi_setopt for long options.
CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value);

// curl_share_setopt for long options (CURLSHOPT_SHARE, CURLSHOPT_UNSHARE with a CURL_LOCK_DATA_* value).
CURLSHcode ccurl_share_setopt_long(CURLSH *handle, CURLSHoption option, long value);

// The address a CURLOPT_OPENSOCKETFUNCTION callback is asked to connect to: its family (AF_INET or AF_INET6),
// copied as raw bytes (4 or 16) into `bytes`. Returns the byte count, or 0 for any other family.
int ccurl_sockaddr_address(const struct curl_sockaddr *address, uint8_t bytes[16]);

// The port of that address, in host order (0 for another family).
int ccurl_sockaddr_port(const struct curl_sockaddr *address);

// Opens the socket curl asked for, as curl would without a callback.
curl_socket_t ccurl_sockaddr_open(const struct curl_sockaddr *address);

// The sentinel values of curl's callbacks, which Swift does not import as constants.
curl_socket_t ccurl_socket_bad(void);
size_t ccurl_write_abort(void);
int ccurl_prereq_ok(void);
int ccurl_prereq_abort(void);

// --- Uploads (RichPushObjectStore): a whole request made with curl_easy_perform on a thread of its own. ---

// A response body kept up to its capacity (an object store's error document: its Code and Message); the rest is
// counted and dropped.
typedef struct ccurl_body_buffer {
    char data[8192];
    size_t length;
    size_t dropped;
} ccurl_body_buffer;

// CURLOPT_WRITEFUNCTION and CURLOPT_WRITEDATA: the body goes into `buffer`.
CURLcode ccurl_easy_collect_body(CURL *handle, ccurl_body_buffer *buffer);

// After curl_easy_perform: the value of the last response's header `name` (the last of them when repeated), or NULL
// when the response had none; libcurl's, valid until the next call on the handle.
const char *ccurl_easy_header_value(CURL *handle, const char *name);

// CURLOPT_XFERINFOFUNCTION, CURLOPT_XFERINFODATA and CURLOPT_NOPROGRESS 0: the transfer is aborted
// (CURLE_ABORTED_BY_CALLBACK) once `*flag` is non-zero, read atomically, so another thread can stop it.
CURLcode ccurl_easy_abort_when_set(CURL *handle, const int *flag);

// Sets `*flag` to 1, atomically (what stops a transfer given to ccurl_easy_abort_when_set).
void ccurl_flag_set(int *flag);

// `*flag`, read atomically.
int ccurl_flag_is_set(const int *flag);

#endif
