#include "ctestsupport.h"

#include "cvips.h"

// Opening libvips (dlopen of it and its ~70 libraries, then vips_init loading its modules: HEIF, ImageMagick, ...)
// holds the dynamic loader's locks, and while they are held no thread in the process can be created. In the test
// process, where every test makes engines with threads of their own on the cooperative pool's two threads, the first
// bed opening it stalled every test for up to 4 s on a loaded machine (a timed test's payload waited 5 s for a 2 s
// bound). Before main there is one thread and no test: it costs nobody anything then.
static int status = -1;

__attribute__((constructor)) static void open_libvips_before_main(void) { status = cvips_start(); }

int ctestsupport_libvips_status(void) { return status; }
