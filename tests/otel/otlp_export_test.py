# SPDX-License-Identifier: Apache-2.0
"""What the SDK's OTLP exporter sends, decoded by the official protobuf classes
(opentelemetry-proto): otlp_export_peer traces a few messages with its tracer
configured by OTEL_* variables and prints the spans it recorded; every one of
them must arrive at the receiver, field for field, with the resource and the
request headers the variables asked for.

    otlp_export_test.py PEER
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_receiver import Receiver  # noqa: E402

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def main():
    peer = sys.argv[1]
    receiver = Receiver("ok")
    env = dict(os.environ)
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint + "/",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s3cr%3Dt, x-tenant = blue",
            "OTEL_SERVICE_NAME": "otlp-peer",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,service.name=overridden",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2",
        }
    )
    out = subprocess.run([peer], env=env, capture_output=True, text=True, timeout=60)
    receiver.stop()
    check(out.returncode == 0, f"the peer exits 0 (got {out.returncode}: {out.stderr.strip()})")
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    if not lines:
        print("FAIL: the peer printed nothing")
        return 1
    stats = lines.pop()
    recorded = {s["span_id"]: s for s in lines}
    received_list, requests = receiver.snapshot()
    received = {s["span_id"]: s for s in received_list}

    check(len(recorded) == 5, f"the peer recorded 5 spans (2 publish, 3 process), got {len(recorded)}")
    check(stats == {"exported": 5, "dropped": 0, "failed": 0, "requests": stats["requests"]}, f"counts {stats}")
    check(stats["requests"] >= 3, f"batches of at most 2 spans: at least 3 requests, got {stats['requests']}")
    check(len(received_list) == len(received), "no span was received twice")
    check(set(received) == set(recorded), "the receiver has exactly the recorded spans")
    check(all(path == "/v1/traces" for path, _ in requests), f"POST to /v1/traces: {[p for p, _ in requests]}")
    for _, headers in requests:
        h = {k.lower(): v for k, v in headers.items()}
        check(h.get("content-type") == "application/x-protobuf", f"content type {h.get('content-type')}")
        check(h.get("x-api-key") == "s3cr=t", f"x-api-key decoded: {h.get('x-api-key')}")
        check(h.get("x-tenant") == "blue", f"x-tenant trimmed: {h.get('x-tenant')}")

    for span_id, mine in recorded.items():
        theirs = received.get(span_id)
        if theirs is None:
            continue
        for key in (
            "trace_id",
            "parent_span_id",
            "trace_state",
            "name",
            "kind",
            "start",
            "end",
            "attributes",
            "events",
            "status_code",
            "status_message",
        ):
            check(theirs[key] == mine[key], f"{mine['name']} {key}: sent {mine[key]!r}, received {theirs[key]!r}")
        flags = 0x01 if mine["sampled"] else 0
        if mine["parent_span_id"]:
            flags |= 0x100 | (0x200 if mine["parent_remote"] else 0)
        check(theirs["flags"] == flags, f"{mine['name']} flags {theirs['flags']:#x}, expected {flags:#x}")
        resource = theirs["resource"]
        check(resource.get("service.name") == {"string": "otlp-peer"}, f"service.name {resource.get('service.name')}")
        check(resource.get("deployment.environment") == {"string": "test"}, "the resource attribute")
        check(resource.get("telemetry.sdk.language") == {"string": "cpp"}, "telemetry.sdk.language")
        check(theirs["scope"] == "babelqueue", f"scope {theirs['scope']}")

    # The shapes that matter across SDKs, read from the decoded side.
    by_name = {}
    for s in received.values():
        by_name.setdefault(s["name"], []).append(s)
    created = by_name.get("publish urn:orders:created", [{}])[0]
    check(created.get("trace_id") == "4bf92f3577b34da6a3ce929d0e0e4736", "the publish joined the upstream trace")
    check(created.get("trace_state") == "vendor=abc", "the tracestate went with it")
    check(created.get("kind") == 4, "publish is PRODUCER (4)")
    process = by_name.get("process urn:orders:created", [{}])[0]
    check(process.get("parent_span_id") == created.get("span_id"), "process is a child of publish")
    check(process.get("kind") == 5, "process is CONSUMER (5)")
    failing = by_name.get("process urn:orders:failing", [])
    check(len(failing) == 2, f"two attempts of the failing message, got {len(failing)}")
    for s in failing:
        check(s["status_code"] == 2 and s["status_message"] == "card declined", f"error status {s['status_code']}")
        check(
            s["events"] and s["events"][0]["attributes"].get("exception.message") == {"string": "card declined"},
            "the exception event",
        )
    attempts = sorted(s["attributes"]["messaging.babelqueue.attempts"]["int"] for s in failing)
    check(attempts == [0, 1], f"attempts as int attributes: {attempts}")

    print(f"{len(received)} spans in {len(requests)} requests checked; {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
