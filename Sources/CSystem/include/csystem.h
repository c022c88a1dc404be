#ifndef CSYSTEM_H
#define CSYSTEM_H

// System calls Swift's Glibc module does not expose (its module map leaves out <sys/vfs.h>, and ioctl is
// variadic).

// Whether the file system holding the open descriptor keeps its files in memory (tmpfs or ramfs, by fstatfs's
// f_type); 0 when it does not or fstatfs fails.
int csystem_is_memory_file_system(int descriptor);

// Sets the top-of-directory-hierarchies attribute (FS_TOPDIR_FL, `chattr +T`) on the open directory, where the file
// system keeps it (ext4); 0 when it is set (or already was), else the errno of FS_IOC_GETFLAGS or FS_IOC_SETFLAGS.
int csystem_mark_top_directory(int descriptor);

#endif
