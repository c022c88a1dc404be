#include "cvips.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// libvips is opened with dlopen at the first use, not linked: with its ~70 dependencies it doubled the start-up
// memory of every richpush process (15.7 to 30 MiB, 51 to 118 shared libraries), most of which never transform an
// image. Its API is declared here, as libvips 8.x (libvips42) defines it, for the calls below only.

typedef struct _VipsImage VipsImage;
typedef struct _VipsTarget VipsTarget;
typedef struct _VipsArea VipsArea;
typedef int gboolean;

enum { ACCESS_SEQUENTIAL = 1 };  // VipsAccess's VIPS_ACCESS_SEQUENTIAL
enum { SIZE_DOWN = 2 };          // VipsSize's VIPS_SIZE_DOWN
#define MAX_COORD 10000000       // VIPS_MAX_COORD
#define META_LOADER "vips-loader"

static struct {
    int (*init)(const char *argv0);
    void (*concurrency_set)(int concurrency);
    void (*cache_set_max)(int max);
    const char *(*foreign_find_load)(const char *filename);
    int (*svgload_buffer)(void *buffer, size_t length, VipsImage **out, ...);
    VipsImage *(*image_new_from_file)(const char *name, ...);
    int (*image_get_width)(const VipsImage *image);
    int (*image_get_page_height)(VipsImage *image);
    int (*image_get_n_pages)(VipsImage *image);
    int (*image_get_bands)(const VipsImage *image);
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
    int (*thumbnail)(const char *filename, VipsImage **out, int width, ...);
    int (*thumbnail_buffer)(void *buffer, size_t length, VipsImage **out, int width, ...);
    void *(*array_double_new)(const double *array, int n);
    int (*flatten)(VipsImage *in, VipsImage **out, ...);
    void (*area_unref)(VipsArea *area);
    void (*object_unref)(void *object);
    gboolean (*file_get_contents)(const char *filename, char **contents, size_t *length, void **error);
    void (*free)(void *memory);
} vips;

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_result = -1;
// Why libvips could not be opened, when it could not.
static char open_failure[256];

#define LOAD(field, symbol)                                                                                  \
    do {                                                                                                     \
        *(void **)&vips.field = dlsym(library, symbol);                                                      \
        if (vips.field == NULL) {                                                                            \
            snprintf(open_failure, sizeof open_failure, "libvips.so.42 lacks %s", symbol);                  \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

// The loaders and the sink of cvips_verify.
static struct {
    int (*jpegload)(const char *filename, VipsImage **out, ...);
    int (*gifload)(const char *filename, VipsImage **out, ...);
    int (*pngload_buffer)(void *buffer, size_t length, VipsImage **out, ...);
    int (*avg)(VipsImage *in, double *out, ...);
} verifying;

enum { FAIL_ON_ERROR = 2, FAIL_ON_WARNING = 3 };  // VipsFailOn's VIPS_FAIL_ON_ERROR, VIPS_FAIL_ON_WARNING

static int load_verifying(void *library) {
    const char *symbols[] = {"vips_jpegload", "vips_gifload", "vips_pngload_buffer", "vips_avg"};
    void **fields[] = {(void **)&verifying.jpegload, (void **)&verifying.gifload, (void **)&verifying.pngload_buffer,
                       (void **)&verifying.avg};
    for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        if ((*fields[i] = dlsym(library, symbols[i])) == NULL) {
            snprintf(open_failure, sizeof open_failure, "libvips.so.42 lacks %s", symbols[i]);
            return 0;
        }
    }
    return 1;
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
    LOAD(foreign_find_load, "vips_foreign_find_load");
    LOAD(svgload_buffer, "vips_svgload_buffer");
    LOAD(image_new_from_file, "vips_image_new_from_file");
    LOAD(image_get_width, "vips_image_get_width");
    LOAD(image_get_page_height, "vips_image_get_page_height");
    LOAD(image_get_n_pages, "vips_image_get_n_pages");
    LOAD(image_get_bands, "vips_image_get_bands");
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
    LOAD(thumbnail, "vips_thumbnail");
    LOAD(thumbnail_buffer, "vips_thumbnail_buffer");
    LOAD(array_double_new, "vips_array_double_new");
    LOAD(flatten, "vips_flatten");
    LOAD(area_unref, "vips_area_unref");
    // glib's, found through libvips's own dependencies.
    LOAD(object_unref, "g_object_unref");
    LOAD(file_get_contents, "g_file_get_contents");
    LOAD(free, "g_free");
    if (!load_verifying(library)) return;
    if (vips.init("richpush") != 0) {
        snprintf(open_failure, sizeof open_failure, "vips_init failed: %s", vips.error_buffer());
        return;
    }
    // One image at a time per call; the pool above bounds concurrency. No operation cache: every input is new.
    vips.concurrency_set(1);
    vips.cache_set_max(0);
    start_result = 0;
}

int cvips_start(void) {
    pthread_once(&started, start);
    return start_result;
}

static int is_svg(const char *path) {
    const char *loader = vips.foreign_find_load(path);
    return loader != NULL && strstr(loader, "svg") != NULL;
}

// The file's bytes, for loaders that must not know where the file is. NULL on failure.
static void *read_all(const char *path, size_t *length) {
    char *contents = NULL;
    size_t size = 0;
    if (!vips.file_get_contents(path, &contents, &size, NULL)) {
        vips.error("cvips", "cannot read %s", path);
        return NULL;
    }
    *length = size;
    return contents;
}

int cvips_probe(const char *path, struct cvips_header *header) {
    if (cvips_start() != 0) return -1;
    VipsImage *image = NULL;
    void *bytes = NULL;
    if (is_svg(path)) {
        size_t length = 0;
        if ((bytes = read_all(path, &length)) == NULL) return -1;
        if (vips.svgload_buffer(bytes, length, &image, "access", ACCESS_SEQUENTIAL, NULL) != 0) image = NULL;
    } else {
        image = vips.image_new_from_file(path, "access", ACCESS_SEQUENTIAL, NULL);
    }
    if (image == NULL) {
        vips.free(bytes);
        return -1;
    }
    header->width = vips.image_get_width(image);
    header->height = vips.image_get_page_height(image);
    header->pages = vips.image_get_n_pages(image);
    header->bands = vips.image_get_bands(image);
    header->has_alpha = vips.image_hasalpha(image);
    const char *loader = NULL;
    if (vips.image_get_string(image, META_LOADER, &loader) != 0 || loader == NULL) loader = "";
    snprintf(header->loader, sizeof header->loader, "%s", loader);
    vips.object_unref(image);
    vips.free(bytes);
    return 0;
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

int cvips_convert(const char *input, int output, enum cvips_format format, int max_side, int quality, int animated,
                  struct cvips_stop *stop, int *width, int *height) {
    if (cvips_start() != 0) return -1;
    int bound = max_side > 0 ? max_side : MAX_COORD;
    VipsImage *image = NULL;
    void *bytes = NULL;
    int failed;
    if (is_svg(input)) {
        size_t length = 0;
        if ((bytes = read_all(input, &length)) == NULL) return -1;
        failed = vips.thumbnail_buffer(bytes, length, &image, bound, "height", bound, "size", SIZE_DOWN, NULL);
    } else {
        // Every frame of an animation, else the first (the loaders' default), as the file name's options.
        size_t length = strlen(input) + 8;
        char *named = malloc(length);
        if (named == NULL) abort();
        snprintf(named, length, "%s%s", input, animated ? "[n=-1]" : "");
        failed = vips.thumbnail(named, &image, bound, "height", bound, "size", SIZE_DOWN, NULL);
        free(named);
    }
    if (failed == 0 && format == CVIPS_JPEG && vips.image_hasalpha(image)) {
        // JPEG has no alpha: flatten onto white first.
        VipsImage *flat = NULL;
        double white[3] = {255, 255, 255};
        void *background = vips.array_double_new(white, 3);
        failed = vips.flatten(image, &flat, "background", background, NULL);
        vips.area_unref(background);
        vips.object_unref(image);
        image = flat;
    }
    if (failed == 0) {
        if (watch(stop, image)) {
            vips.error("cvips", "stopped");
            failed = -1;
        } else {
            failed = save(image, output, format, quality);
        }
        watch(stop, NULL);
    }
    if (failed == 0) {
        *width = vips.image_get_width(image);
        *height = vips.image_get_page_height(image);
    }
    if (image != NULL) vips.object_unref(image);
    vips.free(bytes);
    return failed == 0 ? 0 : -1;
}

const char *cvips_error(void) {
    static __thread char message[512];
    if (start_result != 0) return open_failure[0] != '\0' ? open_failure : "libvips is not started";
    snprintf(message, sizeof message, "%s", vips.error_buffer());
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == ' ')) message[--length] = '\0';
    vips.error_clear();
    return message;
}

int cvips_verify(enum cvips_format format, const char *path, const void *bytes, size_t length,
                 struct cvips_stop *stop) {
    if (cvips_start() != 0) return -1;
    VipsImage *image = NULL;
    int failed;
    switch (format) {
    case CVIPS_JPEG:
        // libjpeg reports a premature end and corrupt data as warnings (it fills the rest in grey).
        failed = verifying.jpegload(path, &image, "shrink", 8, "fail_on", FAIL_ON_WARNING, "access", ACCESS_SEQUENTIAL,
                                    NULL);
        break;
    case CVIPS_PNG:
        failed = verifying.pngload_buffer((void *)bytes, length, &image, "fail_on", FAIL_ON_ERROR, "access",
                                          ACCESS_SEQUENTIAL, NULL);
        break;
    default:
        failed = verifying.gifload(path, &image, "n", -1, "fail_on", FAIL_ON_ERROR, "access", ACCESS_SEQUENTIAL, NULL);
        break;
    }
    if (failed == 0) {
        double average = 0;
        if (watch(stop, image)) {
            vips.error("cvips", "stopped");
            failed = -1;
        } else {
            // The average reads every pixel: the whole image is decoded, and nothing is kept.
            failed = verifying.avg(image, &average, NULL);
        }
        watch(stop, NULL);
    }
    if (image != NULL) vips.object_unref(image);
    return failed == 0 ? 0 : -1;
}
