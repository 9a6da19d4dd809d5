# SPDX-License-Identifier: Apache-2.0
"""`babelqueue work --metrics` scraped while it works, read with the Prometheus
text-format parser of prometheus_client, and compared with what the run did:
the messages published, the ones handled, retried and dead-lettered, and the
worker's own summary line.

    metrics_scrape_test.py CLI

On a SQLite file (no broker): 20 urn:ok messages, 3 urn:flaky ones that fail
their first attempt, 2 urn:bad ones that always fail; max attempts 2.
"""

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

OK, FLAKY, BAD = 20, 3, 2
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


def samples(text):
    """{(sample name, frozenset of labels): value} for every sample."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(values, name, **labels):
    return values.get((name, frozenset(labels.items())), 0.0)


def total(values, name):
    return sum(v for (n, _), v in values.items() if n == name)


def main():
    cli = sys.argv[1]
    work = tempfile.mkdtemp()
    url = f"sqlite://{work}/queue.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for urn, count in (("urn:ok", OK), ("urn:flaky", FLAKY), ("urn:bad", BAD)):
        out = subprocess.run([cli, "--url", url, "publish", "orders", urn, "{}", "--count", str(count)],
                             capture_output=True, text=True, env=env, timeout=60)
        check(out.returncode == 0, f"published {count} {urn}")
    handler = 'case "$BQ_URN" in urn:bad) exit 1;; urn:flaky) [ "$BQ_ATTEMPTS" -gt 0 ] || exit 1;; esac'
    worker = subprocess.Popen(
        [cli, "--url", url, "work", "orders", "--metrics", "127.0.0.1:0", "--max-attempts", "2", "--dead-letter",
         "--idle-exit", "3", "--", "sh", "-c", handler],
        stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    port = threading.Event()
    found = {}

    def read_stderr():
        for line in worker.stderr:
            lines.append(line.rstrip("\n"))
            m = re.search(r"metrics on (http://\S+/metrics)", line)
            if m:
                found["url"] = m.group(1)
                port.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    check(port.wait(30), "the worker says where /metrics is")
    values = {}
    text = ""
    expected_handled = OK + FLAKY
    deadline = time.time() + 60
    while found and time.time() < deadline:
        with urllib.request.urlopen(found["url"], timeout=5) as response:
            text = response.read().decode("utf-8")
            content_type = response.headers.get("Content-Type", "")
        values = samples(text)
        if (total(values, "babelqueue_messages_handled_total") >= expected_handled
                and total(values, "babelqueue_messages_dead_lettered_total") >= BAD):
            break
        time.sleep(0.1)
    check(content_type.startswith("text/plain"), f"the text format ({content_type})")
    worker.wait(timeout=60)
    reader.join(timeout=5)
    check(worker.returncode == 0, f"the worker exits 0 ({worker.returncode})")

    q = {"queue": "orders"}
    check(value(values, "babelqueue_messages_handled_total", urn="urn:ok", **q) == OK, f"{OK} urn:ok handled")
    check(value(values, "babelqueue_messages_handled_total", urn="urn:flaky", **q) == FLAKY,
          f"{FLAKY} urn:flaky handled on their second attempt")
    check(value(values, "babelqueue_messages_retried_total", urn="urn:flaky", **q) == FLAKY, f"{FLAKY} flaky retried")
    check(value(values, "babelqueue_messages_retried_total", urn="urn:bad", **q) == BAD, f"{BAD} bad retried once")
    check(value(values, "babelqueue_messages_dead_lettered_total", urn="urn:bad", reason="failed", **q) == BAD,
          f"{BAD} urn:bad dead-lettered (reason failed)")
    check(value(values, "babelqueue_messages_failed_total", urn="urn:bad", **q) == 2 * BAD, "urn:bad failed twice each")
    # Every published message was received once, and every retry once more.
    check(value(values, "babelqueue_messages_received_total", urn="urn:ok", **q) == OK, f"{OK} urn:ok received")
    check(value(values, "babelqueue_messages_received_total", urn="urn:flaky", **q) == 2 * FLAKY,
          "urn:flaky received twice each")
    check(value(values, "babelqueue_messages_received_total", urn="urn:bad", **q) == 2 * BAD,
          "urn:bad received twice each")
    check(value(values, "babelqueue_handler_duration_seconds_count", urn="urn:ok", **q) == OK,
          "a handler duration per urn:ok delivery")
    check(value(values, "babelqueue_end_to_end_latency_seconds_count", urn="urn:flaky", **q) == 2 * FLAKY,
          "an end-to-end latency per urn:flaky delivery")
    check(value(values, "babelqueue_handler_duration_seconds_sum", urn="urn:ok", **q) > 0, "handler time measured")
    check(value(values, "babelqueue_messages_in_flight", **q) == 0, "nothing in flight at the end")
    check(value(values, "babelqueue_messages_prefetched", **q) == 0, "nothing prefetched at the end")

    summary = next((line for line in lines if "babelqueue: work orders stopped" in line), "")
    m = re.search(r"succeeded (\d+), failed (\d+), retried (\d+), dead-lettered (\d+)", summary)
    check(bool(m), f"the summary line: {summary}")
    if m:
        succeeded, failed, retried, dead = map(int, m.groups())
        check(total(values, "babelqueue_messages_handled_total") == succeeded, "handled = the summary's succeeded")
        check(total(values, "babelqueue_messages_failed_total") == failed, "failed = the summary's")
        check(total(values, "babelqueue_messages_retried_total") == retried, "retried = the summary's")
        check(total(values, "babelqueue_messages_dead_lettered_total") == dead, "dead-lettered = the summary's")
    print(f"{len(values)} samples checked; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
