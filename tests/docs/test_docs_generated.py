"""Generated pages agree with their sources (issue 28): the command-line reference with the argparse parser, each paper
page with its committed results (``privdist report --page``), the utility table with ``benchmarks/results``, and the
README's claim tally with the same results. Regenerate with ``make docs`` (``python tools/gen_docs.py``)."""

from __future__ import annotations

import difflib
import importlib.util
import re
from pathlib import Path

import pytest

from privdist._io import read_json
from privdist.cli.main import main
from privdist.cli.report_cmd import PAGE_END, PAGE_START, write_page
from privdist.errors import OutputDirError
from privdist.experiments.summary import claim_counts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def expected(gen):
    return gen.expected_pages()


def _diff(page: Path, want: str) -> str:
    have = page.read_text(encoding="utf-8")
    return "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True), "committed", "generated", n=1))


@pytest.mark.parametrize("name", ["cli.md", "benchmarks.md", "papers/dzoa.md", "papers/sharing.md",
                                  "papers/laadmm.md", "papers/dpdonc.md"])
def test_generated_page_is_up_to_date(name, expected):
    page = ROOT / "docs" / name
    want = expected[page]
    assert page.read_text(encoding="utf-8") == want, (
        f"docs/{name} differs from what its source generates; run `make docs` (python tools/gen_docs.py):\n"
        + _diff(page, want)[:4000])


def test_every_catalog_entry_of_a_paper_has_committed_results(gen):
    for alias in gen.PAPER_PAGES:
        for folder in gen.paper_dirs(alias):
            results = read_json(folder / "results.json")
            assert results["complete"] and results["experiment"] == folder.name
            for fig in results["figures"]:
                assert (folder / fig).is_file(), f"{folder.name}: figure {fig} is not committed"


def test_readme_tally_matches_the_committed_results(gen):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for alias in gen.PAPER_PAGES:
        totals = [sum(c) for c in zip(*(claim_counts(read_json(d / "results.json")) for d in gen.paper_dirs(alias)))]
        stated = re.search(rf"\[(\d+) / (\d+) / (\d+)\]\(docs/papers/{alias}\.md\)", readme)
        assert stated, f"README has no claim tally for {alias}"
        assert [int(x) for x in stated.groups()] == totals, f"{alias}: README says {stated.groups()}"


def test_the_cli_reference_lists_every_command_and_option(gen):
    from privdist.cli.main import build_parser

    text = gen.cli_reference()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, parser in sub.choices.items():
        assert f"## `privdist {name}`" in text
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}`" in text, f"privdist {name} {opt} missing from the reference"


def test_report_page_keeps_the_text_around_its_block(tmp_path, capsys):
    from privdist.experiments import load_experiment, run_experiment

    run_experiment(load_experiment("quickstart").with_settings(["trials=1", "rounds=5"]), tmp_path / "qs", progress=False)
    assert "## Epsilon per agent" in (tmp_path / "qs" / "summary.md").read_text()  # what reproduce no longer prints
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# Title\n\nauthored text\n")
    assert main(["report", str(tmp_path / "qs"), "--page", str(page)]) == 0
    first = page.read_text()
    assert first.startswith("# Title\n\nauthored text\n" + PAGE_START) and first.rstrip().endswith(PAGE_END)
    assert "| `quickstart` | full | 1 | " in first and "### Quickstart" in first
    assert "![ne_vs_iteration](../qs/ne_vs_iteration.png)" in first
    page.write_text(first + "\nfooter\n")
    write_page(page, [tmp_path / "qs"])
    assert page.read_text() == first + "\nfooter\n"  # regenerating changes nothing, the footer stays
    page.write_text(f"# T\n{PAGE_START}\nno end marker\n")
    with pytest.raises(OutputDirError, match="markers"):
        write_page(page, [tmp_path / "qs"])
