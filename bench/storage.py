"""Where the runs write: a tmpfs the benchmark mounts (every scenario), and for (a) and (b) the disk under the
attachments directory's default location and, on request, an ext4 with a journal made on a loop device. A run
gets a fresh directory; the run before it is moved out of the way and deleted before its clock starts."""

import os
import shutil
import subprocess

from places import OUT

RUNS = os.path.join(OUT, "runs")
JOURNALED = os.path.join(OUT, "journaled")
JOURNALED_IMAGE = os.path.join(OUT, "journaled.img")
KINDS = ("tmpfs", "disk", "journaled")


def default_attachments_root():
    """RichPush's default attachments root, as `AttachmentStore.defaultRoot` computes it."""
    base = os.environ.get("TMPDIR") or "/tmp"
    return base.rstrip("/") + f"/richpush-{os.geteuid()}"


DISK_RUNS = os.path.join(default_attachments_root(), "bench")


class Runs:
    """The output directories of the runs, one a run, under the storage in use."""

    def __init__(self, directory):
        self.directory = directory
        self.counter = 0
        self.previous = None

    def fresh_directory(self, name):
        """A new output directory per run. The previous run's output is moved out of the way by a rename, then
        deleted, both before the caller starts its clock (timed() also syncs first)."""
        if self.previous and os.path.exists(self.previous):
            trash = self.previous + ".deleted"
            os.rename(self.previous, trash)
            shutil.rmtree(trash, ignore_errors=True)
        self.counter += 1
        self.previous = os.path.join(self.directory, f"{self.counter:03d}-{name}")
        return self.previous

    def use(self, directory):
        """Makes runners write under `directory` from now on."""
        if directory == self.directory:
            return
        if self.previous and os.path.exists(self.previous):
            shutil.rmtree(self.previous, ignore_errors=True)
        self.previous = None
        self.directory = directory


def mount_runs_tmpfs():
    """Every runner writes into RUNS, a tmpfs when we may mount one (root): the benchmark then measures the
    programs, not ext4's inode allocator. On ext4, RichPush's per-attachment directory (the issue requires one)
    costs a second inode per file, and ext4 makes inode allocation slow right after many deletions (it scans
    past recently deleted inodes), which turned every comparison into a measurement of the disk."""
    subprocess.run(["umount", RUNS], stderr=subprocess.DEVNULL)
    shutil.rmtree(RUNS, ignore_errors=True)
    os.makedirs(RUNS, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12g", "tmpfs", RUNS],
                      stderr=subprocess.DEVNULL).returncode == 0:
        return "tmpfs"
    return "disk (could not mount a tmpfs)"


def prepare_disk_runs():
    """The disk's run directory, under RichPush's default attachments root (made mode 0700 as RichPush makes it);
    emptied of an earlier benchmark's leftovers."""
    os.makedirs(default_attachments_root(), mode=0o700, exist_ok=True)
    shutil.rmtree(DISK_RUNS, ignore_errors=True)
    os.makedirs(DISK_RUNS, mode=0o700)
    return DISK_RUNS


def mount_journaled():
    """`--storage journaled`: an ext4 with a journal (mkfs.ext4's defaults, as on most servers' disks) made for the
    run on a loop device over a sparse 40 GB file under out/bench, mounted at out/bench/journaled; its run directory
    (made mode 0700), or None when it cannot be made (not root, no loop device). This machine's own ext4 has no
    journal, and without one ext4 scans past recently freed inodes when it allocates (README, issue 13), so the
    disk's figures here are not those of most servers."""
    unmount_journaled()
    with open(JOURNALED_IMAGE, "wb") as f:
        f.truncate(40 * 2**30)
    os.makedirs(JOURNALED, exist_ok=True)
    if (subprocess.run(["mkfs.ext4", "-q", "-F", JOURNALED_IMAGE], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL).returncode != 0
            or subprocess.run(["mount", "-o", "loop", JOURNALED_IMAGE, JOURNALED],
                              stderr=subprocess.DEVNULL).returncode != 0):
        unmount_journaled()
        return None
    runs = os.path.join(JOURNALED, "bench")
    os.makedirs(runs, mode=0o700)
    return runs


def unmount_journaled():
    subprocess.run(["umount", JOURNALED], stderr=subprocess.DEVNULL)
    if os.path.exists(JOURNALED_IMAGE):
        os.remove(JOURNALED_IMAGE)
    if os.path.isdir(JOURNALED) and not os.listdir(JOURNALED):
        os.rmdir(JOURNALED)


def set_up(kinds):
    """Mounts the tmpfs and makes each storage of `kinds` (KINDS, checked by the caller); returns (the tmpfs's
    description, [(description, run directory)] in the order of `kinds`). Exits when `journaled` cannot be made."""
    tmpfs = mount_runs_tmpfs()
    storages = []
    for kind in kinds:
        if kind == "tmpfs":
            storages.append((tmpfs, RUNS))
        elif kind == "disk":
            storages.append((f"disk ({DISK_RUNS})", prepare_disk_runs()))
        else:
            runs = mount_journaled()
            if runs is None:
                raise SystemExit("--storage journaled: could not make an ext4 on a loop device (root is needed)")
            storages.append(("journaled (ext4 with a journal, loop device)", runs))
    return tmpfs, storages


def tear_down():
    """Removes every run directory and unmounts what set_up mounted."""
    shutil.rmtree(RUNS, ignore_errors=True)
    subprocess.run(["umount", RUNS], stderr=subprocess.DEVNULL)
    shutil.rmtree(DISK_RUNS, ignore_errors=True)
    unmount_journaled()
