# SPDX-License-Identifier: Apache-2.0
"""Traces across languages: the published Python SDK (babelqueue[otel] 1.24.0
with the OpenTelemetry Python SDK) and this SDK's CLI, on a real broker, both
exporting OTLP/HTTP to one test receiver (otlp_receiver.py, which decodes
with opentelemetry-proto).

    interop_python.py CLI URL

1. Python publishes with babelqueue.otel.publish; `babelqueue work` consumes:
   each C++ consumer span is a child of its Python producer span, in the same
   trace, and the command the worker runs gets the consumer span in
   TRACEPARENT.
2. `babelqueue publish` (tracing on) publishes; Python consumes with
   babelqueue.otel.wrap_handler: each Python consumer span is a child of its
   C++ producer span, and the trace_id Python sees is the trace as a UUID.
3. Without a traceparent header, the same trace_id consumed on each side:
   both consumer spans land in the trace the mapping gives, under the same
   synthetic parent.
4. `babelqueue publish`, `work` failing it into the dead-letter queue and
   `redrive` (all traced): the redrive span is in the message's trace, and
   the Python consumer of the redriven message is still a child of the C++
   producer span: traceparent crossed the dead-letter queue.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_receiver import Receiver  # noqa: E402

from babelqueue import BabelQueue, otel  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: E402

URN = "urn:interop:otel"
COUNT = 3
failures = []


def check(condition, what):
    print(("ok:   " if condition else "FAIL: ") + what)
    if not condition:
        failures.append(what)


def cli(binary, url, receiver, service, *args, tracing=True, timeout=120):
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("OTEL_"):
            del env[name]
    if tracing:
        env.update(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                "OTEL_SERVICE_NAME": service,
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            }
        )
    out = subprocess.run([binary, "--url", url, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        print(out.stdout, out.stderr, file=sys.stderr)
    return out


def spans_of(receiver, service, name):
    spans, _ = receiver.snapshot()
    return [s for s in spans if s["resource"].get("service.name") == {"string": service} and s["name"] == name]


def wait_for(what, predicate, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    print(f"timed out waiting for {what}")
    return False


def main():
    binary, url = sys.argv[1], sys.argv[2]
    receiver = Receiver("ok")
    provider = TracerProvider(resource=Resource.create({"service.name": "python-peer"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint + "/v1/traces")))
    tracer = provider.get_tracer("interop")
    suffix = uuid.uuid4().hex[:8]
    work_dir = tempfile.mkdtemp()

    # 1. Python -> C++.
    queue = f"otel-py-to-cpp-{suffix}"
    app = BabelQueue(url, queue=queue)
    ids = [otel.publish(tracer, app, URN, {"n": i}) for i in range(COUNT)]
    provider.force_flush()
    seen = os.path.join(work_dir, "traceparents")
    out = cli(binary, url, receiver, "cpp-worker", "work", queue, "--max-messages", str(COUNT), "--idle-exit", "3",
              "--", "sh", "-c", f'printf "%s %s\\n" "$BQ_MESSAGE_ID" "$TRACEPARENT" >> {seen}')
    check(out.returncode == 0, "babelqueue work exits 0")
    check("0 dropped, 0 failed" in out.stderr, "the worker's exporter lost nothing: " + out.stderr.strip().splitlines()[-1])
    produced = {s["attributes"]["messaging.message.id"]["string"]: s
                for s in spans_of(receiver, "python-peer", f"publish {URN}")}
    wait_for("the C++ consumer spans", lambda: len(spans_of(receiver, "cpp-worker", f"process {URN}")) >= COUNT)
    consumed = {s["attributes"]["messaging.message.id"]["string"]: s
                for s in spans_of(receiver, "cpp-worker", f"process {URN}")}
    check(sorted(produced) == sorted(ids), f"Python exported a producer span per message ({len(produced)})")
    check(sorted(consumed) == sorted(ids), f"the C++ worker exported a consumer span per message ({len(consumed)})")
    with open(seen, encoding="utf-8") as f:
        env_traceparents = dict(line.split() for line in f if line.strip())
    for message_id in ids:
        p, c = produced.get(message_id), consumed.get(message_id)
        if not p or not c:
            continue
        check(c["trace_id"] == p["trace_id"], f"{message_id}: the C++ consumer span is in the Python trace")
        check(c["parent_span_id"] == p["span_id"], f"{message_id}: its parent is the Python producer span")
        check(c["kind"] == 5 and p["kind"] == 4, f"{message_id}: CONSUMER under PRODUCER")
        check(c["flags"] & 0x300 == 0x300, f"{message_id}: the parent is marked remote")
        check(c["attributes"]["messaging.message.conversation_id"]["string"] == otel.uuid_of(int(p["trace_id"], 16)),
              f"{message_id}: conversation_id is the trace_id Python stamped")
        check(env_traceparents.get(message_id) == f"00-{c['trace_id']}-{c['span_id']}-01",
              f"{message_id}: the command got the consumer span in TRACEPARENT")

    # 2. C++ -> Python.
    queue = f"otel-cpp-to-py-{suffix}"
    out = cli(binary, url, receiver, "cpp-producer", "publish", queue, URN, '{"n":1}', "--count", str(COUNT))
    check(out.returncode == 0, "babelqueue publish exits 0")
    cpp_ids = out.stdout.split()
    seen_trace_ids = {}

    def handler(data, meta, envelope):
        seen_trace_ids[meta["id"]] = envelope["trace_id"]

    app = BabelQueue(url, queue=queue)
    app.register(URN, otel.wrap_handler(tracer, handler))
    handled = app.consume(max_messages=COUNT, timeout=5.0, handle_signals=False)
    provider.force_flush()
    check(handled == COUNT, f"Python handled {handled} of {COUNT}")
    wait_for("the C++ producer spans", lambda: len(spans_of(receiver, "cpp-producer", f"publish {URN}")) >= COUNT)
    produced = {s["attributes"]["messaging.message.id"]["string"]: s
                for s in spans_of(receiver, "cpp-producer", f"publish {URN}")}
    consumed = {s["attributes"]["messaging.message.id"]["string"]: s
                for s in spans_of(receiver, "python-peer", f"process {URN}")}
    check(sorted(produced) == sorted(cpp_ids), f"the CLI exported a producer span per message ({len(produced)})")
    check(sorted(consumed) == sorted(cpp_ids), f"Python exported a consumer span per message ({len(consumed)})")
    for message_id in cpp_ids:
        p, c = produced.get(message_id), consumed.get(message_id)
        if not p or not c:
            continue
        check(c["trace_id"] == p["trace_id"], f"{message_id}: the Python consumer span is in the C++ trace")
        check(c["parent_span_id"] == p["span_id"], f"{message_id}: its parent is the C++ producer span")
        check(seen_trace_ids.get(message_id) == otel.uuid_of(int(p["trace_id"], 16)),
              f"{message_id}: the envelope's trace_id is the C++ trace as a UUID")

    # 3. No header: the same trace_id consumed on each side.
    trace_id = f"order-{suffix}"
    expected_trace = format(otel.trace_id_of(trace_id), "032x")
    expected_parent = format(otel._span_id_of(trace_id), "016x")
    queue = f"otel-bare-to-cpp-{suffix}"
    BabelQueue(url, queue=queue).publish(URN, {"n": 0}, trace_id=trace_id)  # no header
    out = cli(binary, url, receiver, "cpp-bare-worker", "work", queue, "--max-messages", "1", "--idle-exit", "3",
              "--", "true")
    check(out.returncode == 0, "babelqueue work exits 0 (no header)")
    queue = f"otel-bare-to-py-{suffix}"
    out = cli(binary, url, receiver, "unused", "publish", queue, URN, '{"n":0}', "--trace-id", trace_id, tracing=False)
    check(out.returncode == 0, "babelqueue publish without tracing exits 0")
    app = BabelQueue(url, queue=queue)
    app.register(URN, otel.wrap_handler(tracer, lambda data, meta: None))
    check(app.consume(max_messages=1, timeout=5.0, handle_signals=False) == 1, "Python handled the bare message")
    provider.force_flush()
    wait_for("the bare consumer span", lambda: spans_of(receiver, "cpp-bare-worker", f"process {URN}"))
    cpp = spans_of(receiver, "cpp-bare-worker", f"process {URN}")
    py = [s for s in spans_of(receiver, "python-peer", f"process {URN}")
          if s["attributes"]["messaging.message.conversation_id"]["string"] == trace_id]
    check(len(cpp) == 1 and len(py) == 1, f"one consumer span each ({len(cpp)}, {len(py)})")
    if cpp and py:
        check(cpp[0]["trace_id"] == py[0]["trace_id"] == expected_trace,
              f"both in trace {expected_trace}, the mapping of {trace_id!r}")
        check(cpp[0]["parent_span_id"] == py[0]["parent_span_id"] == expected_parent,
              f"both under the synthetic parent {expected_parent}")

    # 4. Dead-lettered by C++, redriven by the CLI, consumed by Python.
    queue = f"otel-redrive-{suffix}"
    out = cli(binary, url, receiver, "cpp-producer-4", "publish", queue, URN, '{"n":4}')
    check(out.returncode == 0, "babelqueue publish exits 0 (redrive)")
    message_id = out.stdout.strip()
    out = cli(binary, url, receiver, "cpp-failing-worker", "work", queue, "--max-messages", "1", "--idle-exit", "3",
              "--max-attempts", "1", "--dead-letter", "--", "false")
    check(out.returncode == 0 and "dead-lettered 1" in out.stderr, "babelqueue work dead-letters it")
    out = cli(binary, url, receiver, "cpp-redrive", "redrive", queue + ".dlq", "--bypass")
    check(out.returncode == 0 and "redriven 1," in out.stdout, "babelqueue redrive moves it back")
    app = BabelQueue(url, queue=queue)
    app.register(URN, otel.wrap_handler(tracer, lambda data, meta: None))
    check(app.consume(max_messages=1, timeout=5.0, handle_signals=False) == 1, "Python handled the redriven message")
    provider.force_flush()
    wait_for("the redrive span", lambda: spans_of(receiver, "cpp-redrive", f"redrive {URN}"))
    producer = spans_of(receiver, "cpp-producer-4", f"publish {URN}")
    failed = spans_of(receiver, "cpp-failing-worker", f"process {URN}")
    redriven = spans_of(receiver, "cpp-redrive", f"redrive {URN}")
    consumer = [s for s in spans_of(receiver, "python-peer", f"process {URN}")
                if s["attributes"]["messaging.message.id"]["string"] == message_id]
    check(len(producer) == len(failed) == len(redriven) == len(consumer) == 1,
          f"one span each: {len(producer)} {len(failed)} {len(redriven)} {len(consumer)}")
    if producer and failed and redriven and consumer:
        trace = producer[0]["trace_id"]
        uuid_form = otel.uuid_of(int(trace, 16))
        check(failed[0]["trace_id"] == trace and failed[0]["parent_span_id"] == producer[0]["span_id"],
              "the failing C++ consumer is a child of the producer")
        check(failed[0]["status_code"] == 2, "and has status error")
        check(redriven[0]["trace_id"] == trace, "the redrive span is in the message's trace")
        check(redriven[0]["parent_span_id"] == format(otel._span_id_of(uuid_form), "016x"),
              "under the trace_id's synthetic parent")
        check(redriven[0]["attributes"].get("messaging.babelqueue.redriven_from") == {"string": queue + ".dlq"},
              "it names the dead-letter queue")
        check(consumer[0]["trace_id"] == trace and consumer[0]["parent_span_id"] == producer[0]["span_id"],
              "the Python consumer of the redriven message is a child of the C++ producer span")

    provider.shutdown()
    receiver.stop()
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
