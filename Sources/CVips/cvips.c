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

int cvips_convert(const char *input, const char *output, enum cvips_format format, int max_side, int quality,
                  int *width, int *height) {
    if (cvips_start() != 0) return -1;
    int bound = max_side > 0 ? max_side : VIPS_MAX_COORD;
    VipsImage *image = NULL;
    void *bytes = NULL;
    int failed;
    if (is_svg(input)) {
        size_t length = 0;
        if ((bytes = read_all(input, &length)) == NULL) return -1;
        failed = vips_thumbnail_buffer(bytes, length, &image, bound, "height", bound, "size", VIPS_SIZE_DOWN, NULL);
    } else {
        failed = vips_thumbnail(input, &image, bound, "height", bound, "size", VIPS_SIZE_DOWN, NULL);
    }
    if (failed == 0) {
        if (format == CVIPS_JPEG) {
            // JPEG has no alpha: flatten onto white first.
            if (vips_image_hasalpha(image)) {
                VipsImage *flat = NULL;
                double white[3] = {255, 255, 255};
                VipsArrayDouble *background = vips_array_double_new(white, 3);
                failed = vips_flatten(image, &flat, "background", background, NULL);
                vips_area_unref(VIPS_AREA(background));
                g_object_unref(image);
                image = flat;
            }
            if (failed == 0) failed = vips_jpegsave(image, output, "Q", quality, "strip", TRUE, NULL);
        } else {
            failed = vips_pngsave(image, output, "strip", TRUE, NULL);
        }
    }
    if (failed == 0) {
        *width = vips_image_get_width(image);
        *height = vips_image_get_height(image);
    }
    if (image != NULL) g_object_unref(image);
    g_free(bytes);
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
