#ifndef CSYSTEM_H
#define CSYSTEM_H

// System calls Swift's Glibc module does not expose (its module map leaves out <sys/vfs.h>, ioctl and prctl are
// variadic, <spawn.h>'s and <unistd.h>'s GNU extensions are not imported, and setrlimit takes glibc's
// __rlimit_resource_t).

#include <spawn.h>

// Whether the file system holding the open descriptor keeps its files in memory (tmpfs or ramfs, by fstatfs's
// f_type); 0 when it does not or fstatfs fails.
int csystem_is_memory_file_system(int descriptor);

// Sets the top-of-directory-hierarchies attribute (FS_TOPDIR_FL, `chattr +T`) on the open directory, where the file
// system keeps it (ext4); 0 when it is set (or already was), else the errno of FS_IOC_GETFLAGS or FS_IOC_SETFLAGS.
int csystem_mark_top_directory(int descriptor);

// Adds to `actions` the closing of every descriptor from `lowest` up (glibc's
// posix_spawn_file_actions_addclosefrom_np), so a spawned child inherits only what the other actions gave it;
// 0, or an errno.
int csystem_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

// Adds to `actions` a change of the working directory to `path` (glibc's posix_spawn_file_actions_addchdir_np);
// 0, or an errno.
int csystem_spawn_change_directory(posix_spawn_file_actions_t *actions, const char *path);

// Makes a pipe whose ends are close-on-exec from the start (pipe2 with O_CLOEXEC, a GNU extension), so that no
// process another thread spawns meanwhile inherits them; 0, or an errno.
int csystem_pipe(int ends[2]);

// The resource limits a process may set on itself with `csystem_set_limit`.
enum csystem_limit {
    CSYSTEM_LIMIT_ADDRESS_SPACE,  // RLIMIT_AS, in bytes
    CSYSTEM_LIMIT_CPU,            // RLIMIT_CPU, in seconds: SIGXCPU at the soft limit, SIGKILL at the hard one
    CSYSTEM_LIMIT_CORE,           // RLIMIT_CORE, in bytes (0: no core dump)
};

// Sets the calling process's `limit` (setrlimit); 0, or an errno.
int csystem_set_limit(enum csystem_limit limit, unsigned long long soft, unsigned long long hard);

// Has the kernel send the calling process SIGKILL when the thread that spawned it ends (prctl PR_SET_PDEATHSIG);
// 0, ESRCH when its parent is no longer `parent` (it ended before the request was made), or an errno.
int csystem_die_with_parent(int parent);

#endif
