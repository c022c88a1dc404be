// The confinement of a process that parses hostile input (the SVG renderer's child): no new privileges, no
// capabilities, no writing or executing through the file system, no signals or tracing beyond itself (Landlock),
// and a seccomp-bpf filter that refuses the system calls such a process never needs. Written by hand against the
// kernel's headers: no libseccomp, no outside package.

#define _GNU_SOURCE

#include "csystem.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the seccomp filter reads the low half of 64-bit arguments at their first 4 bytes"
#endif

#if defined(__x86_64__)
#define CSYSTEM_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CSYSTEM_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "no seccomp filter for this architecture"
#endif

// Landlock's rights and scopes newer than the headers of the oldest system we build on (Debian 12's know ABI 2).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define CSYSTEM_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define CSYSTEM_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define CSYSTEM_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CSYSTEM_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

// struct landlock_ruleset_attr as of ABI 6; the kernel is told how much of it its ABI reads.
struct csystem_landlock_ruleset {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

int csystem_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? 0 : (int)abi;
}

int csystem_forbid_privileges(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    // Empty effective, permitted and inheritable sets: a child started by root keeps uid 0 but none of its powers
    // (no mount, no raw socket, no module, no reading past file modes). A no-op for any other user.
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2] = {{0}};
    if (syscall(SYS_capset, &header, data) != 0) return errno;
    return 0;
}

int csystem_restrict_files_and_signals(void) {
    int abi = csystem_landlock_abi();
    if (abi < 1) return EOPNOTSUPP;
    // Every right that makes, changes, removes or executes a file, granted nowhere but /dev/null: reading stays open
    // (fonts, fontconfig's files, the document), and descriptors opened before (the output) are unaffected.
    struct csystem_landlock_ruleset ruleset = {
        .handled_access_fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE
            | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR
            | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK
            | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM,
    };
    size_t size = offsetof(struct csystem_landlock_ruleset, handled_access_net);
    if (abi >= 2) ruleset.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) ruleset.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 4) {
        ruleset.handled_access_net = CSYSTEM_LANDLOCK_ACCESS_NET_BIND_TCP | CSYSTEM_LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(struct csystem_landlock_ruleset, scoped);
    }
    if (abi >= 6) {
        ruleset.scoped = CSYSTEM_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | CSYSTEM_LANDLOCK_SCOPE_SIGNAL;
        size = sizeof ruleset;
    }
    int descriptor = (int)syscall(SYS_landlock_create_ruleset, &ruleset, size, 0);
    if (descriptor < 0) return errno;
    // Except /dev/null, which a library may open to write into nothing.
    int null = open("/dev/null", O_PATH | O_CLOEXEC);
    if (null >= 0) {
        struct landlock_path_beneath_attr rule = {
            .allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE, .parent_fd = null};
        int added = (int)syscall(SYS_landlock_add_rule, descriptor, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
        close(null);
        if (added != 0) {
            int failed = errno;
            close(descriptor);
            return failed;
        }
    }
    // Besides the rights above, a Landlock domain may not trace, nor read through /proc (environ, mem, fd, maps),
    // a process outside it: the parent above all, whose uid it shares.
    int failed = syscall(SYS_landlock_restrict_self, descriptor, 0) == 0 ? 0 : errno;
    close(descriptor);
    return failed;
}

// The filter's program, assembled into a fixed array.
enum { CSYSTEM_FILTER_CAPACITY = 512 };

struct csystem_filter {
    struct sock_filter code[CSYSTEM_FILTER_CAPACITY];
    unsigned short length;
    int overflow;
};

static void emit(struct csystem_filter *filter, struct sock_filter instruction) {
    if (filter->length == CSYSTEM_FILTER_CAPACITY) {
        filter->overflow = 1;
        return;
    }
    filter->code[filter->length++] = instruction;
}

#define LOAD(offset) (struct sock_filter) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (offset))
#define RETURN(value) (struct sock_filter) BPF_STMT(BPF_RET | BPF_K, (value))
// If the accumulator equals `value`, skip `then` instructions, else none (or the reverse with `otherwise`).
#define IF_EQUAL(value, then, otherwise) (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (value), (then), (otherwise))

#define NUMBER offsetof(struct seccomp_data, nr)
// The low half of argument `n` (the whole of an int: the kernel reads no more of it).
#define ARGUMENT_LOW(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(uint64_t))
#define ARGUMENT_HIGH(n) (ARGUMENT_LOW(n) + sizeof(uint32_t))

#define REFUSE(error) (SECCOMP_RET_ERRNO | ((error) & SECCOMP_RET_DATA))

// `number` fails with `error`.
static void refuse(struct csystem_filter *filter, int number, int error) {
    emit(filter, LOAD(NUMBER));
    emit(filter, IF_EQUAL((uint32_t)number, 0, 1));
    emit(filter, RETURN(REFUSE(error)));
}

// `number` runs when its argument `argument` (an int) is one of `allowed`, else fails with EPERM.
static void allow_only(struct csystem_filter *filter, int number, int argument, const uint32_t *allowed, int count) {
    emit(filter, LOAD(NUMBER));
    // Not this call: skip the argument's load, the comparisons and the two returns.
    emit(filter, IF_EQUAL((uint32_t)number, 0, (unsigned char)(count + 3)));
    emit(filter, LOAD(ARGUMENT_LOW(argument)));
    for (int index = 0; index < count; index++) {
        // Matched: jump to the ALLOW after the EPERM.
        emit(filter, IF_EQUAL(allowed[index], (unsigned char)(count - index), 0));
    }
    emit(filter, RETURN(REFUSE(EPERM)));
    emit(filter, RETURN(SECCOMP_RET_ALLOW));
}

// `number` fails with EPERM when its argument `argument` (an int) is `refused`.
static void refuse_when(struct csystem_filter *filter, int number, int argument, uint32_t refused) {
    emit(filter, LOAD(NUMBER));
    emit(filter, IF_EQUAL((uint32_t)number, 0, 3));
    emit(filter, LOAD(ARGUMENT_LOW(argument)));
    emit(filter, IF_EQUAL(refused, 0, 1));
    emit(filter, RETURN(REFUSE(EPERM)));
}

int csystem_filter_system_calls(int self) {
    struct csystem_filter filter = {.length = 0, .overflow = 0};
    // Another architecture's calling convention (an i386 `int 0x80` on x86_64) numbers calls otherwise: kill.
    emit(&filter, LOAD(offsetof(struct seccomp_data, arch)));
    emit(&filter, IF_EQUAL(CSYSTEM_AUDIT_ARCH, 1, 0));
    emit(&filter, RETURN(SECCOMP_RET_KILL_PROCESS));
#if defined(__x86_64__)
    // x32's calls share the architecture and set bit 30 of the number.
    emit(&filter, LOAD(NUMBER));
    emit(&filter, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));
    emit(&filter, RETURN(SECCOMP_RET_KILL_PROCESS));
#endif

    // Never needed to render, each a way out: the network, other programs, other processes' memory, the kernel's
    // larger surfaces (io_uring's operations pass no seccomp filter), and leaving the process group the parent kills.
    static const int refused[] = {
        SYS_socket, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
        SYS_execve, SYS_execveat,
#ifdef SYS_fork
        SYS_fork,
#endif
#ifdef SYS_vfork
        SYS_vfork,
#endif
        SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev, SYS_process_madvise,
        SYS_pidfd_open, SYS_pidfd_getfd, SYS_pidfd_send_signal, SYS_tkill, SYS_kcmp,
        SYS_setpgid, SYS_setsid, SYS_setrlimit,
        SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register,
        SYS_bpf, SYS_perf_event_open, SYS_userfaultfd, SYS_unshare, SYS_setns,
        SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_fsopen, SYS_fsmount, SYS_fsconfig, SYS_move_mount,
        SYS_open_tree, SYS_mount_setattr,
        SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_kexec_load, SYS_kexec_file_load, SYS_reboot,
        SYS_keyctl, SYS_add_key, SYS_request_key, SYS_open_by_handle_at, SYS_name_to_handle_at,
        // Another process of the uid reniced, its I/O or memory placement changed: the parent slowed down.
        SYS_setpriority, SYS_ioprio_set, SYS_migrate_pages, SYS_move_pages,
    };
    for (size_t index = 0; index < sizeof refused / sizeof refused[0]; index++) {
        refuse(&filter, refused[index], EPERM);
    }
    // clone3 passes its flags in memory, which a filter cannot read: ENOSYS makes glibc (2.34 on) fall back to clone.
    refuse(&filter, SYS_clone3, ENOSYS);

    // clone makes threads (CLONE_THREAD), never processes: a process would leave the limits set on this one.
    emit(&filter, LOAD(NUMBER));
    emit(&filter, IF_EQUAL(SYS_clone, 0, 4));
    emit(&filter, LOAD(ARGUMENT_LOW(0)));
    emit(&filter, (struct sock_filter) BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 1, 0));
    emit(&filter, RETURN(REFUSE(EPERM)));
    emit(&filter, RETURN(SECCOMP_RET_ALLOW));

    // Signals to itself only: its own id, or its group (0, or minus its id: it leads its group).
    const uint32_t itself[] = {(uint32_t)self, 0, (uint32_t)-self};
    allow_only(&filter, SYS_kill, 0, itself, 3);
    allow_only(&filter, SYS_tgkill, 0, itself, 1);
    allow_only(&filter, SYS_rt_sigqueueinfo, 0, itself, 1);
    allow_only(&filter, SYS_rt_tgsigqueueinfo, 0, itself, 1);

    // Scheduling of itself (0, or its id) only: pinning the parent to one core or demoting it would slow it down.
    const uint32_t itselfOnly[] = {0, (uint32_t)self};
    allow_only(&filter, SYS_sched_setaffinity, 0, itselfOnly, 2);
    allow_only(&filter, SYS_sched_setscheduler, 0, itselfOnly, 2);
    allow_only(&filter, SYS_sched_setparam, 0, itselfOnly, 2);
    allow_only(&filter, SYS_sched_setattr, 0, itselfOnly, 2);

    // prctl's death signal stays: clearing it would let the child outlive a killed parent.
    refuse_when(&filter, SYS_prctl, 0, PR_SET_PDEATHSIG);
    // A descriptor's owner, which would receive SIGIO (or any signal F_SETSIG names) when it is ready: a signal to
    // another process by another way than kill.
    refuse_when(&filter, SYS_fcntl, 1, F_SETOWN);
    refuse_when(&filter, SYS_fcntl, 1, F_SETOWN_EX);
    refuse_when(&filter, SYS_ioctl, 1, FIOSETOWN);
    refuse_when(&filter, SYS_ioctl, 1, SIOCSPGRP);
    // Standard error may be the terminal: no typing into it (TIOCSTI, run by the shell once we exit), no taking its
    // foreground, no console commands.
    refuse_when(&filter, SYS_ioctl, 1, TIOCSTI);
    refuse_when(&filter, SYS_ioctl, 1, TIOCSPGRP);
    refuse_when(&filter, SYS_ioctl, 1, TIOCLINUX);

    // prlimit64 reads limits (glibc's getrlimit) but sets none, its own (raising the CPU limit) or another's.
    emit(&filter, LOAD(NUMBER));
    emit(&filter, IF_EQUAL(SYS_prlimit64, 0, 5));
    emit(&filter, LOAD(ARGUMENT_LOW(2)));
    emit(&filter, IF_EQUAL(0, 0, 2));
    emit(&filter, LOAD(ARGUMENT_HIGH(2)));
    emit(&filter, IF_EQUAL(0, 1, 0));
    emit(&filter, RETURN(REFUSE(EPERM)));

    emit(&filter, RETURN(SECCOMP_RET_ALLOW));
    if (filter.overflow) return E2BIG;

    struct sock_fprog program = {.len = filter.length, .filter = filter.code};
    // Every thread (libvips's already run): TSYNC applies the filter to all of them, or fails.
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program) != 0) return errno;
    return 0;
}
