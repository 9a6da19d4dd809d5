# SPDX-License-Identifier: Apache-2.0
"""The Python pulsar-client (libpulsar underneath) doing what
babelqueue_bench_pulsar does, for bench/pulsar/run.sh; prints one line
"MODE N SECONDS MSG_PER_S".

  pulsar_client_bench.py URL MODE QUEUE N [CONCURRENCY]
  MODE: publish-batch  send_async with the producer's batching on (its defaults: up to 1000
                       messages or 10 ms a batch), then flush
        publish-sync   send() one by one, each receipt awaited (batching off)
        consume        CONCURRENCY threads, each with a consumer of its own on the Shared
                       subscription babelqueue, receive() and acknowledge() each message
"""

import sys
import threading
import time

import pulsar
from babelqueue.codec import EnvelopeCodec


def main(argv):
    url, mode, queue, n = argv[1], argv[2], argv[3], int(argv[4])
    concurrency = int(argv[5]) if len(argv) > 5 else 1
    topic = "persistent://public/default/" + queue
    body = EnvelopeCodec.encode(EnvelopeCodec.make("urn:bench:pulsar:msg", {"n": 0, "pad": "x" * 180}))
    payload = body.encode("utf-8")
    properties = {"bq-job": "urn:bench:pulsar:msg", "bq-attempts": "0", "bq-schema-version": "1"}
    client = pulsar.Client(url, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    if mode in ("publish-batch", "publish-sync"):
        producer = client.create_producer(topic, batching_enabled=(mode == "publish-batch"),
                                          block_if_queue_full=True, max_pending_messages=10000)
        producer.send(payload, properties=properties)
        start = time.monotonic()
        if mode == "publish-batch":
            errors = []

            def done(result, _msg_id):
                if result != pulsar.Result.Ok:
                    errors.append(result)

            for _ in range(n):
                producer.send_async(payload, done, properties=properties)
            producer.flush()
            if errors:
                raise SystemExit(f"{len(errors)} sends failed: {errors[0]}")
        else:
            for _ in range(n):
                producer.send(payload, properties=properties)
        seconds = time.monotonic() - start
    elif mode == "consume":
        consumers = [client.subscribe(topic, "babelqueue", consumer_type=pulsar.ConsumerType.Shared,
                                      initial_position=pulsar.InitialPosition.Earliest)
                     for _ in range(concurrency)]
        acked = [0]
        lock = threading.Lock()

        def run(consumer):
            while True:
                with lock:
                    if acked[0] >= n:
                        return
                try:
                    message = consumer.receive(timeout_millis=200)
                except pulsar.Timeout:
                    continue
                consumer.acknowledge(message)
                with lock:
                    acked[0] += 1

        start = time.monotonic()
        threads = [threading.Thread(target=run, args=(c,)) for c in consumers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.monotonic() - start
    else:
        print(__doc__, file=sys.stderr)
        return 2
    client.close()
    print(f"{mode} {n} {seconds:.3f} {n / seconds:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
