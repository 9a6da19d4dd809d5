#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Robustness harness: every meta.id published must be consumed, whatever dies.

Starts producer and consumer processes (babelqueue_robustness_agent) on one
queue of any broker URL, SIGKILLs one consumer slot (the "victim") every few
seconds and restarts it, optionally restarts the broker once mid-run, waits
until every produced id was consumed (or a timeout), stops the consumers with
SIGTERM, and accounts:

  lost        produced ids never consumed               -> must be 0
  duplicates  extra deliveries of consumed ids          -> reported (at-least-once)
  unexpected  consumed ids no producer recorded          -> must be 0

Producers record an id only after its publish succeeded; consumers record it
before the ack (see robustness_agent.cpp), so a kill can make a duplicate but
never hide a loss.

Prints one JSON summary line, then "N passed, N failed"; exits 1 when a check
failed. Python 3 standard library only. docs/robustness.md has the details.

With --fault KIND, the agents reach the broker through a fault proxy
(fault_proxy.py; {proxy} in --url names it) that cuts, stalls, slows or
refuses their connections for --fault-seconds, once; the run then also checks
that every consumer resumed by itself within --resume-within seconds and that
no transport call took longer than --call-bound seconds.

Example:
  robustness.py --agent build/tests/robustness/babelqueue_robustness_agent \\
      --url 'sqlite://{workdir}/q.db' --visibility-timeout 2 \\
      --messages 10000 --producers 2 --workers 3 --kill-every 2 --kills 4
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from fault_proxy import FAULTS, FaultProxy

ID_LINE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def log(message):
    print(f"robustness: {message}", file=sys.stderr, flush=True)


class IdFile:
    """Reads an append-only file of ids incrementally, whole lines only."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""
        self.malformed = 0

    def read_new(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()  # an unfinished last line waits for its end
        ids = []
        for raw in lines:
            text = raw.decode("utf-8", "replace")
            if ID_LINE.match(text):
                ids.append(text)
            else:
                self.malformed += 1
        return ids


class Slot:
    """One consumer process slot: restarted whenever its process ends."""

    def __init__(self, index, command, workdir):
        self.index = index
        self.command = command
        self.stdout_path = os.path.join(workdir, f"consumer-{index}.out")
        self.stderr_path = os.path.join(workdir, f"consumer-{index}.err")
        self.process = None
        self.starts = 0

    def start(self):
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        self.starts += 1


def with_visibility_timeout(url, seconds):
    """Adds visibility_timeout=SECONDS to the URL's query unless it has one."""
    if seconds is None or "visibility_timeout=" in url:
        return url
    value = f"{seconds:g}"
    return url + ("&" if "?" in url else "?") + f"visibility_timeout={value}"


def parse_json_lines(path):
    records = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except FileNotFoundError:
        pass
    return records


def queue_stats(agent, url, queue):
    """The agent's stats for QUEUE and its dead-letter queue, or None."""
    try:
        out = subprocess.run([agent, "stats", url, queue], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        return None
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return None


def socket_inodes(pid):
    """The inodes of the sockets process PID has open (empty when it is gone)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    return inodes


def connections_to(port, inodes):
    """How many of the TCP connections with these socket inodes have PORT as their remote port."""
    if not inodes:
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                next(f, None)
                for line in f:
                    fields = line.split()
                    # remote address "HEX:PORT", state 01 (ESTABLISHED) or 02 (SYN_SENT), inode
                    if len(fields) > 9 and fields[3] in ("01", "02") and fields[9] in inodes \
                            and int(fields[2].rsplit(":", 1)[1], 16) == port:
                        count += 1
        except OSError:
            continue
    return count


def pending(stats):
    """Messages still in the queue (ready, reserved or delayed), or None if unknown."""
    if not stats or not stats.get("queue"):
        return None
    values = [stats["queue"].get(k, -1) for k in ("ready", "reserved", "delayed")]
    return None if any(v < 0 for v in values) else sum(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", required=True, help="path of babelqueue_robustness_agent")
    parser.add_argument("--url", default="sqlite://{workdir}/robustness.db",
                        help="broker URL; {workdir} is replaced by the run's temporary directory")
    parser.add_argument("--queue", help="queue name (default: a fresh robustness-<hex> name)")
    parser.add_argument("--messages", type=int, default=10000)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=2.0, help="seconds between two SIGKILLs of the victim")
    parser.add_argument("--kills", type=int, default=3, help="how many times the victim is killed")
    parser.add_argument("--restart-broker", metavar="CMD",
                        help="shell command run once mid-run, {workdir} replaced as in --url "
                             "(e.g. 'scripts/broker stop redis && scripts/broker start redis')")
    parser.add_argument("--restart-at", type=float, default=0.4,
                        help="fraction of the messages consumed when the broker is restarted")
    parser.add_argument("--visibility-timeout", type=float,
                        help="appended to the URL as ?visibility_timeout=S (when the URL has none)")
    parser.add_argument("--concurrency", type=int, default=2, help="handler threads per consumer")
    parser.add_argument("--prefetch", type=int, default=16, help="messages a consumer reserves ahead")
    parser.add_argument("--work-ms", type=int, default=0,
                        help="simulated handling time per message, between its record and its ack")
    parser.add_argument("--batch", type=int, default=100, help="messages per producer publish")
    parser.add_argument("--rate", type=float, default=0,
                        help="messages per second, all producers together (0: as fast as possible)")
    parser.add_argument("--timeout", type=float, default=200, help="seconds to wait for every id to be consumed")
    parser.add_argument("--drain-grace", type=float,
                        help="seconds to wait after the last id for redeliveries to finish (default: 2 x visibility + 5)")
    parser.add_argument("--fault", choices=FAULTS,
                        help="put a fault proxy between the agents and the broker and inject this fault once")
    parser.add_argument("--fault-target", metavar="HOST:PORT",
                        help="the broker's address behind the proxy; {proxy} in --url is replaced by the proxy's")
    parser.add_argument("--fault-port", type=int, default=0,
                        help="the proxy's port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--fault-after", type=float, default=1.5, help="seconds after the start when the fault begins")
    parser.add_argument("--fault-seconds", type=float, default=2.5, help="how long the fault lasts")
    parser.add_argument("--resume-within", type=float,
                        help="with --fault: every consumer records a message again at most this many seconds "
                             "after the fault ended")
    parser.add_argument("--call-bound", type=float,
                        help="no publish, settle or extend call, and no receive beyond its wait, may take longer "
                             "(seconds; the agents time every call)")
    parser.add_argument("--workdir", help="keep files here (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    agent = os.path.abspath(args.agent)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bq-robustness-")
    os.makedirs(workdir, exist_ok=True)
    url = with_visibility_timeout(args.url.replace("{workdir}", workdir), args.visibility_timeout)
    proxy = None
    stats_url = url
    if args.fault:
        if not args.fault_target or "{proxy}" not in url:
            parser.error("--fault needs --fault-target and {proxy} in --url")
        host, _, port = args.fault_target.rpartition(":")
        proxy = FaultProxy(host or "127.0.0.1", int(port), args.fault_port)
        # The harness's own look at the queue goes around the proxy.
        stats_url = url.replace("{proxy}", args.fault_target)
        url = url.replace("{proxy}", f"127.0.0.1:{proxy.port}")
    queue = args.queue or f"robustness-{uuid.uuid4().hex[:12]}"
    visibility = args.visibility_timeout or 30.0
    drain_grace = args.drain_grace if args.drain_grace is not None else 2 * visibility + 5
    log(f"url {url}, queue {queue}, work dir {workdir}" + (f", fault {args.fault} via 127.0.0.1:{proxy.port}" if proxy else ""))

    # ---- start: consumers first, so the producers' messages meet a live queue
    slots = []
    consumed_files = []
    for i in range(args.workers):
        path = os.path.join(workdir, f"consumed-{i}.txt")
        consumed_files.append(IdFile(path))
        command = [agent, "consume", url, queue, path, "--concurrency", str(args.concurrency),
                   "--prefetch", str(args.prefetch), "--idle-exit", "0", "--work-ms", str(args.work_ms)]
        slot = Slot(i, command, workdir)
        slot.start()
        slots.append(slot)
    victim = slots[0]

    producers = []
    produced_files = []
    share, extra = divmod(args.messages, args.producers)
    start = time.monotonic()
    for i in range(args.producers):
        count = share + (1 if i < extra else 0)
        path = os.path.join(workdir, f"produced-{i}.txt")
        produced_files.append(IdFile(path))
        out = open(os.path.join(workdir, f"producer-{i}.out"), "wb")
        err = open(os.path.join(workdir, f"producer-{i}.err"), "wb")
        producers.append((subprocess.Popen([agent, "produce", url, queue, str(count), path, "--batch",
                                            str(args.batch), "--tag", f"p{i}", "--rate", f"{args.rate / args.producers:g}"],
                                           stdout=out, stderr=err, stdin=subprocess.DEVNULL), out, err))

    produced = set()
    produced_lines = 0
    consumed = {}  # id -> deliveries recorded
    kills = []  # {"at": seconds, "consumed": unique ids consumed then, "outstanding": produced-not-consumed}
    unexpected_exits = []  # consumer processes that ended without being asked to
    broker_restart = None
    restart_process = None
    next_kill = start + args.kill_every
    all_consumed_at = None
    produce_done_at = None
    timed_out = False
    fault_log = None  # {"kind", "at", "until", ...} once the fault began
    slot_records_at = [[] for _ in slots]  # per consumer slot: times (since start) new records were seen
    # With a fault proxy, every agent connection must go through it: a
    # client that learns the broker's own address (a Kafka bootstrap, a
    # Pulsar lookup) and goes around the proxy would never see the fault.
    # The agents' sockets are looked at every round (Linux /proc).
    target_port = int(args.fault_target.rpartition(":")[2]) if proxy is not None else None
    can_see_sockets = proxy is not None and os.path.exists("/proc/net/tcp")
    around_proxy = 0  # agent connections seen to the broker's own port

    def refresh():
        nonlocal produced_lines
        for f in produced_files:
            new = f.read_new()
            produced_lines += len(new)
            produced.update(new)
        seen_at = time.monotonic() - start
        for index, f in enumerate(consumed_files):
            new = f.read_new()
            if new:
                slot_records_at[index].append(seen_at)
            for i in new:
                consumed[i] = consumed.get(i, 0) + 1

    def producers_running():
        return any(p.poll() is None for p, _, _ in producers)

    def count_around_proxy():
        nonlocal around_proxy
        if not can_see_sockets:
            return
        inodes = set()
        for process in [s.process for s in slots] + [p for p, _, _ in producers]:
            if process.poll() is None:
                inodes |= socket_inodes(process.pid)
        around_proxy += connections_to(target_port, inodes)

    # ---- run: kill the victim on schedule, restart what died, watch progress
    last_report = start
    while True:
        time.sleep(0.2)
        now = time.monotonic()
        refresh()
        count_around_proxy()
        if produce_done_at is None and not producers_running():
            produce_done_at = now
        outstanding = len(produced - consumed.keys())
        finished = produce_done_at is not None and outstanding == 0
        if finished and all_consumed_at is None:
            all_consumed_at = now

        # A kill only counts while there is work to interrupt: messages still
        # being published or not yet consumed.
        if len(kills) < args.kills and now >= next_kill and not finished:
            if victim.process.poll() is None:
                victim.process.kill()  # SIGKILL: no chance to release or ack anything
                victim.process.wait()
                kills.append({"at": round(now - start, 2), "consumed": len(consumed), "outstanding": outstanding,
                              "producing": producers_running()})
                victim.start()
            # Jitter, so the kills do not fall into step with the producers'
            # batches and always find the victim in the same state.
            next_kill = now + args.kill_every * random.uniform(0.75, 1.25)

        if proxy is not None:
            if fault_log is None and now - start >= args.fault_after:
                log(f"fault {args.fault} for {args.fault_seconds:g} s")
                proxy.set_fault(args.fault)
                fault_log = {"kind": args.fault, "at": round(now - start, 2), "consumed": len(consumed),
                             "producing": producers_running()}
            elif fault_log is not None and "until" not in fault_log and now - start >= fault_log["at"] + args.fault_seconds:
                proxy.set_fault(None)
                fault_log["until"] = round(now - start, 2)
                fault_log["outstanding"] = outstanding
                log("fault over")

        if args.restart_broker and broker_restart is None and len(consumed) >= args.restart_at * args.messages:
            log(f"restarting the broker: {args.restart_broker}")
            broker_restart = {"at": round(now - start, 2), "consumed": len(consumed)}
            restart_process = subprocess.Popen(args.restart_broker.replace("{workdir}", workdir), shell=True, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if restart_process is not None and restart_process.poll() is not None and "status" not in broker_restart:
            broker_restart["status"] = restart_process.returncode
            broker_restart["seconds"] = round(now - start - broker_restart["at"], 2)
            if restart_process.returncode != 0:
                broker_restart["stderr"] = restart_process.stderr.read().decode(errors="replace")[-2000:]
            log(f"broker restart finished with status {restart_process.returncode}")

        for slot in slots:
            code = slot.process.poll()
            if code is not None:  # not one of our kills (those restart at once above)
                unexpected_exits.append({"slot": slot.index, "status": code, "at": round(now - start, 2)})
                log(f"consumer {slot.index} ended by itself with status {code}; restarting it")
                slot.start()

        # The broker restart, once started, is waited for; the kills are not:
        # a run that ends before them fails its kill check (too short a run).
        restart_pending = restart_process is not None and "status" not in broker_restart
        fault_pending = proxy is not None and (fault_log is None or "until" not in fault_log)
        if finished and not restart_pending and not fault_pending:
            break
        if now - start > args.timeout:
            timed_out = True
            log(f"timed out after {args.timeout:g} s with {outstanding} ids not consumed")
            break
        if now - last_report >= 5:
            last_report = now
            log(f"{now - start:5.1f} s: produced {len(produced)}, consumed {len(consumed)} unique "
                f"({sum(consumed.values())} deliveries), kills {len(kills)}")

    # ---- drain: let the dead victims' reservations expire and be consumed
    # again, so duplicates are counted in full and the queue ends empty.
    left = None
    drain_deadline = time.monotonic() + drain_grace
    while not timed_out:
        left = pending(queue_stats(agent, stats_url, queue))
        if left is None or left == 0 or time.monotonic() > drain_deadline:
            break
        time.sleep(0.5)

    # ---- stop the consumers the way a deployment would: SIGTERM
    stop_problems = []
    for slot in slots:
        if slot.process.poll() is None:
            slot.process.send_signal(signal.SIGTERM)
    for slot in slots:
        try:
            code = slot.process.wait(timeout=30)
            if code != 0:
                stop_problems.append({"slot": slot.index, "status": code})
        except subprocess.TimeoutExpired:
            slot.process.kill()
            slot.process.wait()
            stop_problems.append({"slot": slot.index, "status": "no exit 30 s after SIGTERM"})
    for p, out, err in producers:
        if p.poll() is None:
            p.kill()
        p.wait()
        out.close()
        err.close()
    if restart_process is not None and restart_process.poll() is None:
        restart_process.wait()
    refresh()
    end = time.monotonic()
    final_stats = queue_stats(agent, stats_url, queue)
    if proxy is not None:
        proxy.close()

    # ---- account
    lost = produced - consumed.keys()
    unexpected = consumed.keys() - produced
    duplicates = sum(n - 1 for n in consumed.values())
    duplicated_ids = sum(1 for n in consumed.values() if n > 1)
    consumer_records = [r for s in slots for r in parse_json_lines(s.stdout_path)]
    producer_records = [r for i in range(args.producers)
                        for r in parse_json_lines(os.path.join(workdir, f"producer-{i}.out"))]
    elapsed = (all_consumed_at or end) - start
    dlq = (final_stats or {}).get("dead_letter_queue") or {}
    dlq_count = sum(max(0, dlq.get(k, 0)) for k in ("ready", "reserved", "delayed")) if dlq else None

    # When each consumer recorded a message again after the fault: it
    # resumed by itself (a consumer that only came back through a restart
    # counts as one that ended by itself).
    resumed_after = None
    if fault_log is not None and "until" in fault_log:
        per_slot = []
        for times in slot_records_at:
            later = [t for t in times if t >= fault_log["until"]]
            per_slot.append(round(later[0] - fault_log["until"], 2) if later else None)
        fault_log["resumed_after_per_consumer"] = per_slot
        fault_log["proxy"] = dict(proxy.counters)
        if all(t is not None for t in per_slot):
            resumed_after = max(per_slot)
        fault_log["resumed_after"] = resumed_after
    longest = {}
    for record in consumer_records + producer_records:
        for call, ms in (record.get("longest_call_ms") or {}).items():
            longest[call] = max(longest.get(call, 0), ms)

    summary = {
        "url": url,
        "queue": queue,
        "messages": args.messages,
        "producers": args.producers,
        "workers": args.workers,
        "produced": len(produced),
        "produced_records": produced_lines,
        "consumed_unique": len(consumed),
        "deliveries_recorded": sum(consumed.values()),
        "lost": len(lost),
        "duplicates": duplicates,
        "duplicated_ids": duplicated_ids,
        "unexpected": len(unexpected),
        "malformed_lines": sum(f.malformed for f in produced_files + consumed_files),
        "kills": len(kills),
        "kill_log": kills,
        "broker_restart": broker_restart,
        "fault": fault_log,
        "around_proxy": around_proxy if can_see_sockets else None,
        "longest_call_ms": longest,
        "consumer_unexpected_exits": unexpected_exits,
        "consumer_stop_problems": stop_problems,
        "publish_retries": sum(r.get("publish_retries", 0) for r in producer_records),
        "settle_errors": sum(r.get("settle_errors", 0) for r in consumer_records),
        "left_in_queue": pending(final_stats),
        "dead_letter_queue": dlq_count,
        "produce_seconds": round((produce_done_at or end) - start, 2),
        "seconds_to_consume_all": round(elapsed, 2),
        "throughput_per_second": round(len(consumed) / elapsed, 1) if elapsed > 0 else None,
        "timed_out": timed_out,
        "workdir": workdir,
    }

    checks = [
        ("every producer exited 0", all(p.returncode == 0 for p, _, _ in producers)),
        (f"{args.messages} ids produced", len(produced) == args.messages),
        ("no produced id recorded twice", produced_lines == len(produced)),
        ("no id lost", not lost and not timed_out),
        ("no unexpected id", not unexpected),
        ("no malformed record", summary["malformed_lines"] == 0),
        (f"{args.kills} kills of the victim while work remained", len(kills) >= args.kills),
        ("no consumer ended by itself", not unexpected_exits),
        ("every consumer stopped cleanly on SIGTERM", not stop_problems),
        ("the dead-letter queue is empty", dlq_count in (None, 0)),
    ]
    if args.fault:
        checks.append((f"the {args.fault} fault ran for {args.fault_seconds:g} s while messages were produced",
                       fault_log is not None and "until" in fault_log and fault_log["producing"]))
        bound = f" within {args.resume_within:g} s" if args.resume_within is not None else ""
        if can_see_sockets:
            checks.append((f"no agent connected to {args.fault_target} around the proxy", around_proxy == 0))
        checks.append((f"every consumer resumed by itself{bound} after the fault",
                       resumed_after is not None and (args.resume_within is None or resumed_after <= args.resume_within)))
    if args.call_bound is not None:
        checks.append((f"no transport call took longer than {args.call_bound:g} s",
                       bool(longest) and max(longest.values()) <= args.call_bound * 1000))
    if args.restart_broker:
        checks.append(("the broker restart command succeeded", (broker_restart or {}).get("status") == 0))
    passed = sum(1 for _, ok in checks if ok)
    failed = len(checks) - passed
    for name, ok in checks:
        log(f"{'ok    ' if ok else 'FAILED'} {name}")
    if lost:
        sample = sorted(lost)[:10]
        log(f"lost ids (first {len(sample)} of {len(lost)}): {' '.join(sample)}")
    if unexpected:
        log(f"unexpected ids (first 10): {' '.join(sorted(unexpected)[:10])}")
    if len(kills) < args.kills and not timed_out:
        log(f"the run ended after {len(kills)} of {args.kills} kills: lower --kill-every, or make the run "
            f"longer (--messages, --rate, --work-ms)")

    print(json.dumps(summary), flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    if failed == 0 and not args.keep and not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    elif failed:
        log(f"files kept in {workdir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
