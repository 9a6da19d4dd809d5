#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`babelqueue outbox relay` killed with SIGKILL in the middle of a batch.

An application database holds N committed outbox rows (written the way the
documented table layout describes, as another language's producer could);
the relay publishes them to a SQLite broker file and is killed with -9 after
it published a batch and before it marked the batch's rows (the test locks
the outbox table against writes to hold it there). A second relay with
--drain, after the dead relay's lease ended, publishes the rest. Every
message arrives (0 lost); the copies the killed batch published twice are
counted and reported.

With a PostgreSQL URL as second argument the outbox is a table there (rows
inserted with psql), else a SQLite file.

usage: cli_kill_test.py BABELQUEUE_BINARY [POSTGRESQL_URL]
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

BATCH = 250


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    binary = sys.argv[1]
    postgres = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as tmp:
        app_db = os.path.join(tmp, "app.db")
        table = "bq_kill_%d" % os.getpid()
        store = postgres + "?table=" + table if postgres else "sqlite://" + app_db
        broker = "sqlite://" + os.path.join(tmp, "broker.db")
        relay = [binary, "--url", broker, "outbox", "relay", "--store", store, "--batch", str(BATCH), "--lease", "1"]

        # The table, made by the relay's own migration (nothing pending yet).
        subprocess.run(relay + ["--drain"], check=True, capture_output=True, timeout=60)
        now = int(time.time() * 1000)
        rows = 20000  # enough that the kill lands before the end (4000 on SQLite were once all marked first)
        ids = [str(uuid.uuid4()) for _ in range(rows)]
        bodies = [json.dumps({"job": "urn:shop:orders:created", "trace_id": str(uuid.uuid4()),
                              "data": {"order_id": n},
                              "meta": {"id": ids[n], "queue": "orders", "lang": "python", "schema_version": 1,
                                       "created_at": now}, "attempts": 0}, separators=(",", ":"))
                  for n in range(rows)]

        def psql(sql, stdin=None):
            return subprocess.run(["psql", postgres, "-qtAX", "-v", "ON_ERROR_STOP=1", "-c", sql], input=stdin,
                                  capture_output=True, text=True, timeout=60, check=True).stdout.strip()

        if postgres:
            # COPY's text format: a tab between the columns, a row a line (the
            # bodies hold no tab, newline or backslash).
            subprocess.run(["psql", postgres, "-qX", "-v", "ON_ERROR_STOP=1", "-c",
                            "COPY " + table + " (queue, body) FROM STDIN"],
                           input="".join("orders\t" + b + "\n" for b in bodies), text=True, check=True,
                           capture_output=True, timeout=60)

            def published():
                return int(psql("SELECT count(*) FROM " + table + " WHERE published_at IS NOT NULL"))
        else:
            db = sqlite3.connect(app_db)
            with db:
                db.executemany("INSERT INTO babelqueue_outbox (queue, body, created_at) VALUES ('orders', ?, ?)",
                               [(b.encode(), now) for b in bodies])

            def published():
                return db.execute(
                    "SELECT count(*) FROM babelqueue_outbox WHERE published_at IS NOT NULL").fetchone()[0]

        def delivered():
            out = subprocess.run([binary, "--url", broker, "stats", "orders", "--json"], capture_output=True,
                                 text=True, timeout=60)
            return json.loads(out.stdout)["ready"] if out.returncode == 0 and out.stdout else 0

        # The kill must land while a batch is published but not yet marked
        # (the case that makes duplicates). Waiting for a count of deliveries
        # and killing then lands there only by chance (the publishes of a batch
        # are fast next to the claim and the mark), so the outbox table is
        # locked against writes as soon as the relay's first publishes arrive:
        # the relay goes on publishing its claimed batch and then waits at the
        # mark, where it is killed. A lock taken too late holds the relay at
        # its next claim instead (nothing published and unmarked); then the
        # relay is started and killed again.
        def lock_outbox():
            if postgres:
                holder = subprocess.Popen(["psql", postgres, "-qtAX", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, text=True)
                holder.stdin.write("BEGIN;\nLOCK TABLE %s IN SHARE MODE;\nSELECT 'locked';\n" % table)
                holder.stdin.flush()
                if holder.stdout.readline().strip() != "locked":
                    fail("could not lock the outbox table")

                def unlock():
                    # The dead relay's session may still wait for the lock; a
                    # crashed client's statement must not run after it died.
                    holder.stdin.write("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid));\nROLLBACK;\n")
                    holder.stdin.close()
                    holder.wait(timeout=60)
                return unlock
            holder = sqlite3.connect(app_db, isolation_level=None, timeout=30)
            holder.execute("BEGIN IMMEDIATE")

            def unlock():
                holder.execute("ROLLBACK")
                holder.close()
            return unlock

        kills = 0
        while True:
            kills += 1
            before = delivered()
            running = subprocess.Popen(relay, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while time.time() < deadline and delivered() == before:
                time.sleep(0.002)
            unlock = lock_outbox()
            # The relay publishes the rest of its batch, then stops at the mark.
            last, still_since = delivered(), time.time()
            while time.time() < deadline and time.time() - still_since < 0.5:
                time.sleep(0.05)
                now_sent = delivered()
                if now_sent != last:
                    last, still_since = now_sent, time.time()
            running.send_signal(signal.SIGKILL)
            running.wait()
            unlock()
            marked, sent = published(), delivered()
            if not marked < rows:
                fail("the relay was not killed before the end: %d of %d marked" % (marked, rows))
            if sent > marked:
                break
            if kills == 8:
                fail("8 kills, none in the middle of a batch: %d marked, %d on the broker" % (marked, sent))
            time.sleep(1.2)  # the dead relay's lease ends
        print("killed with SIGKILL (kill %d): %d rows marked published, %d messages on the broker, %d of them "
              "published and not marked" % (kills, marked, sent, sent - marked))

        time.sleep(1.2)  # the dead relay's lease ends
        out = subprocess.run(relay + ["--drain", "--json"], capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            fail("the second relay: " + out.stderr)
        if published() != rows:
            fail("%d rows still pending after --drain" % (rows - published()))

        bodies = subprocess.run([binary, "--url", broker, "drain", "orders", "--wait", "0.2"], capture_output=True,
                                text=True, timeout=120, check=True).stdout.splitlines()
        seen = [json.loads(b)["meta"]["id"] for b in bodies if b]
        lost = set(ids) - set(seen)
        duplicates = len(seen) - len(set(seen))
        if lost:
            fail("%d messages lost" % len(lost))
        if set(seen) - set(ids):
            fail("messages that were never written arrived")
        print("ok: %s: %d rows, 0 lost, %d duplicates (the killed batch published again), second relay: %s"
              % ("postgresql" if postgres else "sqlite", rows, duplicates, out.stdout.strip()))
        if postgres:
            psql("DROP TABLE " + table)


if __name__ == "__main__":
    main()
