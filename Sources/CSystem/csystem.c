#include "csystem.h"

#include <sys/vfs.h>
#include <linux/magic.h>

int csystem_is_memory_file_system(int descriptor) {
    struct statfs info;
    if (fstatfs(descriptor, &info) != 0) return 0;
    return info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC;
}
