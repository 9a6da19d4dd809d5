# SPDX-License-Identifier: Apache-2.0
"""A test OTLP/HTTP trace receiver on 127.0.0.1: it decodes each
ExportTraceServiceRequest with the official generated classes
(opentelemetry-proto) and keeps every span as a plain dict, so a test can
compare what an SDK exported with what it meant to export.

As a module: Receiver(mode) in a thread of the test. As a program (for tests
driven from the shell and for the benchmarks):

    otlp_receiver.py --port-file FILE --out SPANS.jsonl [--mode ok|stall|refuse]

writes its port to FILE once it listens and appends one JSON line per span
to SPANS.jsonl, until SIGTERM.

Modes: ok answers 200 with an ExportTraceServiceResponse; stall reads the
request and never answers (a collector that hangs); refuse answers 503.
"""

import argparse
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(value):
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return {"string": value.string_value}
    if kind == "int_value":
        return {"int": value.int_value}
    if kind == "bool_value":
        return {"bool": value.bool_value}
    if kind == "double_value":
        return {"double": value.double_value}
    return {kind: str(getattr(value, kind))} if kind else {}


def attributes(key_values):
    return {kv.key: any_value(kv.value) for kv in key_values}


def decode(body):
    """The spans of one export request, each a dict."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    {
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "trace_state": span.trace_state,
                        "name": span.name,
                        "kind": span.kind,
                        "start": str(span.start_time_unix_nano),
                        "end": str(span.end_time_unix_nano),
                        "attributes": attributes(span.attributes),
                        "events": [
                            {
                                "name": e.name,
                                "time": str(e.time_unix_nano),
                                "attributes": attributes(e.attributes),
                            }
                            for e in span.events
                        ],
                        "status_code": span.status.code,
                        "status_message": span.status.message,
                        "flags": span.flags,
                        "resource": resource,
                        "scope": scope_spans.scope.name,
                    }
                )
    return spans


class Receiver:
    """The receiver in a thread of the calling process."""

    def __init__(self, mode="ok", on_spans=None):
        self.mode = mode
        self.spans = []
        self.requests = []  # (path, headers) of each request
        self.lock = threading.Lock()
        self.release = threading.Event()  # ends the stall
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests.append((self.path, dict(self.headers.items())))
                if receiver.mode == "stall":
                    receiver.release.wait()
                    self.close_connection = True
                    return
                if receiver.mode == "refuse":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver.lock:
                    receiver.spans.extend(spans)
                if on_spans:
                    on_spans(spans)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def snapshot(self):
        with self.lock:
            return list(self.spans), list(self.requests)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", default="ok", choices=["ok", "stall", "refuse"])
    args = parser.parse_args()
    out = open(args.out, "a", encoding="utf-8")
    write_lock = threading.Lock()

    def write(spans):
        with write_lock:
            for span in spans:
                out.write(json.dumps(span, sort_keys=True) + "\n")
            out.flush()

    receiver = Receiver(args.mode, on_spans=write)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(receiver.port))
    os.replace(tmp, args.port_file)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    receiver.stop()
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
