"""(f) FCM campaign (issue 22): 10,000 FCM v1 messages over 20 images, each image for iOS and for Android, beside the
same campaign as APNs payloads; wall, peak RSS and their ratios, in alternated runs."""

import json
import os

from places import OUT
from programs import stream
from scenario import ORIGIN, RELEASE, Scenario


def fcm_message(url, i):
    """A wrapped FCM v1 message whose `notification.image` is `url`: one reference for iOS, one for Android."""
    return {"message": {"token": f"device-{i}", "notification": {"title": "Sale", "body": "Today", "image": url},
                        "apns": {"payload": {"aps": {"mutable-content": 1}}}}}


def apns_payload(url):
    return {"aps": {"alert": {"title": "Sale", "body": "Today"}, "mutable-content": 1}, "adb_media": url}


class FCMCampaign(Scenario):
    """FCM campaign: 10,000 FCM v1 messages over 20 images (iOS and Android media from each), beside the same
    campaign as APNs payloads (iOS alone); peak RSS goal: within 1.5x of the APNs campaign's"""

    key = "f"
    needs = frozenset({ORIGIN, RELEASE})

    def set_up(self, bench):
        urls = bench.origin.campaign(bench.scaled(10000))
        self.count = len(urls)
        self.inputs = {"fcm": os.path.join(OUT, "campaign-fcm.ndjson"),
                       "apns": os.path.join(OUT, "campaign-apns.ndjson")}
        with open(self.inputs["fcm"], "w") as fcm, open(self.inputs["apns"], "w") as apns:
            for i, url in enumerate(urls):
                fcm.write(json.dumps(fcm_message(url, i), separators=(",", ":")) + "\n")
                apns.write(json.dumps(apns_payload(url), separators=(",", ":")) + "\n")

    def runners(self, bench):
        def run(kind):
            return lambda build: stream(bench, self.inputs[kind], binary=build.binary)

        # Alternated: APNs then FCM in every round, each build beside the other.
        return [runner for kind in ("apns", "fcm") for runner in bench.per_build(kind, run(kind))]

    def report(self, bench, results):
        rows, notes = [], []
        for build in bench.builds:
            apns, fcm = results.median(("apns", build)), results.median(("fcm", build))
            rows.append((build.row(f"(f) campaign, {self.count:,} APNs payloads over 20"), apns, None, None,
                         self.count))
            rows.append((build.row(f"(f) campaign, {self.count:,} FCM messages over 20, iOS + Android"), fcm, None,
                         None, self.count))
            walls = results.ratios(("fcm", build), over=("apns", build))
            rss = fcm["rss"] / apns["rss"]
            outcomes = fcm.get("outcomes", {})
            notes.append(build.note(
                f"(f) FCM/APNs campaign: peak RSS {fcm['rss']:.1f} against {apns['rss']:.1f} MiB ({rss:.2f}x; goal "
                f"<= 1.5x: {'met' if rss <= 1.5 else 'NOT met'}); wall ratio median {walls[len(walls) // 2]:.2f}x "
                f"(range {walls[0]:.2f}-{walls[-1]:.2f}x, each within its round); FCM outcomes {outcomes}"))
        return rows, notes
