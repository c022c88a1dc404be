#ifndef CTESTSUPPORT_H
#define CTESTSUPPORT_H

// For the test process only: libvips opened before main (see ctestsupport.c). Nothing to call.

// Whether libvips was opened before main: 0 when it was.
int ctestsupport_libvips_status(void);

#endif
