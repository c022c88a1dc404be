#ifndef CVIPS_H
#define CVIPS_H

// Typed, non-variadic wrappers over the libvips calls RichPush's image transformation uses.

#include <stddef.h>

// Starts libvips once per process (later calls return the first result); 0 on success. From then on GLib's log
// (libvips's warnings, and those of the libraries beneath it) never reaches standard error.
int cvips_start(void);

// The decoder a file is read with: chosen by the caller from the type libmagic decided, never guessed by libvips.
enum cvips_loader {
    CVIPS_JPEGLOAD = 0,
    CVIPS_PNGLOAD = 1,
    CVIPS_GIFLOAD = 2,
    CVIPS_WEBPLOAD = 3,
    CVIPS_HEIFLOAD = 4,   // HEIC and AVIF
    CVIPS_SVGLOAD = 5,    // from memory: `document`, with no base location
    CVIPS_TIFFLOAD = 6,   // page 0, the main image (never a reduced-resolution page or sub-IFD)
    CVIPS_BMPLOAD = 7,    // ImageMagick, its BMP coder named explicitly ("BMP:" prefix), nothing else of it
};

// What is decoded, and how.
struct cvips_input {
    enum cvips_loader loader;
    const char *path;          // the file, for every loader but SVG's
    const void *document;      // SVG's bytes
    size_t length;
    int opaque;                // the image has no real alpha: an alpha band its decoder makes is dropped
};

// How a call ended.
enum cvips_status {
    CVIPS_OK = 0,
    CVIPS_FAILED = -1,         // libvips failed: `error` says why
    CVIPS_NOT_CLAIMED = -2,    // the loader does not recognise the bytes (its is_a): nothing was decoded
};

// What an image's header says, read without decoding a pixel.
struct cvips_header {
    int width;
    int height;
    int pages;      // frames of an animation, else 1
    int bands;
    int has_alpha;
    char loader[64];  // libvips's loader ("jpegload", "webpload", "svgload_buffer", ...)
};

// Reads the header of `input` with its loader, once the loader claims the bytes. On CVIPS_FAILED, `error` (of
// `size` bytes) holds libvips's messages for this call alone, or its warnings when it gave none, or "".
int cvips_probe(const struct cvips_input *input, struct cvips_header *header, char *error, size_t size);

// The output formats.
enum cvips_format { CVIPS_JPEG = 0, CVIPS_PNG = 1, CVIPS_GIF = 2 };

// Stops a conversion from another thread: made per conversion, fired at its deadline, freed after it returned.
struct cvips_stop;
struct cvips_stop *cvips_stop_new(void);
// Kills the computation under way (libvips then fails it), or the next one at its start.
void cvips_stop_fire(struct cvips_stop *stop);
void cvips_stop_free(struct cvips_stop *stop);

// Decodes `input` with its loader (shrinking on load where the loader can, so that its longest side fits
// `max_side`, 0 for no bound; never enlarging; every frame when `animated`, else the first), shifts signed
// samples into the unsigned range, turns it upright by its EXIF orientation, and writes it to the open file
// `output` (truncated first when a failed call is run again) as `format` without any metadata (EXIF, XMP, IPTC,
// comments). `quality` is JPEG's. Writes the result's size (one frame's). `error` as for `cvips_probe`; "stopped"
// when `stop` fired.
int cvips_convert(const struct cvips_input *input, int output, enum cvips_format format, int max_side, int quality,
                  int animated, struct cvips_stop *stop, int *width, int *height, char *error, size_t size);

// Decodes every pixel (every frame of a GIF) and writes nothing: CVIPS_OK when the image decodes whole. A JPEG is
// read from `path` shrunk by 8 on load, failing on any libjpeg warning; a PNG from `bytes` (`length` of them),
// failing on a libpng error; a GIF from `path`, failing on an error. `stop` kills it as it kills a conversion;
// `error` as for `cvips_probe`.
int cvips_verify(enum cvips_format format, const char *path, const void *bytes, size_t length, struct cvips_stop *stop,
                 char *error, size_t size);

// How many libvips calls run now, side by side; how many failed calls wait for their turn to run again alone.
int cvips_calls_running(void);
int cvips_calls_waiting_alone(void);

#endif
