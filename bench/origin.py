"""The origin every scenario fetches from: nginx on a free loopback port over media generated once under
out/bench/www (u/: 2,000 distinct 100 KB JPEGs, c/: a campaign's 20, v/: a 45 MB MP4; /slow/ serves u/ at 2 KB/s)."""

import os
import shutil

from nginx import Nginx
from places import FIXTURES, WWW
from programs import free_port


def sized(prefix_file, size, seed):
    """A file of `size` bytes that starts with a real fixture (so libmagic sees its type) and is unique."""
    with open(os.path.join(FIXTURES, prefix_file), "rb") as f:
        head = f.read()
    rng = seed.to_bytes(8, "little") * 1024
    body = head + rng
    return (body * (size // len(body) + 1))[:size]


def generate_media():
    marker = os.path.join(WWW, ".complete")
    if os.path.exists(marker):
        return
    shutil.rmtree(WWW, ignore_errors=True)
    for d in ("u", "c", "v"):
        os.makedirs(os.path.join(WWW, d))
    for i in range(2000):
        with open(os.path.join(WWW, "u", f"{i:04d}.jpg"), "wb") as f:
            f.write(sized("photo.jpg", 100 * 1024, i))
    for i in range(20):
        with open(os.path.join(WWW, "c", f"{i:02d}.jpg"), "wb") as f:
            f.write(sized("photo.jpg", 100 * 1024, 100000 + i))
    with open(os.path.join(WWW, "v", "big.mp4"), "wb") as f:
        f.write(sized("clip.mp4", 45 * 1000 * 1000, 7))
    open(marker, "w").close()


class Origin:
    """nginx serving WWW on 127.0.0.1:`port`, started by `start()`, stopped by `stop()`."""

    def __init__(self):
        self.port = None
        self.nginx = Nginx("nginx")

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def campaign(self, count):
        """`count` URLs of a campaign: the 20 images of c/, in turn."""
        return [f"{self.base}/c/{i % 20:02d}.jpg" for i in range(count)]

    def start(self):
        generate_media()
        self.port = free_port()
        self.nginx.start(f"""
    access_log off;
    sendfile on;
    tcp_nopush on;
    types {{ image/jpeg jpg; video/mp4 mp4; image/webp webp; image/heic heic; image/png png; }}
    server {{
        listen 127.0.0.1:{self.port} backlog=4096;
        root {WWW};
        location /slow/ {{ alias {WWW}/u/; limit_rate 2k; }}
    }}""", [self.port], "nginx")

    def stop(self):
        self.nginx.stop()
