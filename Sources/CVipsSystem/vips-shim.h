// libvips (Debian's libvips-dev), found through pkg-config; wrapped by the CVips target.
#include <vips/vips.h>
