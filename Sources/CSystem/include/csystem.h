#ifndef CSYSTEM_H
#define CSYSTEM_H

// System calls Swift's Glibc module does not expose (its module map leaves out <sys/vfs.h>).

// Whether the file system holding the open descriptor keeps its files in memory (tmpfs or ramfs, by fstatfs's
// f_type); 0 when it does not or fstatfs fails.
int csystem_is_memory_file_system(int descriptor);

#endif
