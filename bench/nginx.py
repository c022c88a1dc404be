"""One nginx of the bench's own: a prefix under out/bench, a configuration of one worker with keep-alive without a
request limit, started in the foreground on loopback ports and stopped by SIGQUIT. origin.py, tls.py and (s)'s empty
route each give it their `http` block's contents."""

import os
import signal
import subprocess

from places import OUT
from programs import wait_for_port


class Nginx:
    """nginx under out/bench/`name`, serving `http` (the `http { }` block's contents, after the settings every one of
    the bench's shares), started by `start(ports)`, stopped by `stop()`."""

    def __init__(self, name):
        self.prefix = os.path.join(OUT, name)
        self.process = None

    def start(self, http, ports, what):
        """Writes the configuration and starts nginx; returns once each of `ports` accepts (exits naming `what` if
        one does not)."""
        os.makedirs(os.path.join(self.prefix, "logs"), exist_ok=True)
        conf = os.path.join(self.prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
worker_processes 1;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/logs/error.log warn;
events {{ worker_connections 8192; }}
http {{
    keepalive_requests 1000000;
    keepalive_timeout 60s;
{http}
}}
""")
        self.process = subprocess.Popen(["nginx", "-p", self.prefix, "-c", conf, "-g", "daemon off;"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port in ports:
            wait_for_port(port, self.process, what)

    def stop(self):
        """SIGQUIT (nginx's graceful stop), then SIGKILL if it has not ended after 10 s."""
        if self.process:
            self.process.send_signal(signal.SIGQUIT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
            self.process = None
