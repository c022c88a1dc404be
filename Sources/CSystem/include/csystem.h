#ifndef CSYSTEM_H
#define CSYSTEM_H

// System calls Swift's Glibc module does not expose (its module map leaves out <sys/vfs.h>, ioctl is variadic,
// and <spawn.h>'s GNU extensions are not imported).

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

#endif
