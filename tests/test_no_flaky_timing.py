"""Issue 37: the fast suite (``-m "not slow"``) waits for events, never for durations, and asserts no wall time.

Every Python file under tests/ is read with ``ast``. Outside slow tests (a module whose ``pytestmark`` holds
``pytest.mark.slow``, a function or class decorated with it) it may not:

* call ``sleep`` (``time.sleep``, ``asyncio.sleep``, a bare ``sleep``), nor hand a subprocess code that does (a
  string constant with a call of ``sleep`` in it): poll the condition with ``conftest.wait_until`` or synchronise
  with an event instead;
* set a hypothesis ``deadline`` other than None (tests/conftest.py loads a profile without one);
* assert an upper bound on a wall-clock measurement: a comparison in an ``assert`` whose smaller side holds a clock
  reading (``time.perf_counter()``, ``time.time()``, ``time.monotonic()``, ...), a name assigned from one, or a name,
  attribute or key that reads as a duration (``seconds``, ``elapsed``, ``duration``, ``wall``): timings belong in
  benchmarks/ (``benchmarks/run.py``). Lower bounds (``seconds >= 0``) cannot flake and are allowed.

``ALLOWED`` lists the cases that are no wait and no measurement, each with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns", "now", "utcnow"}
DURATION = re.compile(r"seconds|elapsed|duration|wall", re.IGNORECASE)
SLEEP_IN_CODE = re.compile(r"\bsleep\s*\(")

# (file under tests/, enclosing function, the flagged source) -> why it is no wait / no measurement
ALLOWED = {
    ("conftest.py", "wait_until", "time.sleep(interval)"):
        "the poll interval of the deadline poll every test uses instead of a fixed sleep",
    ("experiments/test_experiments_quick.py", "test_dzoa_catalog_quick_variants_are_smaller",
     "q.estimated_seconds < spec.estimated_seconds or spec.estimated_seconds < 120"):
        "estimated_seconds is a number written in the experiment spec (scaled by quick()), not a measured time",
    ("experiments/test_experiments_validation.py", "test_every_catalog_spec_validates_and_its_quick_variant_is_small",
     "check_resources(spec.quick()).seconds < 3600"):
        "check_resources estimates a run's CPU seconds from its spec (trials x runs x rounds x a per-round "
        "constant, or the spec's estimated_seconds); no clock is read",
}


def _is_slow(node) -> bool:
    """``pytest.mark.slow`` (or ``pytest.mark.slow(...)``), or a list/tuple holding it."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_slow(e) for e in node.elts)
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr == "slow" and ast.unparse(node.value) == "pytest.mark"


def _module_is_slow(tree) -> bool:
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
               and _is_slow(n.value) for n in tree.body)


def _is_clock_call(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr in CLOCKS and ast.unparse(f.value) in ("time", "datetime", "datetime.datetime")
    return isinstance(f, ast.Name) and f.id in CLOCKS - {"time", "now"}


def _has_clock(node) -> bool:
    return any(_is_clock_call(n) for n in ast.walk(node))


def _is_sleep_call(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "sleep") or (isinstance(f, ast.Attribute) and f.attr == "sleep")


class _Scan(ast.NodeVisitor):
    def __init__(self):
        self.hits: list[tuple[str, str, str]] = []  # (enclosing function, kind, source)
        self.scope = ["<module>"]
        self.clocked: list[set] = [set()]  # per scope: names assigned from a clock reading

    def _timed(self, node) -> bool:
        for n in ast.walk(node):
            if _is_clock_call(n):
                return True
            if isinstance(n, ast.Name) and (n.id in self.clocked[-1] or DURATION.search(n.id)):
                return True
            if isinstance(n, ast.Attribute) and DURATION.search(n.attr):
                return True
            if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) \
                    and isinstance(n.slice.value, str) and DURATION.search(n.slice.value):
                return True
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "pop") \
                    and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str) \
                    and DURATION.search(n.args[0].value):
                return True
        return False

    def _enter(self, node):
        if any(_is_slow(d) for d in node.decorator_list):
            return  # a slow test: not part of the fast suite
        clocked = {t.id for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                   and n.value is not None and _has_clock(n.value)
                   for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
        self.scope.append(node.name)
        self.clocked.append(clocked)
        self.generic_visit(node)
        self.scope.pop()
        self.clocked.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _enter

    def visit_Call(self, node):
        if _is_sleep_call(node):
            self.hits.append((self.scope[-1], "sleep", ast.unparse(node)))
        for kw in node.keywords:  # hypothesis' per-example deadline is a wall-time assertion
            if kw.arg == "deadline" and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                self.hits.append((self.scope[-1], "hypothesis deadline", ast.unparse(node)))
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str) and SLEEP_IN_CODE.search(node.value):
            self.hits.append((self.scope[-1], "sleep in code", node.value))

    def _upper_bound_on_time(self, cmp) -> bool:
        sides = [cmp.left, *cmp.comparators]
        for op, small, large in zip(cmp.ops, sides, sides[1:]):
            bounded = small if isinstance(op, (ast.Lt, ast.LtE)) else large if isinstance(op, (ast.Gt, ast.GtE)) \
                else None
            if bounded is not None and self._timed(bounded):
                return True
        return False

    def visit_Assert(self, node):
        if any(isinstance(n, ast.Compare) and self._upper_bound_on_time(n) for n in ast.walk(node.test)):
            self.hits.append((self.scope[-1], "wall-time bound", ast.unparse(node.test)))
        self.generic_visit(node)


def scan(source: str) -> list[tuple[str, str, str]]:
    """The sleeps and wall-time bounds of a test file's fast tests: ``(function, kind, source)``."""
    tree = ast.parse(source)
    if _module_is_slow(tree):
        return []
    s = _Scan()
    s.visit(tree)
    return s.hits


def test_the_fast_suite_has_no_sleep_and_no_wall_time_assertion():
    found, allowed_seen = [], set()
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue  # this file: its string constants are the scanner's own examples, run by no one
        rel = path.relative_to(TESTS).as_posix()
        for func, kind, src in scan(path.read_text(encoding="utf-8")):
            key = (rel, func, src)
            if key in ALLOWED:
                allowed_seen.add(key)
            else:
                found.append(f"{rel}::{func}: {kind}: {src}")
    assert not found, ("fixed sleeps or wall-time assertions in the fast suite (poll with conftest.wait_until, "
                       "use an event, or move the timing to benchmarks/):\n" + "\n".join(found))
    assert allowed_seen == set(ALLOWED), f"stale ALLOWED entries: {sorted(set(ALLOWED) - allowed_seen)}"


def test_the_scan_finds_what_it_forbids():
    bad = '''
import time
from time import sleep

def test_a():
    time.sleep(1)

def test_b():
    sleep(0.5)

def test_c():
    t0 = time.perf_counter()
    work()
    assert time.perf_counter() - t0 < 5

def test_d():
    start = time.monotonic()
    elapsed = time.monotonic() - start
    assert elapsed <= 1.0

def test_e(out):
    assert out["record_seconds"] < 3.0 and 10 > out.wall

def test_f():
    subprocess.run([sys.executable, "-c", "import time; time.sleep(120)"])

@settings(max_examples=5, deadline=500)
def test_g():
    pass
'''
    hits = scan(bad)
    assert [(f, k) for f, k, _ in hits] == [("test_a", "sleep"), ("test_b", "sleep"), ("test_c", "wall-time bound"),
                                            ("test_d", "wall-time bound"), ("test_e", "wall-time bound"),
                                            ("test_f", "sleep in code"), ("test_g", "hypothesis deadline")]


def test_the_scan_leaves_slow_tests_lower_bounds_and_timeouts_alone():
    ok = '''
import pytest, time

@pytest.mark.slow
def test_slow():
    time.sleep(1)
    t0 = time.time()
    assert time.time() - t0 < 5

class TestSlow:
    pytestmark = None

@pytest.mark.slow
class TestAlsoSlow:
    def test_x(self):
        time.sleep(1)

def test_fast(proc, out):
    proc.wait(timeout=120)
    assert out["seconds"] >= 0 and 0 <= out["seconds"]
    assert out["rows"] < 10
'''
    assert scan(ok) == []
    assert scan("import pytest, time\npytestmark = [pytest.mark.slow]\n\ndef test_s():\n    time.sleep(1)\n") == []


def test_property_tests_have_no_deadline():
    hypothesis = pytest.importorskip("hypothesis")
    assert hypothesis.settings.default.deadline is None  # the profile tests/conftest.py loads
