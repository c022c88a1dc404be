"""The HTTPS origin of (h): a private CA made for the run with the openssl command line (under out/bench/tls), one
leaf certificate for the four HOSTS, and nginx (TLS 1.3 only, session tickets and a session cache on) serving the
generated media of origin.py on two free loopback ports, one with HTTP/2 and one with HTTP/1.1 only. The names are
pinned to 127.0.0.1 by the clients (`--resolve`), so nothing leaves loopback. nginx's access log says, run by run,
how many TLS connections each client made to each host and how many of them resumed a session."""

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field

from nginx import Nginx
from origin import generate_media
from places import OUT, WWW
from programs import free_port

TLS = os.path.join(OUT, "tls")
HOSTS = tuple(f"m{i}.bench.test" for i in range(4))  # .test is reserved (RFC 2606): never a real name

# One line a request: the connection's serial number (unique for nginx's lifetime), the TLS session's name (SNI),
# whether the handshake resumed a session ("r") or was a full one ("."), the protocol, the status.
LOG_FORMAT = "$connection $ssl_server_name $ssl_session_reused $server_protocol $status"


def openssl(*arguments):
    result = subprocess.run(["openssl", *arguments], cwd=TLS, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"openssl {arguments[0]} failed: {result.stderr[-2000:]}")


def make_certificates():
    """A CA made for this run (EC P-256, valid two days) and a leaf it signs for every name of HOSTS, in a fresh
    TLS directory: ca.pem (what the clients trust), leaf.pem and leaf.key (what nginx serves)."""
    shutil.rmtree(TLS, ignore_errors=True)
    os.makedirs(TLS)
    curve = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    openssl("req", "-x509", *curve, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=RichPush bench CA (made for one run)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", *curve, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", f"/CN={HOSTS[0]}")
    with open(os.path.join(TLS, "leaf.ext"), "w") as f:
        f.write("basicConstraints = critical, CA:FALSE\n"
                "keyUsage = critical, digitalSignature\n"
                "extendedKeyUsage = serverAuth\n"
                "subjectKeyIdentifier = hash\n"
                "authorityKeyIdentifier = keyid, issuer\n"
                f"subjectAltName = {', '.join(f'DNS:{host}' for host in HOSTS)}\n")
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext")


@dataclass
class Connections:
    """What nginx logged during one run: its requests, by protocol and status, and its TLS connections, by host."""

    requests: int = 0
    protocols: dict = field(default_factory=dict)  # "HTTP/2.0" -> requests
    statuses: dict = field(default_factory=dict)  # "200" -> requests
    hosts: dict = field(default_factory=dict)  # SNI -> {connection serial: resumed}

    @property
    def handshakes(self):
        """TLS connections opened: each pays a handshake, full or resumed."""
        return sum(len(connections) for connections in self.hosts.values())

    @property
    def resumed(self):
        return sum(sum(connections.values()) for connections in self.hosts.values())

    @property
    def after_first(self):
        """Connections after the first to each host: those that could have resumed a session of an earlier one."""
        return self.handshakes - len(self.hosts)

    @property
    def resumed_share(self):
        """The share of `after_first` that resumed; None when there were none (one connection a host)."""
        return self.resumed / self.after_first if self.after_first else None

    def by_host(self):
        """`m0 16/0, m1 16/0, ...`: connections and resumed ones for each host."""
        return ", ".join(f"{host.split('.')[0]} {len(connections)}/{sum(connections.values())}"
                         for host, connections in sorted(self.hosts.items()))


class TLSOrigin:
    """nginx over HTTPS on two free loopback ports (`ports["h2"]`: HTTP/2 and HTTP/1.1 by ALPN; `ports["http/1.1"]`:
    HTTP/1.1 only), started by `start()` with a fresh CA, stopped by `stop()`."""

    def __init__(self):
        self.ports = {}
        self.nginx = Nginx("nginx-tls")
        self.log = os.path.join(self.nginx.prefix, "logs", "access.log")

    @property
    def ca_bundle(self):
        return os.path.join(TLS, "ca.pem")

    def resolve(self, port):
        """curl's and richpush's `--resolve` entries that pin every name of HOSTS on `port` to 127.0.0.1."""
        return [f"{host}:{port}:127.0.0.1" for host in HOSTS]

    def start(self):
        generate_media()
        make_certificates()
        h2 = free_port()
        h1 = next((port for port in (free_port() for _ in range(10)) if port != h2), None)
        if h1 is None:
            sys.exit("no second free port for the HTTPS origin")
        self.ports = {"h2": h2, "http/1.1": h1}
        # A fresh log: each run's connections are read from it.
        shutil.rmtree(self.nginx.prefix, ignore_errors=True)
        server = f"""
        server_name {' '.join(HOSTS)};
        root {WWW};"""
        self.nginx.start(f"""
    log_format tls '{LOG_FORMAT}';
    access_log {self.log} tls;
    types {{ image/jpeg jpg; }}
    ssl_certificate {TLS}/leaf.pem;
    ssl_certificate_key {TLS}/leaf.key;
    ssl_protocols TLSv1.3;
    # nginx's defaults made explicit: tickets on (TLS 1.3 resumes by ticket), and a cache for the server side.
    ssl_session_tickets on;
    ssl_session_cache shared:bench:10m;
    server {{
        listen 127.0.0.1:{h2} ssl http2 backlog=4096;{server}
    }}
    server {{
        listen 127.0.0.1:{h1} ssl backlog=4096;{server}
    }}""", [h2, h1], "nginx (HTTPS)")

    def stop(self):
        self.nginx.stop()

    def mark(self):
        """Where the log ends now: `since` reads only what was logged after it."""
        return os.path.getsize(self.log)

    def since(self, mark, requests=None):
        """The Connections nginx logged after `mark`. nginx logs a request after its response is sent, so the
        client may exit before the last line is written: this waits (4 s at most) until `requests` lines are there
        when the count is known, and until the log has not grown for 0.1 s."""
        size = -1
        for _ in range(40):
            text = self.read(mark)
            if len(text) == size and (requests is None or text.count("\n") >= requests):
                break
            size = len(text)
            time.sleep(0.1)
        seen = Connections()
        for line in text.splitlines():
            serial, host, reused, protocol, status = line.split(" ")
            seen.requests += 1
            seen.protocols[protocol] = seen.protocols.get(protocol, 0) + 1
            seen.statuses[status] = seen.statuses.get(status, 0) + 1
            seen.hosts.setdefault(host, {})[serial] = reused == "r"
        return seen

    def read(self, mark):
        with open(self.log) as f:
            f.seek(mark)
            text = f.read()
        # A line being written when we read stays for the next read.
        return text[:text.rfind("\n") + 1]
