"""``privdist serve``: keep a Ray cluster and party actors warm across ``privdist run`` invocations (issue 17).

* ``privdist serve --parties 8`` starts a Ray head on this machine (``ray start --head --block`` with a private
  ``--temp-dir`` and ``--port``, offering ``party_0..party_7`` and ``coordinator``), starts the keeper and one warm
  actor per party resource, writes its address to the state file and stays in the foreground until ``privdist
  serve --stop`` (or Ctrl-C / SIGTERM): then it stops the actors and the Ray processes *it* started.
* ``privdist serve --address HEAD:PORT`` serves an existing cluster (its nodes offer the resources): it starts the
  keeper and the warm actors there and returns; ``--stop`` removes them, the cluster stays.
* ``privdist run SPEC --backend ray`` then connects to the served cluster (``--address``, ``$RAY_ADDRESS``, or the
  state file of a server started here) and takes the warm actors; a second run at the same time queues.
* A local server killed outright (``kill -9``) cannot stop its cluster itself: its ``ray start`` process gets
  SIGTERM from the kernel (``PR_SET_PDEATHSIG``) and shuts Ray down gracefully, which takes up to about half a
  minute. Meanwhile the state file still names the dead server, its address and the ``ray start`` process group
  (issue 26): ``privdist serve --stop`` finds what it left and stops it, ``--status`` says what is left, and a new
  ``privdist serve`` clears it first.
* The state file is written BEFORE the first Ray process starts, with ``"state": "starting"`` (then ``"serving"``),
  so that a server killed while starting is found too (issue 40: its Ray processes were invisible to ``--status``,
  "no server found"): ``--status`` reports a live server that is still starting, or a dead one and what it left;
  ``--stop`` asks a starting server to stop (it stops its Ray processes as soon as its head answers) or cleans up
  after a dead one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..errors import ValidationError

__all__ = ["register", "state_file", "served_address"]


def state_file() -> Path:
    """Where a local ``privdist serve`` writes its address (``$PRIVDIST_SERVE_STATE`` or the user cache)."""
    env = os.environ.get("PRIVDIST_SERVE_STATE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "privdist" / "serve.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (OSError, TypeError):
        return False


def served_address() -> str | None:
    """The address of a ``privdist serve`` running on this machine (its state file, its process alive, its start-up
    finished), or None."""
    state = _read_state()
    return (state.get("address") if state and _alive(state.get("pid")) and state.get("state") != "starting"
            else None)


def _starting() -> dict | None:
    """The state of a live local server that is still starting (its Ray head not yet answering), or None."""
    state = _read_state()
    return state if state and state.get("state") == "starting" and _alive(state.get("pid")) else None


def _write_state(state: dict) -> None:
    from .._io import atomic_write_bytes

    atomic_write_bytes(state_file(), json.dumps(state).encode())


def register(sub) -> None:
    p = sub.add_parser("serve", help="keep a Ray cluster and party actors warm across privdist run invocations")
    p.add_argument("--address", help="serve this existing Ray cluster (HOST:PORT) instead of starting one here")
    p.add_argument("--parties", type=int, help="local cluster: offer party_0..party_{N-1} and coordinator")
    p.add_argument("--resources", help="local cluster: custom resources as JSON, e.g. '{\"party_0\": 1}'")
    p.add_argument("--num-cpus", type=int, default=None, help="local cluster: CPUs (default: all)")
    p.add_argument("--port", type=int, default=6390, help="local cluster: head port (default 6390)")
    p.add_argument("--temp-dir", help="local cluster: Ray's temporary directory (default: a new private one)")
    p.add_argument("--no-prewarm", action="store_true", help="start no party actors until the first run")
    p.add_argument("--stop", action="store_true", help="stop the server (its actors; its cluster if it started it)")
    p.add_argument("--force", action="store_true", help="with --stop: even while a run uses the actors")
    p.add_argument("--status", action="store_true", help="print the server's state as JSON")
    p.set_defaults(func=_main)


def _connect(address):
    from ..runtime.ray_common import connect

    address = address or os.environ.get("RAY_ADDRESS") or served_address()
    if address is None:
        from ..runtime.serve import ServeError

        raise ServeError(f"no server found: pass --address HOST:PORT (no live server in {state_file()})")
    return connect(address), address


def _left_behind() -> dict | None:
    """The state of a local server that died without cleaning up (its process gone, the state file still there),
    with ``"cluster"``: whether the Ray processes it started are still running; None if there is no such state."""
    state = _read_state()
    if not state or _alive(state.get("pid")):
        return None
    return {**state, "cluster": _head_alive(state)}


def _head_alive(state: dict) -> bool:
    """Whether the ``ray start`` process a server recorded is still running (and is that process, not a later one
    with the same pid: its command line names the server's temporary directory, where /proc can tell)."""
    pid = state.get("head_pid")
    if not isinstance(pid, int) or not _alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():
        try:
            return str(state.get("temp_dir", "")) in cmdline.read_bytes().decode(errors="replace")
        except OSError:
            return False
    return True


def _clean_up(state: dict, timeout: float = 60.0) -> str:
    """Stop the Ray processes a dead server left (SIGTERM to the ``ray start`` process group, SIGKILL after
    ``timeout`` s) and remove its state file; returns what was done."""
    what = "its Ray processes had already ended"
    if state.get("cluster"):
        pgid = state["head_pid"]
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _group_alive(pgid) and time.monotonic() < deadline:  # the head and every Ray process it started
            time.sleep(0.5)
        if _group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            while _group_alive(pgid) and time.monotonic() < deadline + 10:
                time.sleep(0.2)
        what = f"stopped the Ray processes it left (process group {pgid}, {state.get('address')})"
    state_file().unlink(missing_ok=True)
    return f"the privdist server (pid {state.get('pid')}) had died; {what}"


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies, ended but not yet reaped, do not count; read from
    /proc where there is one)."""
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _main(args) -> int:
    local = (args.stop or args.status) and not args.address and not os.environ.get("RAY_ADDRESS")
    starting = _starting() if local else None
    if starting is not None:
        if args.status:
            print(json.dumps({"address": starting.get("address"), "served": False, "state": "starting",
                              "server_pid": starting.get("pid"), "server_alive": True,
                              "note": "the server is starting its Ray head"}, indent=1))
            return 0
        os.kill(starting["pid"], signal.SIGTERM)
        print(f"asked the starting privdist server (pid {starting['pid']}) to stop: it stops the Ray processes it "
              "started as soon as its head answers")
        return 0
    if local and served_address() is None:
        left = _left_behind()
        if left is not None:
            if args.status:
                when = " while starting" if left.get("state") == "starting" else ""
                print(json.dumps({"address": left.get("address"), "served": False, "server_pid": left.get("pid"),
                                  "server_alive": False, "state": left.get("state", "serving"),
                                  "cluster_left": left["cluster"],
                                  "note": f"the server died{when}; privdist serve --stop stops what it left"},
                                 indent=1))
                return 0
            print(_clean_up(left))
            return 0
    if args.stop or args.status:
        ray, address = _connect(args.address)
        from ..runtime.serve import find_keeper, stop_keeper

        if args.status:
            keeper = find_keeper(ray)
            print(json.dumps({"address": address, "served": keeper is not None,
                              **(ray.get(keeper.status.remote()) if keeper is not None else {})}, indent=1))
            return 0
        out = stop_keeper(ray, force=args.force)
        ray.shutdown()
        state = _read_state()
        if state and state.get("address") == address and _alive(state.get("pid")):
            for _ in range(120):  # the foreground server notices and stops its cluster
                if not _alive(state["pid"]):
                    break
                time.sleep(0.5)
        print(f"stopped the privdist server at {address} ({out['killed']} idle actor(s))")
        return 0
    if args.address:
        return _serve_existing(args)
    return _serve_local(args)


def _read_state() -> dict | None:
    try:
        return json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None


def _prewarm_resources(ray) -> list:
    import re

    return sorted((r for r in ray.cluster_resources() if re.fullmatch(r"party_\d+|coordinator", r)),
                  key=lambda r: (len(r), r))


def _serve_existing(args) -> int:
    from ..runtime.ray_common import connect
    from ..runtime.serve import start_keeper

    ray = connect(args.address)
    t0 = time.perf_counter()
    warm = [] if args.no_prewarm else _prewarm_resources(ray)
    start_keeper(ray, {"address": args.address, "started_cluster": False}, warm)
    print(f"serving {args.address}: {len(warm)} warm party actor(s) in {time.perf_counter() - t0:.1f} s; "
          f"run with: privdist run SPEC --backend ray --address {args.address}; stop with: privdist serve --stop "
          f"--address {args.address}")
    return 0


def _resources(args) -> dict:
    if args.resources and args.parties:
        raise ValidationError("--parties and --resources exclude each other")
    if args.resources:
        try:
            res = json.loads(args.resources)
        except ValueError as exc:
            raise ValidationError(f"--resources must be JSON, e.g. '{{\"party_0\": 1}}': {exc}") from None
        if not isinstance(res, dict):
            raise ValidationError("--resources must be a JSON object")
        return res
    if args.parties is None or args.parties < 1:
        raise ValidationError("privdist serve needs --parties N (or --resources JSON) to start a local cluster, or "
                              "--address HOST:PORT to serve an existing one")
    return {**{f"party_{k}": 1 for k in range(args.parties)}, "coordinator": 1}


def _check_local_options(args) -> None:
    """The options of a local cluster, checked before Ray starts (issue 26: a port out of range waited two
    minutes for a head that never came up)."""
    if not 1 <= args.port <= 65535:
        raise ValidationError(f"--port must be from 1 to 65535, got {args.port}")
    if args.num_cpus is not None and args.num_cpus < 1:
        raise ValidationError(f"--num-cpus must be >= 1, got {args.num_cpus}")


def _serve_local(args) -> int:
    import tempfile

    from ..runtime.serve import find_keeper, start_keeper, stop_keeper

    _check_local_options(args)
    res = _resources(args)
    live = _read_state()
    if live and _alive(live.get("pid")):
        raise ValidationError(f"a privdist server already runs here (pid {live['pid']}, {live['address']}); "
                              "privdist serve --stop first")
    left = _left_behind()
    if left is not None:  # a killed server's cluster would hold the port and the party resources
        print(f"note: {_clean_up(left)}", file=sys.stderr)
    temp_dir = os.path.abspath(args.temp_dir or tempfile.mkdtemp(prefix="privdist-serve-"))
    if len(temp_dir) > 45:  # Ray puts sockets at TEMP/session_<date>_<pid>/sockets/plasma_store (AF_UNIX: 107 bytes)
        raise ValidationError(f"--temp-dir {temp_dir!r} is too long for Ray's socket paths (at most 45 characters)")
    address = f"127.0.0.1:{args.port}"
    cmd = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--port", str(args.port),
           "--temp-dir", temp_dir, "--include-dashboard=false", "--dashboard-port", str(_free_port()),
           "--resources", json.dumps(res), "--disable-usage-stats"]
    if args.num_cpus is not None:
        cmd += ["--num-cpus", str(args.num_cpus)]
    t0 = time.perf_counter()
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    state = {"address": address, "pid": os.getpid(), "temp_dir": temp_dir, "state": "starting", "head_pid": None}
    _write_state(state)  # before any Ray process: a server killed while starting is still found (issue 40)
    head = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=_die_with_parent)
    state["head_pid"] = head.pid  # also its process group (new session)
    _write_state(state)
    try:
        ray = _wait_for_head(head, address, stop=stop)
        signal.signal(signal.SIGTERM, lambda *a: stop.append(1))  # ray.init installs its own handler
        started = time.perf_counter() - t0
        warm = [] if args.no_prewarm else _prewarm_resources(ray)
        start_keeper(ray, {"address": address, "started_cluster": True, "pid": os.getpid()}, warm)
        _write_state({**state, "state": "serving"})
        print(f"serving {address}: Ray head started in {started:.1f} s, {len(warm)} warm party actor(s) ready after "
              f"{time.perf_counter() - t0:.1f} s; run with: privdist run SPEC --backend ray [--address {address}]; "
              "stop with: privdist serve --stop", flush=True)
        while not stop and head.poll() is None and find_keeper(ray) is not None:
            time.sleep(1.0)
        if find_keeper(ray) is not None:
            stop_keeper(ray, force=True)
    except KeyboardInterrupt:
        pass
    finally:
        _shutdown(head, address)
    return 0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:
    """In the ``ray start --block`` child: receive SIGTERM when the server process dies, however it dies (Linux), so
    that the Ray processes it started never outlive it."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _wait_for_head(head, address, timeout: float = 120.0, stop=()):
    """Connect to the head ``head`` starts (``stop`` non-empty: asked to stop meanwhile, KeyboardInterrupt)."""
    from ..runtime.ray_common import RayConnectionError, connect

    deadline = time.monotonic() + timeout
    while True:
        if stop:
            raise KeyboardInterrupt
        if head.poll() is not None:
            raise RayConnectionError(f"`ray start --head` exited ({head.returncode}): "
                                     f"{head.stderr.read().decode(errors='replace')[-500:]}")
        try:
            return connect(address, timeout=2.0)
        except RayConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _shutdown(head, address) -> None:
    """Disconnect, stop the Ray processes this server started (SIGTERM to ``ray start --block``), forget the state."""
    try:
        import ray

        ray.shutdown()
    except Exception:
        pass
    if head.poll() is None:
        head.terminate()
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
    state = _read_state()
    if state and state.get("pid") == os.getpid():
        state_file().unlink(missing_ok=True)
    print(f"privdist server at {address} stopped", flush=True)
