#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""This SDK's transports against the published Python SDK's, on the same brokers, in one run.

Usage:
  bench/python_sdk_transports.py BABELQUEUE_BINARY [--transports LIST] [--messages N] [--size BYTES]
                                 [--python PYTHON] [--strict] [--markdown]

For each transport of LIST (default redis,rabbitmq,kafka,sqs,artemis,pulsar,servicebus:
every broker transport the pinned Python SDK has an extra for; the broker of scripts/broker, started when it is not running and then
stopped again after its lines, so at most one JVM broker runs at a time; its
URL is `scripts/broker url NAME`), on queues of their own:

  ours         babelqueue --url URL bench QUEUE --messages N --size BYTES --concurrency C --json,
               for C = 1 and 4: publish_batch in chunks, then a Worker with a no-op handler
  Python SDK   its App (babelqueue.BabelQueue) in the interpreter of `scripts/python-sdk path`
               unless --python is given: N x app.publish(urn, data), then
               app.consume(queue, max_messages=N) with a no-op handler (one thread: the
               Python App has no concurrency setting). Its Kafka publish returns once
               librdkafka holds the record, so its publish time ends with a flush;
               its SQS transport creates no queue, so the loop creates it first
               (ours gets create=1); its Pulsar subscription is made by a first pop
               before the publishes, as a subscription starts at the topic's end;
               on Kafka each run of either side has a consumer group of its own.
Before the timed runs, a short run of ours warms the broker up.

Both sides send the same envelope: job urn:babelqueue:bench, data
{"seq": i, "payload": "xxx..."} of about BYTES bytes of JSON. The script
prints the rates, the Python client's CPU time a message (user + system, its
own process) and the ratios (ours / Python SDK) against the targets of
docs/benchmarks.md: at least 3x on publish and on consume + ack (the c1 and
the c4 consumer each against the one Python consume loop). The publish line
takes the slower of our two runs. --markdown prints the table of
docs/benchmarks.md instead, under a line saying when, on which commit and on
what machine it was measured. The exit code is 0 even with FAIL rows unless
--strict is given; 2 when a run fails.
"""

import json
import os
import subprocess
import sys

import machine

HERE = os.path.dirname(os.path.abspath(__file__))
BROKER = os.path.join(HERE, "..", "scripts", "broker")
TARGET = 3.0
DEFAULT_TRANSPORTS = "redis,rabbitmq,kafka,sqs,artemis,pulsar,servicebus"
URN = "urn:babelqueue:bench"

# Runs inside the Python SDK's interpreter: publishes then consumes COUNT
# envelopes through the App, prints {"publish": msg/s, "consume": msg/s}.
PYTHON_LOOP = r"""
import json, resource, sys, time
from babelqueue import BabelQueue

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

url, queue, count, size, urn = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
empty = len(json.dumps({"seq": count, "payload": ""}, separators=(",", ":")))
payload = "x" * max(0, size - empty)
if url.startswith("kafka"):
    # A consumer group of its own: the SDK's default group is shared by every
    # run, and a member of an earlier run that died holds it in a rebalance.
    from babelqueue.kafka_transport import KafkaTransport
    app = BabelQueue(transport=KafkaTransport(url, group_id=queue), queue=queue)
else:
    app = BabelQueue(url, queue=queue)
app.register(urn, lambda data, meta: None)
if url.startswith("pulsar"):
    # The SDK subscribes on its first pop; a subscription made after the
    # publishes would start past them.
    app.transport.pop(queue, timeout=0.5)
elif url.startswith("sqs"):
    # The SDK looks queues up and never creates one (ours does with create=1).
    app.transport._sqs.create_queue(QueueName=queue)
start, start_cpu = time.perf_counter(), cpu()
for seq in range(count):
    app.publish(urn, {"seq": seq, "payload": payload})
if url.startswith("kafka"):
    # Its publish hands the record to librdkafka and returns: the records
    # count once the broker has them, as ours do.
    app.transport._producer_().flush()
publish = count / (time.perf_counter() - start)
publish_cpu = (cpu() - start_cpu) / count * 1e6
start, start_cpu = time.perf_counter(), cpu()
processed = app.consume(queue, max_messages=count, timeout=5.0, handle_signals=False)
consume = processed / (time.perf_counter() - start)
consume_cpu = (cpu() - start_cpu) / max(processed, 1) * 1e6
app.transport.close()
if processed != count:
    sys.exit(f"the Python SDK consumed {processed} of {count} messages")
print(json.dumps({"publish": publish, "consume": consume, "publish_cpu_us": publish_cpu, "consume_cpu_us": consume_cpu}))
"""


def fail(message):
    print(f"python_sdk_transports.py: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if argv else 2)
    options = {"binary": argv[0], "transports": DEFAULT_TRANSPORTS, "messages": 20000, "size": 256, "python": None,
               "strict": False, "markdown": False}
    rest = argv[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in ("--strict", "--markdown"):
            options[arg[2:]] = True
        elif arg in ("--transports", "--messages", "--size", "--python") and i + 1 < len(rest):
            key = arg[2:]
            options[key] = int(rest[i + 1]) if key in ("messages", "size") else rest[i + 1]
            i += 1
        else:
            fail(f"unknown argument {arg}")
        i += 1
    if options["messages"] < 1:
        fail("--messages must be at least 1")
    return options


def broker_url(name):
    """The broker's URL, and whether this run started it (and so stops it)."""
    status = subprocess.run([BROKER, "status", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            check=False)
    started = status.returncode != 0
    if started:
        subprocess.run([BROKER, "start", name], stdout=subprocess.DEVNULL, check=True)
    done = subprocess.run([BROKER, "url", name], stdout=subprocess.PIPE, check=True, text=True)
    return done.stdout.strip().splitlines()[-1], started


def stop_broker(name):
    subprocess.run([BROKER, "stop", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def ours(binary, url, queue, messages, size, concurrency):
    command = [binary, "--url", url, "bench", queue, "--messages", str(messages), "--size", str(size),
               "--concurrency", str(concurrency), "--json"]
    done = subprocess.run(command, stdout=subprocess.PIPE, check=False, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(command)} exited with {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def our_url(transport, url, queue):
    """Ours creates its SQS queues (the Python loop creates its own), and each
    Kafka run has a consumer group of its own, named after its queue."""
    if transport == "sqs":
        return url + "&create=1"
    if transport == "kafka":
        return url + ("&" if "?" in url else "?") + "group=" + queue
    return url


def warm_up(binary, url, queue):
    """A short run of ours before anything is timed: a broker just started may
    still be loading what its first clients need (Kafka's group coordinator
    and producer ids answer "load in progress" for several seconds), which
    neither side's figure should carry."""
    for attempt in range(3):
        done = subprocess.run([binary, "--url", url, "bench", f"{queue}-{attempt}", "--messages", "100", "--json"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if done.returncode == 0:
            return


def python_sdk(python, url, queue, messages, size):
    done = subprocess.run([python, "-c", PYTHON_LOOP, url, queue, str(messages), str(size), URN],
                          stdout=subprocess.PIPE, check=False, text=True)
    if done.returncode != 0:
        fail(f"the Python SDK's loop on {url} exited with {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv):
    options = parse_args(argv)
    python = options["python"]
    if python is None:
        python = subprocess.run([os.path.join(HERE, "..", "scripts", "python-sdk"), "path"], stdout=subprocess.PIPE,
                                check=True, text=True).stdout.strip()
    measured = machine.describe(HERE)
    messages, size = options["messages"], options["size"]
    tag = f"{os.getpid()}"
    rows = []  # (transport, what, python msg/s, ours msg/s, the Python client's CPU µs a message)
    for transport in [name for name in options["transports"].split(",") if name]:
        if transport == "sqs":
            # The emulator takes any signed request; both SDKs sign with these (as bench/sqs/run.sh).
            os.environ.setdefault("AWS_ACCESS_KEY_ID", "AKIDBABELQUEUETEST")
            os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "babelqueue-test-secret")
            os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        url, started = broker_url(transport)
        if transport == "servicebus":
            # Both SDKs read the namespace's key from here; the test server's is in its info.
            info = subprocess.run([BROKER, "info", transport], stdout=subprocess.PIPE, check=True, text=True).stdout
            os.environ["AZURE_SERVICEBUS_CONNECTION_STRING"] = next(
                line.split("=", 1)[1] for line in info.splitlines() if line.startswith("connection_string="))
        try:
            warm_up(options["binary"], our_url(transport, url, f"bench-warm-{tag}"), f"bench-warm-{tag}")
            runs = {c: ours(options["binary"], our_url(transport, url, f"bench-cpp-{tag}-c{c}"), f"bench-cpp-{tag}-c{c}",
                            messages, size, c) for c in (1, 4)}
            theirs = python_sdk(python, url, f"bench-py-{tag}", messages, size)
        finally:
            # A broker this run started is stopped before the next starts: the
            # JVM brokers (Kafka, SQS, Artemis, Pulsar) do not fit two at once.
            if started:
                stop_broker(transport)
        rows.append((transport, "publish", theirs["publish"],
                     min(runs[1]["publish_msgs_per_s"], runs[4]["publish_msgs_per_s"]), theirs["publish_cpu_us"]))
        for c in (1, 4):
            rows.append((transport, f"consume + ack, c{c}", theirs["consume"], runs[c]["consume_msgs_per_s"],
                         theirs["consume_cpu_us"]))
    failed = 0
    measured += f", load average {machine.load()} at the end"
    spaced = lambda value: format(value, ",.0f").replace(",", " ")
    if options["markdown"]:
        print(f"{measured}; {messages} messages of {size} bytes of data:")
        print()
        print("| transport | operation | Python SDK msg/s | Python SDK CPU µs/msg | ours msg/s | ratio | target |")
        print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    else:
        print(measured)
        print(f"{'transport':<10} {'operation':<18} {'Python msg/s':>13} {'Python CPU us/msg':>18} {'ours msg/s':>11} "
              f"{'ratio':>8}  target  verdict")
    for transport, what, theirs, mine, their_cpu in rows:
        ratio = mine / theirs if theirs > 0 else float("inf")
        verdict = "PASS" if ratio >= TARGET else "FAIL"
        failed += verdict != "PASS"
        if options["markdown"]:
            print(f"| {transport} | {what} | {spaced(theirs)} | {their_cpu:.0f} | {spaced(mine)} | {ratio:.1f}× "
                  f"| ≥ {TARGET:g}× — {verdict} |")
        else:
            print(f"{transport:<10} {what:<18} {theirs:>13.0f} {their_cpu:>18.0f} {mine:>11.0f} {ratio:>7.1f}x  "
                  f">={TARGET:g}x  {verdict}")
    return 1 if options["strict"] and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
