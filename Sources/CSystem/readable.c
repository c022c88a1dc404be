// The read allow list of a process that parses hostile input (the SVG renderer's child): a Landlock domain where
// files and directories are read only beneath what rendering reads. Fontconfig is asked for its own files, font
// directories and caches (found with dlsym in the libfontconfig the process has loaded: no build dependency on it),
// so that no configuration of its, however unusual, loses a font to the list.

#define _GNU_SOURCE

#include "csystem.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/landlock.h>

// What the process reads whatever the document: the system's programs, libraries, locales and shared data (fonts,
// fontconfig's shipped configuration, libthai's dictionary, gconv's modules, gdk-pixbuf's loaders) beneath /usr;
// the dynamic linker's cache (a library opened later, by name); the locale aliases gettext reads (Debian's
// /usr/share/locale/locale.alias is a link to /etc/locale.alias, which the rule on /usr does not reach); its own
// /proc directory (/proc/self resolves to it: maps, cgroup, mountinfo, its threads' comm) and the file systems
// libraries look for; the number of processors and the CPU quota glib and libvips size their thread pools by;
// what the allocator reads; the devices libraries open.
static const char *const fixed_paths[] = {
    "/usr", "/etc/ld.so.cache", "/etc/locale.alias", "/proc/self", "/proc/filesystems",
    "/proc/sys/vm/overcommit_memory", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/dev/null", "/dev/zero",
    "/dev/urandom", "/dev/random",
};

// Reading and listing: what the domain handles, and what a rule beneath a directory grants.
#define CSYSTEM_READ_RIGHTS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

// The ruleset being filled, and the first error met (0 while none).
struct csystem_reading {
    int ruleset;
    int failed;
};

// Allows reading beneath `path` (a directory), or of `path` (a file), following symbolic links: the rule holds
// for what the path names now. A path that does not exist, or that this process may not reach, needs no rule
// (nothing beneath it can be read anyway).
static void allow(struct csystem_reading *reading, const char *path) {
    if (reading->failed != 0 || path == NULL || path[0] == '\0') return;
    int descriptor = open(path, O_PATH | O_CLOEXEC);
    if (descriptor < 0) return;
    struct stat information;
    if (fstat(descriptor, &information) == 0) {
        struct landlock_path_beneath_attr rule = {
            // A rule on a file may grant only a file's rights.
            .allowed_access = S_ISDIR(information.st_mode) ? CSYSTEM_READ_RIGHTS : LANDLOCK_ACCESS_FS_READ_FILE,
            .parent_fd = descriptor,
        };
        if (syscall(SYS_landlock_add_rule, reading->ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
            reading->failed = errno;
        }
    }
    close(descriptor);
}

// Allows the directory of `path` (a file's path).
static void allow_directory_of(struct csystem_reading *reading, const char *path) {
    const char *slash = strrchr(path, '/');
    if (slash == NULL || slash == path) return;
    char directory[4096];
    size_t length = (size_t)(slash - path);
    if (length >= sizeof directory) return;
    memcpy(directory, path, length);
    directory[length] = '\0';
    allow(reading, directory);
}

// dl_iterate_phdr's callback: the directory of each shared object loaded (the main program has no name), where the
// libraries it opens later by path usually are too (libvips's, the Swift runtime's).
static int allow_loaded(struct dl_phdr_info *information, size_t size, void *context) {
    (void)size;
    if (information->dlpi_name != NULL && information->dlpi_name[0] == '/') {
        allow_directory_of(context, information->dlpi_name);
    }
    return 0;
}

// Each directory of a colon-separated list (LD_LIBRARY_PATH).
static void allow_each(struct csystem_reading *reading, const char *list) {
    if (list == NULL) return;
    char *copy = strdup(list);
    if (copy == NULL) return;
    char *rest = copy;
    for (char *entry = strsep(&rest, ":"); entry != NULL; entry = strsep(&rest, ":")) allow(reading, entry);
    free(copy);
}

// Fontconfig's API, as much of it as is used here (fontconfig.h's declarations; its ABI has kept them since 2.x).
typedef unsigned char csystem_fc_char;
typedef struct {
    int count;
    int size;
    void **patterns;
} csystem_fc_font_set;

struct csystem_fontconfig {
    void *(*get_current)(void);
    void *(*config_files)(void *);
    void *(*config_dirs)(void *);
    void *(*font_dirs)(void *);
    void *(*cache_dirs)(void *);
    csystem_fc_char *(*next)(void *);
    void (*done)(void *);
    csystem_fc_font_set *(*fonts)(void *, int);
    int (*get_string)(const void *, const char *, int, csystem_fc_char **);
};

// Each string of a fontconfig list, then the list freed.
static void allow_strings(struct csystem_reading *reading, const struct csystem_fontconfig *fc, void *list) {
    if (list == NULL) return;
    for (csystem_fc_char *path = fc->next(list); path != NULL; path = fc->next(list)) allow(reading, (char *)path);
    fc->done(list);
}

// What fontconfig reads, asked of the library this process has loaded (libvips's librsvg through pango), its
// configuration loaded now (FcConfigGetCurrent: what pango would do at the first text, so the same configuration,
// from the same environment): its configuration files and the directories they include, its font directories
// (with every directory beneath, as scanned), its cache directories, and each font file that is a symbolic link
// (to a file elsewhere, which its directory's rule does not reach). Nothing when fontconfig is not loaded.
static void allow_fontconfig(struct csystem_reading *reading) {
    void *library = dlopen("libfontconfig.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (library == NULL) return;
    struct csystem_fontconfig fc = {
        .get_current = (void *(*)(void))dlsym(library, "FcConfigGetCurrent"),
        .config_files = (void *(*)(void *))dlsym(library, "FcConfigGetConfigFiles"),
        .config_dirs = (void *(*)(void *))dlsym(library, "FcConfigGetConfigDirs"),
        .font_dirs = (void *(*)(void *))dlsym(library, "FcConfigGetFontDirs"),
        .cache_dirs = (void *(*)(void *))dlsym(library, "FcConfigGetCacheDirs"),
        .next = (csystem_fc_char * (*)(void *)) dlsym(library, "FcStrListNext"),
        .done = (void (*)(void *))dlsym(library, "FcStrListDone"),
        .fonts = (csystem_fc_font_set * (*)(void *, int)) dlsym(library, "FcConfigGetFonts"),
        .get_string = (int (*)(const void *, const char *, int, csystem_fc_char **))dlsym(
            library, "FcPatternGetString"),
    };
    void *config = fc.get_current != NULL ? fc.get_current() : NULL;
    if (config == NULL || fc.config_files == NULL || fc.config_dirs == NULL || fc.font_dirs == NULL
        || fc.cache_dirs == NULL || fc.next == NULL || fc.done == NULL || fc.fonts == NULL || fc.get_string == NULL) {
        // A fontconfig that cannot be asked: the rest of the list holds, and the caller's check of text (the tests)
        // would see its fonts missing.
        dlclose(library);
        return;
    }
    allow_strings(reading, &fc, fc.config_files(config));
    allow_strings(reading, &fc, fc.config_dirs(config));
    allow_strings(reading, &fc, fc.font_dirs(config));
    allow_strings(reading, &fc, fc.cache_dirs(config));
    // FcSetSystem (0) and FcSetApplication (1): the fonts configured, and those an application added.
    for (int set = 0; set <= 1; set++) {
        csystem_fc_font_set *fonts = fc.fonts(config, set);
        for (int index = 0; fonts != NULL && index < fonts->count; index++) {
            csystem_fc_char *file = NULL;
            struct stat information;
            // FcResultMatch is 0; FC_FILE is "file".
            if (fc.get_string(fonts->patterns[index], "file", 0, &file) == 0 && file != NULL
                && lstat((char *)file, &information) == 0 && S_ISLNK(information.st_mode)) {
                allow(reading, (char *)file);
            }
        }
    }
    dlclose(library);
}

// The number of threads of the calling process (entries of /proc/self/task), or -1.
static int thread_count(void) {
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return -1;
    int count = 0;
    for (struct dirent *entry = readdir(tasks); entry != NULL; entry = readdir(tasks)) {
        if (entry->d_name[0] != '.') count++;
    }
    closedir(tasks);
    return count;
}

int csystem_restrict_reading(const char *input) {
    if (csystem_landlock_abi() < 1) return EOPNOTSUPP;
    // The domain holds for the calling thread and those it starts after: a thread running already would read as
    // it likes.
    if (thread_count() != 1) return EBUSY;
    struct {
        uint64_t handled_access_fs;
    } attributes = {.handled_access_fs = CSYSTEM_READ_RIGHTS};
    struct csystem_reading reading = {
        .ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0), .failed = 0};
    if (reading.ruleset < 0) return errno;
    for (size_t index = 0; index < sizeof fixed_paths / sizeof fixed_paths[0]; index++) {
        allow(&reading, fixed_paths[index]);
    }
    allow_each(&reading, getenv("LD_LIBRARY_PATH"));
    dl_iterate_phdr(allow_loaded, &reading);
    allow_fontconfig(&reading);
    // The document itself, and nothing else beside it.
    allow(&reading, input);
    int failed = reading.failed;
    if (failed == 0 && syscall(SYS_landlock_restrict_self, reading.ruleset, 0) != 0) failed = errno;
    close(reading.ruleset);
    return failed;
}
