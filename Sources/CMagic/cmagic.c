#include "cmagic.h"

#include <magic.h>
#include <stdio.h>

cmagic_handle *cmagic_open(int mime, char *error, size_t error_size) {
    // MAGIC_NO_CHECK_COMPRESS: never look inside compressed data (we never decompress). MAGIC_ERROR: report
    // errors rather than printing them.
    int flags = MAGIC_ERROR | MAGIC_NO_CHECK_COMPRESS;
    if (mime) flags |= MAGIC_MIME_TYPE;
    magic_t cookie = magic_open(flags);
    if (cookie == NULL) {
        snprintf(error, error_size, "magic_open failed");
        return NULL;
    }
    if (magic_load(cookie, NULL) != 0) {
        const char *text = magic_error(cookie);
        snprintf(error, error_size, "magic_load: %s", text ? text : "unknown error");
        magic_close(cookie);
        return NULL;
    }
    return (cmagic_handle *)cookie;
}

const char *cmagic_buffer(cmagic_handle *handle, const void *bytes, size_t length) {
    return magic_buffer((magic_t)handle, bytes, length);
}

const char *cmagic_error(cmagic_handle *handle) { return magic_error((magic_t)handle); }

void cmagic_close(cmagic_handle *handle) { magic_close((magic_t)handle); }
