#define _GNU_SOURCE

#include "cvips.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// libvips is opened with dlopen at the first use, not linked: with its ~70 dependencies it doubled the start-up
// memory of every richpush process (15.7 to 30 MiB, 51 to 118 shared libraries), most of which never transform an
// image. Its API is declared here, as libvips 8.x (libvips42) defines it, for the calls below only.

typedef struct _VipsImage VipsImage;
typedef struct _VipsTarget VipsTarget;
typedef struct _VipsArea VipsArea;
typedef int gboolean;
typedef struct {
    const char *key;
    const void *value;
    long length;
} GLogField;  // GLib's, for the structured log's writer

enum { ACCESS_SEQUENTIAL = 1 };                   // VipsAccess's VIPS_ACCESS_SEQUENTIAL
enum { FAIL_ON_ERROR = 2, FAIL_ON_WARNING = 3 };  // VipsFailOn's VIPS_FAIL_ON_ERROR, VIPS_FAIL_ON_WARNING
enum { SIZE_DOWN = 2 };                           // VipsSize's VIPS_SIZE_DOWN
enum { FORMAT_UCHAR = 0, FORMAT_CHAR = 1, FORMAT_USHORT = 2, FORMAT_SHORT = 3 };  // VipsBandFormat's
enum { LOG_LEVEL_WARNING = 1 << 4 };              // GLogLevelFlags's G_LOG_LEVEL_WARNING (ERROR 1<<2, CRITICAL 1<<3)
enum { LOG_WRITER_HANDLED = 1 };                  // GLogWriterOutput's G_LOG_WRITER_HANDLED
#define MAX_COORD 10000000                        // VIPS_MAX_COORD
#define META_LOADER "vips-loader"

static struct {
    int (*init)(const char *argv0);
    void (*concurrency_set)(int concurrency);
    void (*cache_set_max)(int max);
    gboolean (*foreign_is_a)(const char *loader, const char *filename);
    gboolean (*foreign_is_a_buffer)(const char *loader, const void *data, size_t size);
    int (*jpegload)(const char *filename, VipsImage **out, ...);
    int (*pngload)(const char *filename, VipsImage **out, ...);
    int (*pngload_buffer)(void *buffer, size_t length, VipsImage **out, ...);
    int (*gifload)(const char *filename, VipsImage **out, ...);
    int (*webpload)(const char *filename, VipsImage **out, ...);
    int (*heifload)(const char *filename, VipsImage **out, ...);
    int (*svgload_buffer)(void *buffer, size_t length, VipsImage **out, ...);
    int (*tiffload)(const char *filename, VipsImage **out, ...);
    int (*magickload)(const char *filename, VipsImage **out, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_page_height)(VipsImage *image);
    int (*image_get_n_pages)(VipsImage *image);
    int (*image_get_bands)(const VipsImage *image);
    int (*image_get_format)(const VipsImage *image);
    gboolean (*image_hasalpha)(VipsImage *image);
    int (*image_get_string)(const VipsImage *image, const char *name, const char **out);
    void (*image_set_kill)(VipsImage *image, gboolean kill);
    void (*error)(const char *domain, const char *format, ...);
    const char *(*error_buffer)(void);
    void (*error_clear)(void);
    VipsTarget *(*target_new_to_descriptor)(int descriptor);
    int (*jpegsave_target)(VipsImage *in, VipsTarget *target, ...);
    int (*pngsave_target)(VipsImage *in, VipsTarget *target, ...);
    int (*gifsave_target)(VipsImage *in, VipsTarget *target, ...);
    int (*thumbnail_image)(VipsImage *in, VipsImage **out, int width, ...);
    int (*linear1)(VipsImage *in, VipsImage **out, double a, double b, ...);
    int (*cast)(VipsImage *in, VipsImage **out, int format, ...);
    int (*extract_band)(VipsImage *in, VipsImage **out, int band, ...);
    void *(*array_double_new)(const double *array, int n);
    int (*flatten)(VipsImage *in, VipsImage **out, ...);
    int (*avg)(VipsImage *in, double *out, ...);
    void (*area_unref)(VipsArea *area);
    void (*object_unref)(void *object);
    void (*log_set_default_handler)(void (*handler)(const char *, int, const char *, void *), void *data);
    void (*log_set_writer_func)(int (*writer)(int, const GLogField *, size_t, void *), void *data, void (*free)(void *));
} vips;

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_result = -1;
// Why libvips could not be opened, when it could not.
static char open_failure[256];

// libvips's error buffer is one for the process (libvips 8.14 has no other: iofuncs/error.c), so two conversions
// side by side mix their messages, and one clears the other's. Every libvips call runs side by side with the others;
// one that fails (and was not stopped) runs again alone, so that the buffer then holds its messages and nobody
// else's. One lock over every call would have made conversions take turns: 40 conversions of a 2400 x 1800 JPEG on
// two threads took 2.74-2.77 s serialized, 1.49-1.80 s side by side (libvips's own thumbnail loop, two cores,
// loaded). A failed image costs a second decode instead.
//
// `turns` keeps them. A failed call waiting for its turn alone holds new calls back, so that those running end and
// it gets its turn, but each new call for ALONE_PATIENCE_MS at most: a long conversion running, the failed call
// waits (at most ALONE_WAIT_MS), nobody else does. A failed call runs again only when its first run was short
// (ALONE_AFTER_MS): alone, it holds every other call. Before, an rwlock preferring writers: one failed image waiting
// behind one long conversion held every other libvips call of the process until that conversion ended (in a full
// test run a PNG conversion of 17 s or more held 20 others, and their payloads' deadlines passed; in a service, a
// slow image and a damaged one from any sender would have stalled every payload's transformation). glibc's rwlocks
// could not give this: preferring readers, three threads failing side by side found no moment alone in 2 s of a
// loaded run; preferring writers with a timed wait, the readers woken when a wait timed out found the writer
// waiting again before they ran.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;  // on CLOCK_MONOTONIC
    int running;             // calls running side by side
    int waiting_alone;       // failed calls waiting for their turn alone
    int alone;               // 1 while a failed call runs again alone
} turns = {PTHREAD_MUTEX_INITIALIZER};

// How long a failed call waits for its turn alone (past it, its failure is reported without libvips's message),
// and how long a new call waits for such a turn to come before it runs all the same.
#define ALONE_WAIT_MS 10000
#define ALONE_PATIENCE_MS 50
// A failed call whose first run took longer runs no second time: alone, it would hold every other call that long.
#define ALONE_AFTER_MS 1000

int cvips_calls_running(void) {
    pthread_mutex_lock(&turns.lock);
    int running = turns.running;
    pthread_mutex_unlock(&turns.lock);
    return running;
}

int cvips_calls_waiting_alone(void) {
    pthread_mutex_lock(&turns.lock);
    int waiting = turns.waiting_alone;
    pthread_mutex_unlock(&turns.lock);
    return waiting;
}

// GLib's log: libvips's warnings (VIPS-WARNING), and those of the libraries it routes there (libtiff, libjpeg,
// libheif, ImageMagick), went to standard error, which `serve` and `worker` keep for their access log, and tied to
// no payload. They are dropped; while a failed call runs again alone, its warnings are kept, as the detail of a
// failure that left no error message.
static struct {
    pthread_mutex_t lock;
    int keeping;
    char text[256];
} warnings = {PTHREAD_MUTEX_INITIALIZER, 0, ""};

static void on_log(const char *domain, int level, const char *message, void *data) {
    (void)domain;
    (void)data;
    // Info and debug messages (libvips sends some for every operation) are never kept.
    if ((level & (LOG_LEVEL_WARNING | (1 << 2) | (1 << 3))) == 0 || message == NULL) return;
    pthread_mutex_lock(&warnings.lock);
    if (warnings.keeping) {
        size_t used = strlen(warnings.text);
        snprintf(warnings.text + used, sizeof warnings.text - used, "%s%s", used > 0 ? "; " : "", message);
    }
    pthread_mutex_unlock(&warnings.lock);
}

// The writer of GLib's structured log (g_log_structured), which bypasses the handlers.
static int on_structured_log(int level, const GLogField *fields, size_t count, void *data) {
    for (size_t index = 0; index < count; index++) {
        if (strcmp(fields[index].key, "MESSAGE") == 0 && fields[index].length < 0) {
            on_log(NULL, level, fields[index].value, data);
        }
    }
    return LOG_WRITER_HANDLED;
}

#define LOAD(field, symbol)                                                                                  \
    do {                                                                                                     \
        *(void **)&vips.field = dlsym(library, symbol);                                                      \
        if (vips.field == NULL) {                                                                            \
            snprintf(open_failure, sizeof open_failure, "libvips.so.42 lacks %s", symbol);                  \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

// ImageMagick keeps an image's pixels on disk (a file in its temporary directory, /tmp, read by mapping it or by
// reads) once they exceed its memory limit: Debian's policy.xml allows 256 MiB of memory, then 1 GiB of disk. A
// 7,000 x 7,000 BMP of 407 KB (RLE) took 587 MB that way, and a process ending while ImageMagick read one (enrich
// past its deadline) left the file behind, up to 1 GiB each time. Its disk limit is set to none here, once its
// library is loaded: an image that needs more than the memory limit fails ("cache resources exhausted") instead.
// ImageMagick's resource type DiskResource is 2 (magick/resource_.h, ImageMagick 6); a library without the call
// is left as it is.
static void forbid_magick_disk(void) {
    void *magick = dlopen("libMagickCore-6.Q16.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (magick == NULL) return;
    int (*set_limit)(int, unsigned long long);
    *(void **)&set_limit = dlsym(magick, "SetMagickResourceLimit");
    if (set_limit != NULL) (void)set_limit(2, 0);
    dlclose(magick);
}

static void start(void) {
    void *library = dlopen("libvips.so.42", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(open_failure, sizeof open_failure, "cannot open libvips: %s", dlerror());
        return;
    }
    LOAD(init, "vips_init");
    LOAD(concurrency_set, "vips_concurrency_set");
    LOAD(cache_set_max, "vips_cache_set_max");
    LOAD(foreign_is_a, "vips_foreign_is_a");
    LOAD(foreign_is_a_buffer, "vips_foreign_is_a_buffer");
    LOAD(jpegload, "vips_jpegload");
    LOAD(pngload, "vips_pngload");
    LOAD(pngload_buffer, "vips_pngload_buffer");
    LOAD(gifload, "vips_gifload");
    LOAD(webpload, "vips_webpload");
    LOAD(heifload, "vips_heifload");
    LOAD(svgload_buffer, "vips_svgload_buffer");
    LOAD(tiffload, "vips_tiffload");
    LOAD(magickload, "vips_magickload");
    LOAD(image_get_width, "vips_image_get_width");
    LOAD(image_get_page_height, "vips_image_get_page_height");
    LOAD(image_get_n_pages, "vips_image_get_n_pages");
    LOAD(image_get_bands, "vips_image_get_bands");
    LOAD(image_get_format, "vips_image_get_format");
    LOAD(image_hasalpha, "vips_image_hasalpha");
    LOAD(image_get_string, "vips_image_get_string");
    LOAD(image_set_kill, "vips_image_set_kill");
    LOAD(error, "vips_error");
    LOAD(error_buffer, "vips_error_buffer");
    LOAD(error_clear, "vips_error_clear");
    LOAD(target_new_to_descriptor, "vips_target_new_to_descriptor");
    LOAD(jpegsave_target, "vips_jpegsave_target");
    LOAD(pngsave_target, "vips_pngsave_target");
    LOAD(gifsave_target, "vips_gifsave_target");
    LOAD(thumbnail_image, "vips_thumbnail_image");
    LOAD(linear1, "vips_linear1");
    LOAD(cast, "vips_cast");
    LOAD(extract_band, "vips_extract_band");
    LOAD(array_double_new, "vips_array_double_new");
    LOAD(flatten, "vips_flatten");
    LOAD(avg, "vips_avg");
    LOAD(area_unref, "vips_area_unref");
    // glib's, found through libvips's own dependencies.
    LOAD(object_unref, "g_object_unref");
    LOAD(log_set_default_handler, "g_log_set_default_handler");
    LOAD(log_set_writer_func, "g_log_set_writer_func");
    // Before libvips starts: it warns while loading its modules too.
    vips.log_set_default_handler(on_log, NULL);
    vips.log_set_writer_func(on_structured_log, NULL, NULL);
    pthread_condattr_t attributes;
    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&turns.changed, &attributes);
    pthread_condattr_destroy(&attributes);
    if (vips.init("richpush") != 0) {
        snprintf(open_failure, sizeof open_failure, "vips_init failed: %s", vips.error_buffer());
        return;
    }
    // One image at a time per call; the pool above bounds concurrency. No operation cache: every input is new.
    vips.concurrency_set(1);
    vips.cache_set_max(0);
    // The first time libvips asks ImageMagick anything (magickload, for BMP alone), it has it open every one of its
    // 122 coder modules (libvips's magick_genesis: GetMagickInfo("*")), a dlopen each, holding the dynamic loader's
    // lock, during which no thread in the process can be created (pthread_create waits for it, and the fetch loop
    // makes one for every name it resolves). 23-39 ms on a quiet machine, seconds on a loaded one (the test process's
    // cooperative threads stalled 3-6 s behind it). Asked here, with 16 zero bytes that no format claims, the cost
    // joins the one pause opening libvips already is, instead of a second one at the first BMP.
    static const unsigned char nothing[16];
    (void)vips.foreign_is_a_buffer("magickload_buffer", nothing, sizeof nothing);
    forbid_magick_disk();
    start_result = 0;
}

int cvips_start(void) {
    pthread_once(&started, start);
    return start_result;
}

struct cvips_stop {
    pthread_mutex_t lock;
    VipsImage *image;  // the image being computed, while there is one
    int stopped;
};

struct cvips_stop *cvips_stop_new(void) {
    struct cvips_stop *stop = calloc(1, sizeof *stop);
    if (stop == NULL) abort();
    pthread_mutex_init(&stop->lock, NULL);
    return stop;
}

void cvips_stop_free(struct cvips_stop *stop) {
    pthread_mutex_destroy(&stop->lock);
    free(stop);
}

void cvips_stop_fire(struct cvips_stop *stop) {
    pthread_mutex_lock(&stop->lock);
    stop->stopped = 1;
    if (stop->image != NULL) vips.image_set_kill(stop->image, 1);
    pthread_mutex_unlock(&stop->lock);
}

// Registers `image` as the one `cvips_stop_fire` kills (NULL unregisters); returns whether it was fired already.
static int watch(struct cvips_stop *stop, VipsImage *image) {
    pthread_mutex_lock(&stop->lock);
    stop->image = image;
    if (image != NULL && stop->stopped) vips.image_set_kill(image, 1);
    int stopped = stop->stopped;
    pthread_mutex_unlock(&stop->lock);
    return stopped;
}

static int is_stopped(struct cvips_stop *stop) {
    pthread_mutex_lock(&stop->lock);
    int stopped = stop->stopped;
    pthread_mutex_unlock(&stop->lock);
    return stopped;
}

// Copies `text` into `error`, its lines joined by "; ", without the trailing ones.
static void copy_lines(const char *text, char *error, size_t size) {
    size_t used = 0;
    for (const char *cursor = text; *cursor != '\0' && used + 1 < size; cursor++) {
        if (*cursor != '\n') {
            error[used++] = *cursor;
        } else if (cursor[1] != '\0' && used + 3 < size) {
            error[used++] = ';';
            error[used++] = ' ';
        }
    }
    error[used] = '\0';
}

static long long milliseconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

// `deadline` (CLOCK_MONOTONIC milliseconds) as a timespec.
static struct timespec timespec_at(long long deadline) {
    struct timespec at = {.tv_sec = deadline / 1000, .tv_nsec = (deadline % 1000) * 1000000};
    return at;
}

// Enters a call side by side with the others: after any call running alone, and after a failed call's turn alone
// for at most ALONE_PATIENCE_MS.
static void enter(void) {
    pthread_mutex_lock(&turns.lock);
    long long patience = milliseconds_now() + ALONE_PATIENCE_MS;
    while (turns.alone || (turns.waiting_alone > 0 && milliseconds_now() < patience)) {
        struct timespec at = timespec_at(patience);
        if (turns.alone) {
            pthread_cond_wait(&turns.changed, &turns.lock);
        } else {
            pthread_cond_timedwait(&turns.changed, &turns.lock, &at);
        }
    }
    turns.running += 1;
    pthread_mutex_unlock(&turns.lock);
}

static void leave(void) {
    pthread_mutex_lock(&turns.lock);
    turns.running -= 1;
    if (turns.running == 0) pthread_cond_broadcast(&turns.changed);
    pthread_mutex_unlock(&turns.lock);
}

// Waits until no call runs, up to ALONE_WAIT_MS (seeing `stop` every 50 ms), and then holds every new call back
// until `leave_alone`: 1 when alone, -1 when `stop` fired meanwhile, 0 when the time ran out.
static int enter_alone(struct cvips_stop *stop) {
    long long end = milliseconds_now() + ALONE_WAIT_MS;
    int taken = 0;
    pthread_mutex_lock(&turns.lock);
    turns.waiting_alone += 1;
    for (;;) {
        if (!turns.alone && turns.running == 0) {
            turns.alone = 1;
            taken = 1;
            break;
        }
        if (stop != NULL && is_stopped(stop)) {
            taken = -1;
            break;
        }
        long long now = milliseconds_now();
        if (now >= end) break;
        struct timespec at = timespec_at(now + 50 < end ? now + 50 : end);
        pthread_cond_timedwait(&turns.changed, &turns.lock, &at);
    }
    turns.waiting_alone -= 1;
    // Calls held back for this turn go in when it was not taken.
    if (taken != 1) pthread_cond_broadcast(&turns.changed);
    pthread_mutex_unlock(&turns.lock);
    return taken;
}

static void leave_alone(void) {
    pthread_mutex_lock(&turns.lock);
    turns.alone = 0;
    pthread_cond_broadcast(&turns.changed);
    pthread_mutex_unlock(&turns.lock);
}

// Runs `body` (a cvips_status) side by side with other calls; when it fails, unless `stop` fired or the loader did
// not claim the bytes, runs it again alone, after `reset`, and copies libvips's messages for that run into
// `error` (else its warnings, else ""). A first run longer than ALONE_AFTER_MS, or no turn alone within
// ALONE_WAIT_MS, gives a message that says so instead. Any libvips call that can fail goes through here.
static int attributed(int (*body)(void *), void (*reset)(void *), void *context, struct cvips_stop *stop,
                      char *error, size_t size) {
    error[0] = '\0';
    enter();
    long long started = milliseconds_now();
    int status = body(context);
    leave();
    if (status != CVIPS_FAILED) return status;
    if (stop != NULL && is_stopped(stop)) {
        snprintf(error, size, "stopped");
        return status;
    }
    long long took = milliseconds_now() - started;
    if (took > ALONE_AFTER_MS) {
        snprintf(error, size,
                 "libvips failed after %lld ms (its own message is not kept for a call that long: running it again "
                 "alone would hold every other conversion)",
                 took);
        return status;
    }
    switch (enter_alone(stop)) {
    case 1:
        break;
    case -1:
        snprintf(error, size, "stopped");
        return status;
    default:
        snprintf(error, size,
                 "libvips failed (its own message is not known: other conversions ran throughout the %d ms it waited "
                 "to run again alone)",
                 ALONE_WAIT_MS);
        return status;
    }
    vips.error_clear();
    pthread_mutex_lock(&warnings.lock);
    warnings.keeping = 1;
    warnings.text[0] = '\0';
    pthread_mutex_unlock(&warnings.lock);
    if (reset != NULL) reset(context);
    status = body(context);
    if (status == CVIPS_FAILED) copy_lines(vips.error_buffer(), error, size);
    vips.error_clear();
    pthread_mutex_lock(&warnings.lock);
    warnings.keeping = 0;
    if (status == CVIPS_FAILED && error[0] == '\0') snprintf(error, size, "%s", warnings.text);
    pthread_mutex_unlock(&warnings.lock);
    leave_alone();
    return status;
}

static const char *const loader_names[] = {
    [CVIPS_JPEGLOAD] = "jpegload", [CVIPS_PNGLOAD] = "pngload",   [CVIPS_GIFLOAD] = "gifload",
    [CVIPS_WEBPLOAD] = "webpload", [CVIPS_HEIFLOAD] = "heifload", [CVIPS_SVGLOAD] = "svgload_buffer",
    [CVIPS_TIFFLOAD] = "tiffload", [CVIPS_BMPLOAD] = "magickload",
};

// Whether the input's loader recognises its bytes (libvips's own sniffer for that loader, nothing else).
static int claims(const struct cvips_input *input) {
    if ((unsigned)input->loader > CVIPS_BMPLOAD) return 0;
    const char *name = loader_names[input->loader];
    if (input->loader == CVIPS_SVGLOAD) return vips.foreign_is_a_buffer(name, input->document, input->length);
    return vips.foreign_is_a(name, input->path);
}

// How a conversion shrinks while it decodes: JPEG by 1, 2, 4 or 8; WebP and SVG by any scale.
struct reduction {
    int shrink;
    double scale;
};

// Opens `input` with its loader, lazily (sequential access): every frame when `animated`, else the first (page 0
// and the main image of a TIFF). NULL on failure, with libvips's message.
static VipsImage *open_input(const struct cvips_input *input, int animated, struct reduction reduction) {
    VipsImage *image = NULL;
    int frames = animated ? -1 : 1;
    int failed = -1;
    switch (input->loader) {
    case CVIPS_JPEGLOAD:
        failed = vips.jpegload(input->path, &image, "access", ACCESS_SEQUENTIAL, "shrink", reduction.shrink, NULL);
        break;
    case CVIPS_PNGLOAD:
        failed = vips.pngload(input->path, &image, "access", ACCESS_SEQUENTIAL, NULL);
        break;
    case CVIPS_GIFLOAD:
        failed = vips.gifload(input->path, &image, "access", ACCESS_SEQUENTIAL, "n", frames, NULL);
        break;
    case CVIPS_WEBPLOAD:
        failed = vips.webpload(input->path, &image, "access", ACCESS_SEQUENTIAL, "n", frames, "scale", reduction.scale,
                               NULL);
        break;
    case CVIPS_HEIFLOAD:
        failed = vips.heifload(input->path, &image, "access", ACCESS_SEQUENTIAL, NULL);
        break;
    case CVIPS_SVGLOAD:
        failed = vips.svgload_buffer((void *)input->document, input->length, &image, "access", ACCESS_SEQUENTIAL,
                                     "scale", reduction.scale, NULL);
        break;
    case CVIPS_TIFFLOAD:
        // Explicitly: libvips's thumbnail, given an unbounded target, picked the smallest level of a pyramid.
        failed = vips.tiffload(input->path, &image, "access", ACCESS_SEQUENTIAL, "page", 0, "n", 1, "subifd", -1,
                               NULL);
        break;
    case CVIPS_BMPLOAD: {
        // ImageMagick picks its coder from the bytes and the name (its TGA coder took an animated AVIF); a "BMP:"
        // prefix names the BMP coder, and nothing else of ImageMagick reads the file.
        size_t length = strlen(input->path) + 5;
        char *named = malloc(length);
        if (named == NULL) abort();
        snprintf(named, length, "BMP:%s", input->path);
        failed = vips.magickload(named, &image, "access", ACCESS_SEQUENTIAL, NULL);
        free(named);
        break;
    }
    }
    if (failed != 0) {
        if (image != NULL) vips.object_unref(image);
        return NULL;
    }
    return image;
}

// Replaces `*image` by `made` (the result of an operation on it), or fails.
static int step(VipsImage **image, int failed, VipsImage *made) {
    vips.object_unref(*image);
    *image = made;
    return failed == 0 && made != NULL ? 0 : -1;
}

// Makes the decoded image one the savers write faithfully: signed samples (a TIFF's) shifted into the unsigned
// range (a cast alone clipped every negative value to 0: near-black), and an alpha band that is no alpha dropped.
static int normalize(VipsImage **image, const struct cvips_input *input) {
    VipsImage *made = NULL;
    switch (vips.image_get_format(*image)) {
    case FORMAT_CHAR:
        if (step(image, vips.linear1(*image, &made, 1.0, 128.0, "uchar", 1, NULL), made) != 0) return -1;
        break;
    case FORMAT_SHORT:
        if (step(image, vips.linear1(*image, &made, 1.0, 32768.0, NULL), made) != 0) return -1;
        made = NULL;
        if (step(image, vips.cast(*image, &made, FORMAT_USHORT, NULL), made) != 0) return -1;
        break;
    default:
        break;
    }
    if (input->opaque && vips.image_hasalpha(*image)) {
        int bands = vips.image_get_bands(*image);
        made = NULL;
        if (step(image, vips.extract_band(*image, &made, 0, "n", bands - 1, NULL), made) != 0) return -1;
    }
    return 0;
}

struct probe {
    const struct cvips_input *input;
    struct cvips_header *header;
};

static int probe_once(void *context) {
    struct probe *probe = context;
    if (!claims(probe->input)) return CVIPS_NOT_CLAIMED;
    VipsImage *image = open_input(probe->input, 0, (struct reduction){1, 1.0});
    if (image == NULL) return CVIPS_FAILED;
    struct cvips_header *header = probe->header;
    header->width = vips.image_get_width(image);
    header->height = vips.image_get_page_height(image);
    header->pages = vips.image_get_n_pages(image);
    header->bands = vips.image_get_bands(image);
    header->has_alpha = vips.image_hasalpha(image) && !probe->input->opaque;
    const char *loader = NULL;
    if (vips.image_get_string(image, META_LOADER, &loader) != 0 || loader == NULL) loader = "";
    snprintf(header->loader, sizeof header->loader, "%s", loader);
    vips.object_unref(image);
    return CVIPS_OK;
}

int cvips_probe(const struct cvips_input *input, struct cvips_header *header, char *error, size_t size) {
    if (cvips_start() != 0) {
        snprintf(error, size, "%s", open_failure[0] != '\0' ? open_failure : "libvips is not started");
        return CVIPS_FAILED;
    }
    struct probe probe = {input, header};
    return attributed(probe_once, NULL, &probe, NULL, error, size);
}

static int save(VipsImage *image, int fd, enum cvips_format format, int quality) {
    VipsTarget *target = vips.target_new_to_descriptor(fd);
    if (target == NULL) return -1;
    int failed;
    switch (format) {
    case CVIPS_JPEG:
        failed = vips.jpegsave_target(image, target, "Q", quality, "strip", 1, NULL);
        break;
    case CVIPS_PNG:
        failed = vips.pngsave_target(image, target, "strip", 1, NULL);
        break;
    default:
        failed = vips.gifsave_target(image, target, "strip", 1, NULL);
        break;
    }
    vips.object_unref(target);
    return failed;
}

struct conversion {
    const struct cvips_input *input;
    int output;
    enum cvips_format format;
    int max_side;
    int quality;
    int animated;
    struct cvips_stop *stop;
    int width;
    int height;
};

// How much the loader itself shrinks an image whose longest side is `longest` towards `bound`, leaving the rest
// (and the exact size) to vips_thumbnail_image, as vips_thumbnail does.
static struct reduction reduction_for(enum cvips_loader loader, int longest, int bound) {
    struct reduction reduction = {1, 1.0};
    if (longest <= bound) return reduction;
    if (loader == CVIPS_JPEGLOAD) {
        while (reduction.shrink < 8 && longest / (reduction.shrink * 2) >= bound) reduction.shrink *= 2;
    } else if (loader == CVIPS_WEBPLOAD || loader == CVIPS_SVGLOAD) {
        reduction.scale = (double)bound / longest;
    }
    return reduction;
}

static int convert_once(void *context) {
    struct conversion *conversion = context;
    const struct cvips_input *input = conversion->input;
    if (!claims(input)) return CVIPS_NOT_CLAIMED;
    int bound = conversion->max_side > 0 ? conversion->max_side : MAX_COORD;
    VipsImage *image = open_input(input, conversion->animated, (struct reduction){1, 1.0});
    if (image == NULL) return CVIPS_FAILED;
    int longest = vips.image_get_width(image);
    if (vips.image_get_page_height(image) > longest) longest = vips.image_get_page_height(image);
    struct reduction reduction = reduction_for(input->loader, longest, bound);
    if (reduction.shrink != 1 || reduction.scale != 1.0) {
        vips.object_unref(image);
        if ((image = open_input(input, conversion->animated, reduction)) == NULL) return CVIPS_FAILED;
    }
    VipsImage *made = NULL;
    int failed = normalize(&image, input);
    // Resized to fit (never enlarged), turned upright by its orientation, in sRGB.
    if (failed == 0) failed = step(&image, vips.thumbnail_image(image, &made, bound, "height", bound, "size", SIZE_DOWN,
                                                                NULL), made);
    if (failed == 0 && conversion->format == CVIPS_JPEG && vips.image_hasalpha(image)) {
        // JPEG has no alpha: flatten onto white first.
        double white[3] = {255, 255, 255};
        void *background = vips.array_double_new(white, 3);
        made = NULL;
        failed = step(&image, vips.flatten(image, &made, "background", background, NULL), made);
        vips.area_unref(background);
    }
    if (failed == 0) {
        if (watch(conversion->stop, image)) {
            vips.error("cvips", "stopped");
            failed = -1;
        } else {
            failed = save(image, conversion->output, conversion->format, conversion->quality);
        }
        watch(conversion->stop, NULL);
    }
    if (failed == 0) {
        conversion->width = vips.image_get_width(image);
        conversion->height = vips.image_get_page_height(image);
    }
    if (image != NULL) vips.object_unref(image);
    return failed == 0 ? CVIPS_OK : CVIPS_FAILED;
}

// Empties the output a failed attempt may have begun.
static void rewind_output(void *context) {
    struct conversion *conversion = context;
    if (ftruncate(conversion->output, 0) == 0) lseek(conversion->output, 0, SEEK_SET);
}

int cvips_convert(const struct cvips_input *input, int output, enum cvips_format format, int max_side, int quality,
                  int animated, struct cvips_stop *stop, int *width, int *height, char *error, size_t size) {
    if (cvips_start() != 0) {
        snprintf(error, size, "%s", open_failure[0] != '\0' ? open_failure : "libvips is not started");
        return CVIPS_FAILED;
    }
    struct conversion conversion = {input, output, format, max_side, quality, animated, stop, 0, 0};
    int status = attributed(convert_once, rewind_output, &conversion, stop, error, size);
    *width = conversion.width;
    *height = conversion.height;
    return status;
}

struct verification {
    enum cvips_format format;
    const char *path;
    const void *bytes;
    size_t length;
    struct cvips_stop *stop;
};

static int verify_once(void *context) {
    struct verification *verification = context;
    VipsImage *image = NULL;
    int failed;
    switch (verification->format) {
    case CVIPS_JPEG:
        // libjpeg reports a premature end and corrupt data as warnings (it fills the rest in grey).
        failed = vips.jpegload(verification->path, &image, "shrink", 8, "fail_on", FAIL_ON_WARNING, "access",
                               ACCESS_SEQUENTIAL, NULL);
        break;
    case CVIPS_PNG:
        failed = vips.pngload_buffer((void *)verification->bytes, verification->length, &image, "fail_on",
                                     FAIL_ON_ERROR, "access", ACCESS_SEQUENTIAL, NULL);
        break;
    default:
        failed = vips.gifload(verification->path, &image, "n", -1, "fail_on", FAIL_ON_ERROR, "access",
                              ACCESS_SEQUENTIAL, NULL);
        break;
    }
    if (failed == 0) {
        double average = 0;
        if (watch(verification->stop, image)) {
            vips.error("cvips", "stopped");
            failed = -1;
        } else {
            // The average reads every pixel: the whole image is decoded, and nothing is kept.
            failed = vips.avg(image, &average, NULL);
        }
        watch(verification->stop, NULL);
    }
    if (image != NULL) vips.object_unref(image);
    return failed == 0 ? CVIPS_OK : CVIPS_FAILED;
}

int cvips_verify(enum cvips_format format, const char *path, const void *bytes, size_t length,
                 struct cvips_stop *stop, char *error, size_t size) {
    if (cvips_start() != 0) {
        snprintf(error, size, "%s", open_failure[0] != '\0' ? open_failure : "libvips is not started");
        return CVIPS_FAILED;
    }
    struct verification verification = {format, path, bytes, length, stop};
    return attributed(verify_once, NULL, &verification, stop, error, size);
}
