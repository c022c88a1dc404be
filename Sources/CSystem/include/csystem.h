#ifndef CSYSTEM_H
#define CSYSTEM_H

// System calls Swift's Glibc module does not expose (its module map leaves out <sys/vfs.h>, ioctl and prctl are
// variadic, <spawn.h>'s and <unistd.h>'s GNU extensions are not imported, and setrlimit takes glibc's
// __rlimit_resource_t).

#include <spawn.h>
#include <sys/types.h>

// Whether the file system holding the open descriptor keeps its files in memory (tmpfs or ramfs, by fstatfs's
// f_type); 0 when it does not or fstatfs fails.
int csystem_is_memory_file_system(int descriptor);

// The id of the mount the open descriptor is on (statx's STATX_MNT_ID, Linux 5.8): a bind mount of a directory of
// the same file system has the same st_dev as the directory it is mounted on, but not the same mount id. 0 and
// `*mount` set, or -1 when the kernel does not say (then the caller has st_dev alone).
int csystem_mount_id(int descriptor, unsigned long long *mount);

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

// Sets `attributes` to start the child with no signal blocked and the `count` `signals` at their default
// dispositions (an ignored one survives execve), with POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF and the
// `other_flags` (the flags are set whole, so every flag the caller wants goes here); 0, or an errno.
int csystem_spawn_default_signals(posix_spawnattr_t *attributes, const int *signals, int count, short other_flags);

// Makes a pipe whose ends are close-on-exec from the start (pipe2 with O_CLOEXEC, a GNU extension), so that no
// process another thread spawns meanwhile inherits them; 0, or an errno.
int csystem_pipe(int ends[2]);

// Opens a new regular file in `directory` that has no name (O_TMPFILE), write-only and close-on-exec, created with
// `mode` (less the umask): it is gone when closed or when the process dies, even by SIGKILL, until
// `csystem_link_unnamed` gives it a name. The descriptor, or -1 with errno: EOPNOTSUPP (or EISDIR, EINVAL) when the
// file system or kernel makes none, and EOPNOTSUPP too when /proc/self/fd, through which it is named, is missing.
int csystem_open_unnamed(const char *directory, unsigned int mode);

// Gives the file `csystem_open_unnamed` opened at `descriptor` the name `path` (linkat of /proc/self/fd/N, which
// needs no privilege where AT_EMPTY_PATH does); fails with EEXIST when `path` exists. 0, or an errno.
int csystem_link_unnamed(int descriptor, const char *path);

// Makes an anonymous file in memory (memfd_create, close-on-exec, sealable), named `name` for /proc's listings only:
// another part of the process opens it by the path /proc/self/fd/N. The descriptor, or -1 with errno (ENOSYS on a
// kernel without it, EOPNOTSUPP when /proc/self/fd is missing).
int csystem_memory_file(const char *name);

// Seals a file made by csystem_memory_file against any change (F_SEAL_WRITE, _GROW, _SHRINK, then _SEAL): whoever
// opens it afterwards, by /proc/self/fd/N or /proc/PID/fd/N, reads what was written and cannot change it. 0, or
// errno.
int csystem_seal_memory_file(int descriptor);

// The value of the extended attribute `name` of `path` (getxattr, following links) into `buffer`: its length, or -1
// with errno (ENODATA when it has none, ENOTSUP where the file system keeps none, ERANGE when `size` is too small).
long csystem_get_attribute(const char *path, const char *name, void *buffer, unsigned long size);

// Sets the extended attribute `name` of `path` (setxattr) to `size` bytes of `value`; 0, or an errno (tests).
int csystem_set_attribute(const char *path, const char *name, const void *value, unsigned long size);

// The resource limits a process may set on itself with `csystem_set_limit`.
enum csystem_limit {
    CSYSTEM_LIMIT_ADDRESS_SPACE,  // RLIMIT_AS, in bytes
    CSYSTEM_LIMIT_CPU,            // RLIMIT_CPU, in seconds: SIGXCPU at the soft limit, SIGKILL at the hard one
    CSYSTEM_LIMIT_CORE,           // RLIMIT_CORE, in bytes (0: no core dump)
    CSYSTEM_LIMIT_FILE_SIZE,      // RLIMIT_FSIZE, in bytes: a write past it fails (EFBIG, SIGXFSZ ignored)
};

// Sets the calling process's `limit` (setrlimit), each value no higher than the hard limit it has (which only a
// privileged process may raise); 0, or an errno.
int csystem_set_limit(enum csystem_limit limit, unsigned long long soft, unsigned long long hard);

// Raises the calling process's soft limit on open files (RLIMIT_NOFILE) to its hard limit. Stores the soft and hard
// limits it has after in `soft` and `hard`; 0, or an errno (the limits as read, when reading them worked).
int csystem_raise_open_files(unsigned long long *soft, unsigned long long *hard);

// Has the kernel send the calling process SIGKILL when the thread that spawned it ends (prctl PR_SET_PDEATHSIG);
// 0, ESRCH when its parent is no longer `parent` (it ended before the request was made), or an errno.
int csystem_die_with_parent(int parent);

// Confinement (confine.c), in the order a process applies it to itself: `csystem_forbid_privileges` and
// `csystem_restrict_files_and_signals` while it has one thread (both hold for the calling thread and the threads it
// starts after), `csystem_filter_system_calls` at any time (it reaches every thread).

// Sets no_new_privs (prctl PR_SET_NO_NEW_PRIVS: no execve gains privileges, and the two below need it) and empties
// the calling thread's capability sets (capset); 0, or an errno.
int csystem_forbid_privileges(void);

// The Landlock ABI version the kernel offers (landlock_create_ruleset's LANDLOCK_CREATE_RULESET_VERSION), 0 when it
// offers none (no Landlock, or Landlock not among the enabled security modules).
int csystem_landlock_abi(void);

// Confines the calling thread and those it starts after in a Landlock domain of its own: no file or directory made,
// written (but /dev/null), truncated, renamed, removed or executed through a path (descriptors already open are
// unaffected), and, where the kernel's ABI has them, no TCP bind or connect (4), no abstract Unix socket or signal (6)
// beyond it; in any ABI, no tracing of a process outside it, which includes reading its /proc files that need ptrace's
// permission (environ, mem, fd, maps). Needs no_new_privs. 0; EOPNOTSUPP when the kernel offers no Landlock; or an
// errno.
int csystem_restrict_files_and_signals(void);

// Confines the calling thread and those it starts after in a further Landlock domain where files are read and
// directories listed only beneath: /usr, the dynamic linker's cache, the process's own /proc directory, the
// processor and cgroup files thread pools are sized by, a few devices, LD_LIBRARY_PATH's directories and those of
// the shared objects loaded; what the loaded fontconfig (if any) reads: its configuration files and included
// directories, font directories, cache directories and fonts that are symbolic links, its configuration loaded now
// (FcConfigGetCurrent); and `input`, the one file. Descriptors already open are unaffected. Needs no_new_privs, and
// a process of one thread (EBUSY otherwise: a thread running already would not be confined). 0; EOPNOTSUPP when
// the kernel offers no Landlock; or an errno.
int csystem_restrict_reading(const char *input);

// Installs on every thread of the calling process (SECCOMP_FILTER_FLAG_TSYNC) a seccomp-bpf filter that kills the
// process on a call of another architecture (or x32's), and fails with EPERM: socket, connect, bind, listen, accept,
// execve, execveat, fork and vfork, a clone without CLONE_THREAD, ptrace, process_vm_readv/writev, pidfd calls,
// kill/tgkill/rt_sigqueueinfo to another process than `self` (its process id; kill also to its group), tkill, setpgid,
// setsid, setting a resource limit, prctl PR_SET_PDEATHSIG, a descriptor's owner (fcntl F_SETOWN(_EX), ioctl
// FIOSETOWN/SIOCSPGRP: SIGIO to another process), a terminal's TIOCSTI, TIOCSPGRP, TIOCLINUX, the scheduling of another
// process (sched_set*), setpriority, ioprio_set, migrate_pages, move_pages, io_uring, bpf, perf_event_open,
// userfaultfd, namespaces, mounts, modules, kexec, reboot, keyrings and file handles; clone3 with ENOSYS (glibc then
// uses clone). Needs no_new_privs. 0, or an errno.
int csystem_filter_system_calls(int self);

// The kernel's random bytes (getrandom(2), flags 0: blocks only until the generator is first seeded, at boot): the
// count written (it may be short when a signal interrupts a request over 256 bytes), or -1 and errno.
ssize_t csystem_random(void *buffer, size_t count);

#endif
