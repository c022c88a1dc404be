#include "cvips.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <vips/vips.h>

static pthread_once_t started = PTHREAD_ONCE_INIT;
static int start_result = -1;

static void start(void) {
    start_result = VIPS_INIT("richpush");
    // One image at a time per call; the pool above bounds concurrency. No operation cache: every input is new.
    vips_concurrency_set(1);
    vips_cache_set_max(0);
}

int cvips_start(void) {
    pthread_once(&started, start);
    return start_result;
}

static int is_svg(const char *path) {
    const char *loader = vips_foreign_find_load(path);
    return loader != NULL && strstr(loader, "svg") != NULL;
}

// The file's bytes, for loaders that must not know where the file is. NULL on failure.
static void *read_all(const char *path, size_t *length) {
    gchar *contents = NULL;
    gsize size = 0;
    if (!g_file_get_contents(path, &contents, &size, NULL)) {
        vips_error("cvips", "cannot read %s", path);
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
        if (vips_svgload_buffer(bytes, length, &image, "access", VIPS_ACCESS_SEQUENTIAL, NULL) != 0) image = NULL;
    } else {
        image = vips_image_new_from_file(path, "access", VIPS_ACCESS_SEQUENTIAL, NULL);
    }
    if (image == NULL) {
        g_free(bytes);
        return -1;
    }
    header->width = vips_image_get_width(image);
    header->height = vips_image_get_page_height(image);
    header->pages = vips_image_get_n_pages(image);
    header->bands = vips_image_get_bands(image);
    header->has_alpha = vips_image_hasalpha(image);
    const char *loader = NULL;
    if (vips_image_get_string(image, VIPS_META_LOADER, &loader) != 0 || loader == NULL) loader = "";
    snprintf(header->loader, sizeof header->loader, "%s", loader);
    g_object_unref(image);
    g_free(bytes);
    return 0;
}

struct cvips_stop {
    pthread_mutex_t lock;
    VipsImage *image;  // the image being computed, while there is one
    int stopped;
};

struct cvips_stop *cvips_stop_new(void) {
    struct cvips_stop *stop = g_new0(struct cvips_stop, 1);
    pthread_mutex_init(&stop->lock, NULL);
    return stop;
}

void cvips_stop_free(struct cvips_stop *stop) {
    pthread_mutex_destroy(&stop->lock);
    g_free(stop);
}

void cvips_stop_fire(struct cvips_stop *stop) {
    pthread_mutex_lock(&stop->lock);
    stop->stopped = 1;
    if (stop->image != NULL) vips_image_set_kill(stop->image, TRUE);
    pthread_mutex_unlock(&stop->lock);
}

// Registers `image` as the one `cvips_stop_fire` kills (NULL unregisters); returns whether it was fired already.
static int watch(struct cvips_stop *stop, VipsImage *image) {
    pthread_mutex_lock(&stop->lock);
    stop->image = image;
    if (image != NULL && stop->stopped) vips_image_set_kill(image, TRUE);
    int stopped = stop->stopped;
    pthread_mutex_unlock(&stop->lock);
    return stopped;
}

static int save(VipsImage *image, int fd, enum cvips_format format, int quality) {
    VipsTarget *target = vips_target_new_to_descriptor(fd);
    if (target == NULL) return -1;
    int failed;
    switch (format) {
    case CVIPS_JPEG:
        failed = vips_jpegsave_target(image, target, "Q", quality, "strip", TRUE, NULL);
        break;
    case CVIPS_PNG:
        failed = vips_pngsave_target(image, target, "strip", TRUE, NULL);
        break;
    default:
        failed = vips_gifsave_target(image, target, "strip", TRUE, NULL);
        break;
    }
    g_object_unref(target);
    return failed;
}

int cvips_convert(const char *input, int output, enum cvips_format format, int max_side, int quality, int animated,
                  struct cvips_stop *stop, int *width, int *height) {
    if (cvips_start() != 0) return -1;
    int bound = max_side > 0 ? max_side : VIPS_MAX_COORD;
    // Every frame of an animation, else the first (the loaders' default); for a file, as the name's options.
    const char *options = animated ? "n=-1" : "";
    char *named = g_strdup_printf("%s%s", input, animated ? "[n=-1]" : "");
    VipsImage *image = NULL;
    void *bytes = NULL;
    int failed;
    if (is_svg(input)) {
        size_t length = 0;
        if ((bytes = read_all(input, &length)) == NULL) return -1;
        failed = vips_thumbnail_buffer(bytes, length, &image, bound, "height", bound, "size", VIPS_SIZE_DOWN,
                                       "option_string", options, NULL);
    } else {
        failed = vips_thumbnail(named, &image, bound, "height", bound, "size", VIPS_SIZE_DOWN, NULL);
    }
    if (failed == 0 && format == CVIPS_JPEG && vips_image_hasalpha(image)) {
        // JPEG has no alpha: flatten onto white first.
        VipsImage *flat = NULL;
        double white[3] = {255, 255, 255};
        VipsArrayDouble *background = vips_array_double_new(white, 3);
        failed = vips_flatten(image, &flat, "background", background, NULL);
        vips_area_unref(VIPS_AREA(background));
        g_object_unref(image);
        image = flat;
    }
    if (failed == 0) {
        if (watch(stop, image)) {
            vips_error("cvips", "stopped");
            failed = -1;
        } else {
            failed = save(image, output, format, quality);
        }
        watch(stop, NULL);
    }
    if (failed == 0) {
        *width = vips_image_get_width(image);
        *height = vips_image_get_page_height(image);
    }
    if (image != NULL) g_object_unref(image);
    g_free(bytes);
    g_free(named);
    return failed == 0 ? 0 : -1;
}

const char *cvips_error(void) {
    static __thread char message[512];
    snprintf(message, sizeof message, "%s", vips_error_buffer());
    size_t length = strlen(message);
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == ' ')) message[--length] = '\0';
    vips_error_clear();
    return message;
}
