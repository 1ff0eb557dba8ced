"""OTLP/HTTP protobuf log ingest throughput with durable acknowledgements, and bytes per record.

Starts a real ``bzrk dev`` (its own data dir), sends pre-built ``ExportLogsServiceRequest``s
of realistic log records from several concurrent clients for a fixed time, counts only
acknowledged (HTTP 200) records, then stops the server and measures the table's on-disk size.

Where the server's CPU goes is reported per acknowledged record by thread name: ClickHouse
names its threads (``MergeMutate``: background merges; ``ThreadPool``: the INSERT's pipeline),
Python's threads are all ``python`` (decoding and mapping, the event loop, the INSERT's caller).
The rows per INSERT and its mean duration come from the ingest service's ``/metrics``.

    python bench/ingest_throughput.py --seconds 20 --clients 8 --batch 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from bzrk.testing import DevServer

SERVICES = [f"service-{i}" for i in range(12)]
ROUTES = ["/api/cart", "/api/checkout", "/api/login", "/api/search", "/healthz"]
WORDS = [
    "request",
    "handled",
    "user",
    "cart",
    "item",
    "payment",
    "timeout",
    "retry",
    "cache",
    "miss",
    "upstream",
]


def _kv(key: str, value: str | int) -> KeyValue:
    kv = KeyValue(key=key)
    if isinstance(value, int):
        kv.value.int_value = value
    else:
        kv.value.string_value = value
    return kv


def build_request(batch: int, rng: random.Random) -> bytes:
    request = ExportLogsServiceRequest()
    per_service = max(batch // 4, 1)
    now = time.time_ns()
    made = 0
    while made < batch:
        rl = request.resource_logs.add()
        rl.resource.attributes.extend(
            [
                _kv("service.name", rng.choice(SERVICES)),
                _kv("host.name", f"node-{rng.randrange(20)}"),
                _kv("k8s.pod.name", f"pod-{rng.randrange(1000)}"),
            ]
        )
        sl = rl.scope_logs.add()
        sl.scope.name = "app.logger"
        for _ in range(min(per_service, batch - made)):
            rec = sl.log_records.add()
            rec.time_unix_nano = now - rng.randrange(10**9)
            rec.observed_time_unix_nano = now
            rec.severity_number = rng.choice((9, 9, 9, 13, 17))
            rec.severity_text = {9: "INFO", 13: "WARN", 17: "ERROR"}[rec.severity_number]
            rec.body.string_value = (
                " ".join(rng.choices(WORDS, k=8)) + f" id={rng.randrange(10**6)}"
            )
            rec.trace_id = rng.randbytes(16)
            rec.span_id = rng.randbytes(8)
            rec.attributes.extend(
                [
                    _kv("http.route", rng.choice(ROUTES)),
                    _kv("http.status_code", rng.choice((200, 200, 200, 404, 500))),
                    _kv("user.id", f"u{rng.randrange(5000)}"),
                ]
            )
            made += 1
    return request.SerializeToString()


async def run_clients(
    url: str, token: str, bodies: list[bytes], batch: int, clients: int, seconds: float
):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"}
    acked = rejected = 0
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    async def client(index: int) -> None:
        nonlocal acked, rejected
        async with httpx.AsyncClient(timeout=60) as http:
            i = index
            while time.monotonic() < deadline:
                started = time.monotonic()
                response = await http.post(url, content=bodies[i % len(bodies)], headers=headers)
                i += clients
                if response.status_code == 200:
                    acked += batch
                    latencies.append(time.monotonic() - started)
                else:
                    rejected += 1
                    await asyncio.sleep(0.2)

    started = time.monotonic()
    await asyncio.gather(*(client(i) for i in range(clients)))
    return acked, rejected, time.monotonic() - started, sorted(latencies)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of a process's live threads by thread name (digits folded: ``asyncio_#``)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        key = re.sub(r"\d+", "#", name)
        out[key] = out.get(key, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def thread_breakdown(
    before: dict[str, float], after: dict[str, float], total: float, records: int
) -> dict[str, float]:
    """CPU µs per acknowledged record by thread name, largest first; ``(ended threads)``
    is what the process spent in threads that did not live through the run."""
    spent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    spent["(ended threads)"] = total - sum(spent.values())
    return {
        k: round(v / records * 1e6, 2)
        for k, v in sorted(spent.items(), key=lambda kv: -kv[1])
        if abs(v) / max(records, 1) * 1e6 >= 0.05
    }


def batch_stats(otlp_http: str) -> dict[str, float]:
    """Inserts so far and their total rows and seconds, from the ingest service's ``/metrics``."""
    wanted = {
        "bzrk_ingest_batch_inputs_count": "inserts",
        "bzrk_ingest_batch_inputs_sum": "rows",
        "bzrk_ingest_batch_flush_duration_seconds_sum": "seconds",
    }
    out = dict.fromkeys(wanted.values(), 0.0)
    for line in httpx.get(f"{otlp_http}/metrics", timeout=10).text.splitlines():
        name, _, value = line.partition(" ")
        if name in wanted:
            out[wanted[name]] = float(value)
    return out


def table_bytes(data_dir: Path, settle_s: float = 60) -> tuple[int, int, int, int]:
    """Rows and bytes of the table's parts as ingest left them; bytes once the background
    merges have settled (no merge running and the part count unchanged for 3 s, at most
    ``settle_s``): what a running server keeps on disk; and bytes once merged into one part
    (``OPTIMIZE … FINAL``): the least the data can take."""
    script = (
        "import chdb, sys, time\n"
        "c = chdb.connect(sys.argv[1])\n"
        "w = \"database = 'bzrk_default' AND table = 'default'\"\n"
        'q = f"SELECT sum(rows), sum(bytes_on_disk) FROM system.parts WHERE {w} AND active"\n'
        "print(c.query(q, 'TSV'))\n"
        "deadline, last, still = time.monotonic() + float(sys.argv[2]), None, 0.0\n"
        "while time.monotonic() < deadline and still < 3:\n"
        "    time.sleep(0.5)\n"
        '    parts = str(c.query(f"SELECT count() FROM system.parts WHERE {w} AND active", "TSV"))\n'
        '    busy = int(str(c.query(f"SELECT count() FROM system.merges WHERE {w}", "TSV")))\n'
        "    still = still + 0.5 if (parts == last and not busy) else 0.0\n"
        "    last = parts\n"
        "print(c.query(q, 'TSV'))\n"
        "c.query('OPTIMIZE TABLE bzrk_default.default FINAL')\n"
        "print(c.query(q, 'TSV'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(data_dir / "clickhouse"), str(settle_s)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return int(out[0]), int(out[1]), int(out[3]), int(out[5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=2000, help="log records per request")
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args()

    rng = random.Random(7)
    bodies = [build_request(args.batch, rng) for _ in range(16)]
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="bzrk-bench-"))
    server = DevServer(data_dir)
    creds = server.start()
    assert server.process is not None
    pid = server.process.pid
    try:
        cpu_before = cpu_seconds(pid)
        threads_before = thread_cpu(pid)
        batches_before = batch_stats(creds["otlp_http"])
        load_before = os.getloadavg()[0]
        acked, rejected, elapsed, lat = asyncio.run(
            run_clients(
                f"{creds['otlp_http']}/v1/logs",
                creds["ingest_token"],
                bodies,
                args.batch,
                args.clients,
                args.seconds,
            )
        )
        server_cpu = cpu_seconds(pid) - cpu_before
        threads_after = thread_cpu(pid)
        batches = {k: v - batches_before[k] for k, v in batch_stats(creds["otlp_http"]).items()}
        load_after = os.getloadavg()[0]
    finally:
        server.stop()
    rows, size, settled_size, merged_size = table_bytes(data_dir)
    result = {
        "records_acked": acked,
        "seconds": round(elapsed, 2),
        "records_per_s": round(acked / elapsed),
        "rejected_requests": rejected,
        "server_cpu_s": round(server_cpu, 2),
        "records_per_server_cpu_s": round(acked / server_cpu) if server_cpu else None,
        "machine_load_1m": [round(load_before, 1), round(load_after, 1)],
        "request_bytes": len(bodies[0]),
        "latency_p50_ms": round(lat[len(lat) // 2] * 1000, 1) if lat else None,
        "latency_p99_ms": round(lat[int(len(lat) * 0.99)] * 1000, 1) if lat else None,
        "rows_on_disk": rows,
        "bytes_on_disk": size,
        "bytes_per_record": round(size / rows, 1) if rows else None,
        "bytes_per_record_settled": round(settled_size / rows, 1) if rows else None,
        "bytes_per_record_merged": round(merged_size / rows, 1) if rows else None,
        "inserts": int(batches["inserts"]),
        "rows_per_insert": round(batches["rows"] / batches["inserts"])
        if batches["inserts"]
        else None,
        "insert_ms_mean": round(batches["seconds"] / batches["inserts"] * 1000, 1)
        if batches["inserts"]
        else None,
        "server_cpu_us_per_record": round(server_cpu / acked * 1e6, 2) if acked else None,
        "cpu_us_per_record_by_thread": thread_breakdown(
            threads_before, threads_after, server_cpu, acked
        ),
        "clients": args.clients,
        "batch": args.batch,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
