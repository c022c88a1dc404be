#include "cmagic.h"

#include <magic.h>
#include <stdio.h>

// MAGIC_NO_CHECK_COMPRESS: never look inside compressed data (we never decompress). MAGIC_ERROR: report errors
// rather than printing them.
static int cmagic_flags(int mime) {
    return MAGIC_ERROR | MAGIC_NO_CHECK_COMPRESS | (mime ? MAGIC_MIME_TYPE : 0);
}

int cmagic_set_mime(cmagic_handle *handle, int mime) { return magic_setflags((magic_t)handle, cmagic_flags(mime)); }

cmagic_handle *cmagic_open(int mime, char *error, size_t error_size) {
    int flags = cmagic_flags(mime);
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
