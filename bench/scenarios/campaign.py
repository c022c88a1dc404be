"""(b) campaign: 10,000 payloads over 20 distinct images, against curl and URLSession."""

import os
import shutil
import subprocess
import time
import uuid

from scenarios.against_curl import AgainstCurl, pair_ratios


def directories_wall(parent, count):
    """Wall seconds to make `count` attachment directories, one after another, in a fresh root under `parent` made
    as RichPush makes its roots (mode 0700, ext4's top-directory attribute where the file system has it): what
    RichPush cannot avoid on that storage, since every mkdir takes the root's lock. The root is then moved out of
    the way and deleted."""
    root = os.path.join(parent, "directories-bound")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root, mode=0o700)
    subprocess.run(["chattr", "+T", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    names = [str(uuid.uuid4()) for _ in range(count)]
    start = time.monotonic()
    for name in names:
        os.mkdir(os.path.join(root, name), 0o700)
    wall = time.monotonic() - start
    os.rename(root, root + ".deleted")
    shutil.rmtree(root + ".deleted", ignore_errors=True)
    return wall


class Campaign(AgainstCurl):
    """campaign: 10,000 payloads over 20 distinct images"""

    key = "b"
    ndjson_name = "campaign.ndjson"
    inverted = True

    def make_urls(self, bench):
        return bench.origin.campaign(bench.scaled(10000))

    def label(self, bench):
        return f"(b) campaign, {len(self.urls):,} over 20"

    def urlsession_rounds(self, bench):
        # URLSession takes about 10 s for the 10,000: once.
        return 1

    def bound(self, bench, rp, cu):
        count = len(self.urls)
        return (f"(b) bound on {self.kind}: {count:,} attachment directories made one after another in a fresh root "
                f"take {directories_wall(self.storage, count):.3f} s; 5x faster than curl's median means "
                f"{cu['wall'] / 5:.3f} s in all")

    def goal(self, rp, cu, us, ratios):
        return (f"(b) on {self.kind}: curl/richpush wall: {pair_ratios(ratios, inverted=True)} "
                f"(goal >= 5x in every run's median)")
