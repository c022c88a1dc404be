#include "cmagic.h"

#define _GNU_SOURCE
#include <magic.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// MAGIC_NO_CHECK_COMPRESS: never look inside compressed data (we never decompress). MAGIC_ERROR: report errors
// rather than printing them. Without `text`, libmagic's text family (text, encodings, tokens, CSV, JSON) is
// skipped: no type iOS attaches is text, and those checks cost up to 100 ms on 4 KB of newlines (measured,
// file 5.44) against under 2 ms for the rest.
static int cmagic_flags(int mime, int text) {
    int flags = MAGIC_ERROR | MAGIC_NO_CHECK_COMPRESS | (mime ? MAGIC_MIME_TYPE : 0);
    if (!text) {
        flags |= MAGIC_NO_CHECK_TEXT | MAGIC_NO_CHECK_ENCODING | MAGIC_NO_CHECK_TOKENS | MAGIC_NO_CHECK_CSV |
                 MAGIC_NO_CHECK_JSON;
    }
    return flags;
}

int cmagic_set_mode(cmagic_handle *handle, int mime, int text) {
    return magic_setflags((magic_t)handle, cmagic_flags(mime, text));
}

cmagic_handle *cmagic_open(char *error, size_t error_size) {
    int flags = cmagic_flags(1, 0);
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

// The signature rules, in libmagic's source format: each names a supported type by the bytes that open every
// file of it, with the MIME type the system's database gives such a file (tested against it: SnifferTests).
// A JPEG needs a fourth byte, as the system's rule does; an ISO Media file a box size under 256 (its first three
// bytes zero), as every `ftyp` box is, so that no random size field reads as ISO Media.
static const char cmagic_signature_rules[] =
    "0\tstring\t\\xff\\xd8\\xff\n"
    ">3\tbyte\tx\tJPEG image data\n"
    "!:mime\timage/jpeg\n"
    "0\tstring\t\\x89PNG\\x0d\\x0a\\x1a\\x0a\\x00\\x00\\x00\\x0dIHDR\tPNG image data\n"
    "!:mime\timage/png\n"
    "0\tstring\tGIF87a\tGIF image data, version 87a\n"
    "!:mime\timage/gif\n"
    "0\tstring\tGIF89a\tGIF image data, version 89a\n"
    "!:mime\timage/gif\n"
    "0\tstring\tRIFF\n"
    ">8\tstring\tWAVE\tRIFF WAVE audio\n"
    "!:mime\taudio/x-wav\n"
    ">8\tstring\tAVI\\x20\tRIFF AVI video\n"
    "!:mime\tvideo/x-msvideo\n"
    "0\tstring\tFORM\n"
    ">8\tstring\tAIFF\tIFF AIFF audio\n"
    "!:mime\taudio/x-aiff\n"
    "0\tbelong&0xffffff00\t0\n"
    ">4\tstring\tftypisom\tISO Media, MP4 base media\n"
    "!:mime\tvideo/mp4\n"
    ">4\tstring\tftypmp41\tISO Media, MP4 v1\n"
    "!:mime\tvideo/mp4\n"
    ">4\tstring\tftypmp42\tISO Media, MP4 v2\n"
    "!:mime\tvideo/mp4\n"
    ">4\tstring\tftypM4A\\x20\tISO Media, Apple M4A audio\n"
    "!:mime\taudio/x-m4a\n";

cmagic_handle *cmagic_open_signatures(char *error, size_t error_size) {
    // libmagic loads rules from a path only: a file in memory, named by /proc, never one on disk.
    int descriptor = memfd_create("richpush-signatures", MFD_CLOEXEC);
    if (descriptor < 0) {
        snprintf(error, error_size, "memfd_create: %s", strerror(errno));
        return NULL;
    }
    size_t length = sizeof cmagic_signature_rules - 1;
    if (write(descriptor, cmagic_signature_rules, length) != (ssize_t)length) {
        snprintf(error, error_size, "write of the signature rules failed");
        close(descriptor);
        return NULL;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", descriptor);
    magic_t cookie = magic_open(cmagic_flags(1, 0));
    if (cookie == NULL) {
        snprintf(error, error_size, "magic_open failed");
        close(descriptor);
        return NULL;
    }
    int loaded = magic_load(cookie, path);
    close(descriptor);
    if (loaded != 0) {
        const char *text = magic_error(cookie);
        snprintf(error, error_size, "magic_load of the signature rules: %s", text ? text : "unknown error");
        magic_close(cookie);
        return NULL;
    }
    return (cmagic_handle *)cookie;
}
