#ifndef CMAGIC_H
#define CMAGIC_H

// Thin wrappers over libmagic, so that the Swift side never names magic_t.

#include <stddef.h>

typedef struct cmagic_handle cmagic_handle;

// magic_open(flags) + magic_load(NULL): the system's compiled magic database. Returns NULL on failure and
// copies magic_error() into `error` (at most error_size bytes, NUL-terminated).
cmagic_handle *cmagic_open(char *error, size_t error_size);

// magic_setflags: MIME-type output (mime = 1) or descriptions (mime = 0); with text = 0, libmagic's text checks
// (text, encodings, tokens, CSV, JSON) are skipped. Returns 0 on success.
int cmagic_set_mode(cmagic_handle *handle, int mime, int text);

// magic_buffer: a description (or a MIME type when opened with mime = 1) of the bytes, or NULL.
const char *cmagic_buffer(cmagic_handle *handle, const void *bytes, size_t length);

// magic_error: the last error's text, or NULL.
const char *cmagic_error(cmagic_handle *handle);

// magic_close.
void cmagic_close(cmagic_handle *handle);

#endif
