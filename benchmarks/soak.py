"""Soak: sessions cycling on a real `opencode serve` 1.18.33 while the event stream is cut every
minute; `ocwatch watch --json` follows it through the fault-injecting proxy of the tests.

    python benchmarks/soak.py [--minutes 20] [--sessions 50] [--cut-every 60]

Reports: runs the server completed, and for how many of them watch printed both `busy` and
`idle completed` (a missed transition is one it did not); any other state printed; watch's RSS
after warm-up and at the end, and its CPU. Bounded: it stops by itself.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cli_env import cli_env  # noqa: E402
from tests.integration.driver import Driver, wait_until  # noqa: E402
from tests.integration.fault_proxy import FaultProxy  # noqa: E402
from tests.integration.oc_server import scripted_server  # noqa: E402
from tests.procstat import cpu_s, rss_mb  # noqa: E402


def explain(
    runs: Counter[str],
    per: dict[str, Counter[str]],
    lines: list[dict],
    history: dict[str, list[dict]],
    cut_at: list[float],
) -> None:
    """Print, for each session whose runs watch did not all show, when each of its runs ran on
    the server (prompt created, reply completed) beside the cut times and watch's lines."""

    def t(ms: float) -> str:
        return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + f".{int(ms) % 1000:03d}"

    print("cuts:", ", ".join(t(c * 1000) for c in cut_at))
    for sid, n in runs.items():
        c = per.get(sid, Counter())
        if min(c["busy"], c["idle/completed"]) >= n:
            continue
        print(f"{sid}: {n} runs, watch printed {dict(c)}")
        for m in history[sid]:
            info = m["info"]
            tm = info.get("time", {})
            print(
                f"  {info['role']:9} created {t(tm['created'])}"
                + (f" completed {t(tm['completed'])}" if tm.get("completed") else "")
            )
        for x in lines:
            if x["session_id"] == sid:
                print(f"  watch {x['at']} {x['from']} -> {x['to']}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=20)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--cut-every", type=float, default=60)
    ap.add_argument(
        "--explain",
        action="store_true",
        help="for each session with a missed run: its runs' server times, the cuts, "
        "and what watch printed",
    )
    a = ap.parse_args()
    env = {**cli_env(), "PYTHONPATH": str(ROOT)}
    lines: list[dict] = []
    with (
        scripted_server("ocwatch-soak-") as srv,
        FaultProxy(srv.url) as proxy,
        Driver(srv.url, default_directory=str(srv.project)) as d,
    ):
        sids = [d.create_session(title=f"soak {i}")["id"] for i in range(a.sessions)]
        watch = subprocess.Popen(
            [sys.executable, "-m", "tui.cli.main", "watch", "--json", "--server", proxy.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

        def read() -> None:
            assert watch.stdout is not None
            for line in watch.stdout:
                lines.append(json.loads(line))

        threading.Thread(target=read, daemon=True).start()
        time.sleep(5)
        runs: Counter[str] = Counter()
        started: set[str] = set()  # seen busy since its last prompt
        start = time.monotonic()
        end = start + a.minutes * 60
        next_cut = start + a.cut_every
        warm: tuple[float, float] | None = None
        cuts = 0
        cut_at: list[float] = []
        while time.monotonic() < end:
            status = d.status_map(str(srv.project))
            for sid in sids:
                if sid in status:
                    started.add(sid)
                elif sid in started or not runs[sid]:
                    # idle again after its run (or never run): one prompt, one run (a
                    # prompt sent before the run shows busy would be queued into it)
                    started.discard(sid)
                    d.prompt(sid, f"soak run {runs[sid]}", "slow", "2")
                    runs[sid] += 1
            if warm is None and time.monotonic() - start > 30:
                warm = (rss_mb(watch.pid), cpu_s(watch.pid))
            if time.monotonic() >= next_cut:
                proxy.cut_streams()
                cut_at.append(time.time())
                cuts += 1
                next_cut += a.cut_every
            time.sleep(1.0)
        # let the last runs finish: a prompt sent just now may not read busy yet, and its
        # session's previous reply is complete, so wait for the status map to empty instead
        time.sleep(1.5)
        wait_until(lambda: not d.status_map(str(srv.project)), 60, what="the last runs")
        time.sleep(3)
        rss_end, cpu_end = rss_mb(watch.pid), cpu_s(watch.pid)
        watch.send_signal(signal.SIGINT)
        code = watch.wait(15)
        history = {sid: d.messages(sid) for sid in sids} if a.explain else {}
    per: dict[str, Counter[str]] = {}
    for x in lines:
        to = x["to"]
        word = (
            "deleted" if to is None else to["state"] + (f"/{to['reason']}" if to["reason"] else "")
        )
        per.setdefault(x["session_id"], Counter())[word] += 1
    total = sum(runs.values())
    seen = sum(
        min(per.get(s, Counter())["busy"], per.get(s, Counter())["idle/completed"], n)
        for s, n in runs.items()
    )
    other = Counter(
        w
        for c in per.values()
        for w, n in c.items()
        for _ in range(n)
        if w not in ("busy", "idle/completed", "idle")
    )
    assert warm is not None
    if a.explain:
        explain(runs, per, lines, history, cut_at)
    print(
        f"{a.minutes:g} min, {a.sessions} sessions, stream cut {cuts} times: {total} runs; "
        f"watch printed busy and idle completed for {seen} of them "
        f"({total - seen} missed); other states printed: {dict(other) or 'none'}"
    )
    print(
        f"watch RSS {warm[0]:.1f} MB after warm-up -> {rss_end:.1f} MB at the end "
        f"({100 * (rss_end - warm[0]) / warm[0]:+.1f} %); CPU {cpu_end - warm[1]:.1f} s over "
        f"{a.minutes * 60 - 30:.0f} s ({100 * (cpu_end - warm[1]) / (a.minutes * 60 - 30):.1f} "
        f"% of a core); exit {code} on SIGINT"
    )


if __name__ == "__main__":
    main()
