#ifndef CVIPS_H
#define CVIPS_H

// Typed, non-variadic wrappers over the libvips calls RichPush's image transformation uses.

#include <stddef.h>

// Starts libvips once per process (later calls return the first result); 0 on success.
int cvips_start(void);

// What an image's header says, read without decoding a pixel.
struct cvips_header {
    int width;
    int height;
    int pages;      // frames of an animation, else 1
    int bands;
    int has_alpha;
    char loader[64];  // libvips's loader ("jpegload", "webpload", "svgload", ...)
};

// Reads the header of `path` (for SVG, from memory: no base location for relative references); 0 on success.
int cvips_probe(const char *path, struct cvips_header *header);

// The output formats.
enum cvips_format { CVIPS_JPEG = 0, CVIPS_PNG = 1, CVIPS_GIF = 2 };

// Stops a conversion from another thread: made per conversion, fired at its deadline, freed after it returned.
struct cvips_stop;
struct cvips_stop *cvips_stop_new(void);
// Kills the computation under way (libvips then fails it), or the next one at its start.
void cvips_stop_fire(struct cvips_stop *stop);
void cvips_stop_free(struct cvips_stop *stop);

// Decodes `input` (shrinking on load so that its longest side fits `max_side`, 0 for no bound; never enlarging;
// every frame when `animated`, else the first), turns it upright by its EXIF orientation, and writes it to the open
// file `output` as `format` without any metadata (EXIF, XMP, IPTC, comments). `quality` is JPEG's. SVG is read
// from memory: it cannot load an external resource. Writes the result's size (one frame's). 0 on success.
int cvips_convert(const char *input, int output, enum cvips_format format, int max_side, int quality, int animated,
                  struct cvips_stop *stop, int *width, int *height);

// Decodes every pixel (every frame of a GIF) and writes nothing: 0 when the image decodes whole. A JPEG is read
// from `path` shrunk by 8 on load, failing on any libjpeg warning; a PNG from `bytes` (`length` of them), failing
// on a libpng error; a GIF from `path`, failing on an error. `stop` kills it as it kills a conversion.
int cvips_verify(enum cvips_format format, const char *path, const void *bytes, size_t length, struct cvips_stop *stop);

// libvips's message for the last failure on this thread (and clears it); never NULL.
const char *cvips_error(void);

#endif
