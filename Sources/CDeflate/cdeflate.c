#include "cdeflate.h"

#include <libdeflate.h>

uint32_t cdeflate_crc32(uint32_t crc, const void *bytes, size_t length) {
    // libdeflate returns 0 for a NULL buffer, whatever `crc` was: an empty piece leaves the CRC as it is.
    return length == 0 ? crc : libdeflate_crc32(crc, bytes, length);
}
