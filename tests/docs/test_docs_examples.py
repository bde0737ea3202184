"""Every fenced code example of README.md and docs/ runs (issue 28), with its printed output checked where stated.

The fence's info string says what to do with a block (markdown-it-py parses the fences; GitHub and MkDocs read the
first word as the language and the braces as attributes):

* ```` ```python ```` and ```` ```bash ```` / ```` ```sh ````: run, in order, in one temporary folder per page (Python in
  a fresh interpreter; bash with ``privdist`` and ``python`` being this checkout's);
* ```` ```bash {.slow} ````: run only in the slow suite (a long job);
* ```` ```bash {.skip} ````: never run (it installs, starts a cluster or reaches the network); the page says why;
* ```` ```text {.output} ```` right after a block that runs: what it prints. Whitespace runs are equivalent, ``...``
  matches anything (volatile parts such as timings are written as ``...``), integers must be equal and a number
  written with decimals may differ from the printed one by one unit of its last digit (rounding of a result that
  another platform's BLAS or library version computes a hair differently);
* a block with ``title="NAME"`` that does not run (``toml``, ``csv``, ...): written to ``NAME`` in the page's folder
  before the blocks after it run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash"}
TIMEOUT = 900


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    classes: set = field(default_factory=set)
    attrs: dict = field(default_factory=dict)
    expected: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT).as_posix()}:{self.line}"


def parse_info(info: str) -> tuple[str, set, dict]:
    """``'bash {.slow title="x.sh"}'`` -> (``'bash'``, {``'slow'``}, {``'title'``: ``'x.sh'``})."""
    lang, _, rest = info.strip().partition(" ")
    inner = re.search(r"\{(.*)\}", rest)
    classes, attrs = set(), {}
    if inner:
        for tok in re.findall(r'[\w.#-]+="[^"]*"|\S+', inner.group(1)):
            if tok.startswith("."):
                classes.add(tok[1:])
            elif "=" in tok:
                key, value = tok.split("=", 1)
                attrs[key] = value.strip('"')
    return lang.lstrip("{").strip(), classes, attrs


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order, each output block attached to the block it follows."""
    out: list[Block] = []
    for tok in MarkdownIt().parse(page.read_text(encoding="utf-8")):
        if tok.type != "fence":
            continue
        lang, classes, attrs = parse_info(tok.info)
        if "output" in classes:
            if not out or out[-1].lang not in RUNNABLE or out[-1].expected is not None:
                raise ValueError(f"{page}:{tok.map[0] + 1}: an {{.output}} block must follow a block that runs")
            out[-1].expected = tok.content
            continue
        out.append(Block(page, tok.map[0] + 1, lang, tok.content, classes, attrs))
    return out


NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"


def _unit(number: str) -> float:
    """One unit of the last digit of a number written with decimals or an exponent; 0 for an integer."""
    mantissa, _, exponent = number.replace(",", "").lower().partition("e")
    if "." not in mantissa and not exponent:
        return 0.0
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def output_matches(expected: str, actual: str) -> tuple[bool, str]:
    """Whether ``actual`` is what ``expected`` states (see the module docstring), and why not."""
    pattern, numbers = [], []
    for tok in re.split(rf"(\.\.\.|{NUMBER}|\s+)", expected.strip()):
        if tok == "...":
            pattern.append(".*?")
        elif tok and tok.isspace():
            pattern.append(r"\s+")
        elif tok and re.fullmatch(NUMBER, tok):
            pattern.append(f"({NUMBER})")
            numbers.append(tok)
        elif tok:
            pattern.append(re.escape(tok))
    match = re.fullmatch("".join(pattern), actual.strip(), flags=re.S)
    if not match:
        return False, "the text differs"
    for want, got in zip(numbers, match.groups()):
        w, g = (float(x.replace(",", "")) for x in (want, got))
        if abs(w - g) > _unit(want) * (1 + 1e-9):
            return False, f"printed {got} where the docs state {want}"
    return True, ""


ALL = [b for p in PAGES for b in blocks_of(p)]
RUN = [b for b in ALL if b.lang in RUNNABLE]


def _param(b: Block):
    marks = [pytest.mark.slow] if "slow" in b.classes else []
    if "skip" in b.classes:
        marks.append(pytest.mark.skip(reason="marked {.skip} in the docs (see the text beside it)"))
    return pytest.param(b, id=b.id, marks=marks)


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One folder per page, shared by its blocks; ``bin/`` holds a ``privdist`` and a ``python`` of this checkout."""
    shims = tmp_path_factory.mktemp("bin")
    for name, cmd in (("privdist", f'exec "{sys.executable}" -m privdist "$@"'),
                      ("python", f'exec "{sys.executable}" "$@"')):
        (shims / name).write_text(f"#!/bin/sh\n{cmd}\n")
        (shims / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{shims}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg", COLUMNS="100",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    return {"env": env, "dirs": {}, "factory": tmp_path_factory}


def _folder(workdirs, page: Path) -> Path:
    dirs = workdirs["dirs"]
    if page not in dirs:
        dirs[page] = workdirs["factory"].mktemp(page.stem)
    folder = dirs[page]
    for b in ALL:  # files the page defines above the blocks that use them (idempotent)
        if b.page == page and "title" in b.attrs and b.lang not in RUNNABLE:
            (folder / b.attrs["title"]).write_text(b.code)
    return folder


@pytest.mark.parametrize("block", [_param(b) for b in RUN])
def test_example_runs(block: Block, workdirs):
    folder = _folder(workdirs, block.page)
    cmd = [sys.executable, "-c", block.code] if block.lang == "python" else ["bash", "-euo", "pipefail", "-c",
                                                                             block.code]
    proc = subprocess.run(cmd, cwd=folder, env=workdirs["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"{block.id} failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    if block.expected is not None:
        ok, why = output_matches(block.expected, proc.stdout)
        assert ok, f"{block.id}: {why}\n--- stated:\n{block.expected}\n--- printed:\n{proc.stdout}"


def test_output_check_tolerates_rounding_only():
    assert not output_matches("acc 0.835 (... s)\n...\ntotal 15", "acc   0.837 (12 s)\nmore\nlines\ntotal 15")[0]
    assert output_matches("acc 0.835 (... s)\n...\ntotal 15", "acc   0.836 (12 s)\nmore\nlines\ntotal 15")[0]
    assert not output_matches("acc 0.835", "acc 0.837")[0] and not output_matches("15 algorithms", "16 algorithms")[0]
    assert output_matches("eps 1e-05, n 1,000", "eps 1e-05, n 1,000")[0]
    assert not output_matches("a b", "a c")[0]


def test_the_collector_reads_info_strings():
    assert parse_info('bash {.slow title="a.sh"}') == ("bash", {"slow"}, {"title": "a.sh"})
    assert parse_info("python") == ("python", set(), {})
    assert parse_info("text {.output}") == ("text", {"output"}, {})
    assert RUN, "no runnable examples found"
    assert any(b.expected is not None for b in RUN), "no example states its output"
