// For <spawn.h>'s posix_spawn_file_actions_addclosefrom_np and _addchdir_np (GNU extensions).
#define _GNU_SOURCE

#include "csystem.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/xattr.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <unistd.h>

int csystem_mount_id(int descriptor, unsigned long long *mount) {
    struct statx info;
    if (statx(descriptor, "", AT_EMPTY_PATH, STATX_MNT_ID, &info) != 0) return -1;
    if ((info.stx_mask & STATX_MNT_ID) == 0) return -1;
    *mount = info.stx_mnt_id;
    return 0;
}

int csystem_is_memory_file_system(int descriptor) {
    struct statfs info;
    if (fstatfs(descriptor, &info) != 0) return 0;
    return info.f_type == TMPFS_MAGIC || info.f_type == RAMFS_MAGIC;
}

int csystem_mark_top_directory(int descriptor) {
    // The flags ioctls take an int, whatever linux/fs.h's _IOR(..., long) says.
    int flags = 0;
    if (ioctl(descriptor, FS_IOC_GETFLAGS, &flags) != 0) return errno;
    if (flags & FS_TOPDIR_FL) return 0;
    flags |= FS_TOPDIR_FL;
    return ioctl(descriptor, FS_IOC_SETFLAGS, &flags) == 0 ? 0 : errno;
}

int csystem_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int csystem_spawn_change_directory(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int csystem_spawn_default_signals(posix_spawnattr_t *attributes, const int *signals, int count, short other_flags) {
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int index = 0; index < count; index++) sigaddset(&defaults, signals[index]);
    int failed = posix_spawnattr_setsigmask(attributes, &none);
    if (failed == 0) failed = posix_spawnattr_setsigdefault(attributes, &defaults);
    if (failed == 0) {
        short flags = (short)(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | other_flags);
        failed = posix_spawnattr_setflags(attributes, flags);
    }
    return failed;
}

int csystem_raise_open_files(unsigned long long *soft, unsigned long long *hard) {
    struct rlimit given;
    if (getrlimit(RLIMIT_NOFILE, &given) != 0) return errno;
    *soft = given.rlim_cur;
    *hard = given.rlim_max;
    if (given.rlim_cur >= given.rlim_max) return 0;
    struct rlimit raised = {.rlim_cur = given.rlim_max, .rlim_max = given.rlim_max};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) return errno;
    *soft = given.rlim_max;
    return 0;
}

int csystem_set_limit(enum csystem_limit limit, unsigned long long soft, unsigned long long hard) {
    int resource;
    switch (limit) {
    case CSYSTEM_LIMIT_ADDRESS_SPACE:
        resource = RLIMIT_AS;
        break;
    case CSYSTEM_LIMIT_CPU:
        resource = RLIMIT_CPU;
        break;
    case CSYSTEM_LIMIT_CORE:
        resource = RLIMIT_CORE;
        break;
    case CSYSTEM_LIMIT_FILE_SIZE:
        resource = RLIMIT_FSIZE;
        break;
    default:
        return EINVAL;
    }
    // Never above the hard limit the process was given (`ulimit -H`), which it may not raise: the lower stands.
    struct rlimit given;
    if (getrlimit(resource, &given) != 0) return errno;
    if (given.rlim_max != RLIM_INFINITY) {
        if (hard > given.rlim_max) hard = given.rlim_max;
        if (soft > hard) soft = hard;
    }
    struct rlimit value = {.rlim_cur = soft, .rlim_max = hard};
    return setrlimit(resource, &value) == 0 ? 0 : errno;
}

int csystem_die_with_parent(int parent) {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return errno;
    // A parent that ended before the request was made sent nothing: the child was handed to another.
    return getppid() == parent ? 0 : ESRCH;
}

int csystem_open_unnamed(const char *directory, unsigned int mode) {
    if (access("/proc/self/fd", X_OK) != 0) {
        errno = EOPNOTSUPP;
        return -1;
    }
    return open(directory, O_TMPFILE | O_WRONLY | O_CLOEXEC, (mode_t)mode);
}

int csystem_link_unnamed(int descriptor, const char *path) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", descriptor);
    return linkat(AT_FDCWD, name, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

int csystem_memory_file(const char *name) {
    if (access("/proc/self/fd", X_OK) != 0) {
        errno = EOPNOTSUPP;
        return -1;
    }
    return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

int csystem_seal_memory_file(int descriptor) {
    int seals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL;
    return fcntl(descriptor, F_ADD_SEALS, seals) == 0 ? 0 : errno;
}

long csystem_get_attribute(const char *path, const char *name, void *buffer, unsigned long size) {
    return (long)getxattr(path, name, buffer, (size_t)size);
}

int csystem_set_attribute(const char *path, const char *name, const void *value, unsigned long size) {
    return setxattr(path, name, value, (size_t)size, 0) == 0 ? 0 : errno;
}

int csystem_pipe(int ends[2]) {
    return pipe2(ends, O_CLOEXEC) == 0 ? 0 : errno;
}

ssize_t csystem_random(void *buffer, size_t count) {
    return getrandom(buffer, count, 0);
}
