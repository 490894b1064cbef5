"""`olmocr-rl probe`: degenerate candidates scored on every tested page (docs/bench.md).

The figures are checked against a folder small enough to compute by hand (every test has
max_diffs 0, so a present/absent/order text matches only where it occurs exactly, or where the
page is shorter than it: then the published check compares the other way round), and against
counts derived from the bundled fixtures' JSONL.
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest
from clirun import invoke

from olmocr_rl import BenchSuite
from olmocr_rl.probe import COMMON_WORDS, LOOP_REPEATS, MARKER_GAP, RULE, details_rows, probe, probe_pages, result_dict, verdict_line
from olmocr_rl.suite import TRAINING_GUARD as G

FIXTURES = Path(__file__).resolve().parent.parent / "bench_fixtures"

A = [
    {"pdf": "a.pdf", "page": 1, "id": "pA", "type": "present", "text": "alpha beta"},
    {"pdf": "a.pdf", "page": 1, "id": "aA", "type": "absent", "text": "gamma delta"},
    {"pdf": "a.pdf", "page": 1, "id": "oA", "type": "order", "before": "one two", "after": "three four"},
]
B = [
    {"pdf": "b.pdf", "page": 1, "id": "aB", "type": "absent", "text": "Page 2"},
    {"pdf": "b.pdf", "page": 1, "id": "bB", "type": "baseline"},
]

# (candidate, guard) -> (mean page reward, {type: (passed, total)}, {jsonl: (passed, total)}), by hand:
#   empty: page A passes only the absent test (1/3); page B the absent test, not the baseline
#     (no letter) (1/2). The same with the guard (an empty page never matches a text).
#   newline, published: " " matches the space in "alpha beta" (present passes) and in "gamma
#     delta" / "Page 2" (both absent tests fail): A 1/3, B 0/2. Guarded: 1 code point is too
#     short for every text: present fails, absent passes, as empty.
#   own-texts: A is "alpha beta\none two\nthree four": all 3 pass; B has no present/order text,
#     so it is empty there: 1/2.
#   loop: "alpha beta" 50 times: present and absent pass on A, order fails (2/3); B empty: 1/2.
#   common-words: none of the texts occurs in it: A 1/3; on B the absent test and the baseline
#     (letters, no short repeat at the end) pass: 2/2.
#   stray-marker: no footnote test, so the empty page: as empty.
TYPES = ("absent", "baseline", "order", "present")
EMPTY = (F(1, 2) * (F(1, 3) + F(1, 2)), (2, 0, 0, 0), (1, 1))
EXPECTED = {
    ("empty", "none"): EMPTY,
    ("empty", G): EMPTY,
    ("newline", "none"): (F(1, 2) * (F(1, 3) + 0), (0, 0, 0, 1), (1, 0)),
    ("newline", G): EMPTY,
    ("own-texts", "none"): (F(1, 2) * (1 + F(1, 2)), (2, 0, 1, 1), (3, 1)),
    ("own-texts", G): (F(1, 2) * (1 + F(1, 2)), (2, 0, 1, 1), (3, 1)),
    ("loop", "none"): (F(1, 2) * (F(2, 3) + F(1, 2)), (2, 0, 0, 1), (2, 1)),
    ("loop", G): (F(1, 2) * (F(2, 3) + F(1, 2)), (2, 0, 0, 1), (2, 1)),
    ("common-words", "none"): (F(1, 2) * (F(1, 3) + 1), (2, 1, 0, 0), (1, 2)),
    ("common-words", G): (F(1, 2) * (F(1, 3) + 1), (2, 1, 0, 0), (1, 2)),
    ("stray-marker", "none"): EMPTY,
    ("stray-marker", G): EMPTY,
}
TOTALS = {"absent": 2, "baseline": 1, "order": 1, "present": 1}


@pytest.fixture()
def tiny(tmp_path) -> Path:
    root = tmp_path / "tiny"
    root.mkdir()
    for name, records in (("a.jsonl", A), ("b.jsonl", B)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return root


def test_candidates_are_built_from_the_page(tiny):
    pages = probe_pages(BenchSuite.load(tiny))
    assert [(p.pdf, p.ids) for p in pages] == [("a.pdf", ["pA", "aA", "oA"]), ("b.pdf", ["aB", "bB"])]
    a, b = pages
    assert a.candidate("own-texts") == "alpha beta\none two\nthree four"
    assert a.candidate("loop") == "\n".join(["alpha beta"] * LOOP_REPEATS)
    assert (b.candidate("own-texts"), b.candidate("loop"), a.candidate("empty"), a.candidate("newline")) == ("", "", "", "\n")
    assert a.candidate("common-words") == b.candidate("common-words") == COMMON_WORDS
    # Texts cut to the page's start come first, those cut to its end last.
    cut = BenchSuite.from_jsonl(
        "\n".join(
            json.dumps({"pdf": "c.pdf", "page": 1, "id": i, "type": "present", "text": t, **kw})
            for i, t, kw in (("x", "tail", {"last_n": 9}), ("y", "middle", {}), ("z", "head", {"first_n": 5}))
        )
    )
    assert probe_pages(cut)[0].candidate("own-texts") == "head\nmiddle\ntail"
    # stray-marker: per footnote test, its marker between the first letters of its texts.
    notes = BenchSuite.from_jsonl(
        "\n".join(
            json.dumps({"pdf": "d.pdf", "page": 1, "id": i, "type": "footnote", "marker": m, **kw})
            for i, m, kw in (("f1", "1", {"appears_before_marker": "— Fraction of"}), ("f2", "b", {"appears_after_marker": "see"}))
        )
    )
    assert probe_pages(notes)[0].candidate("stray-marker") == f"f[^1]a{MARKER_GAP}a[^b]s"
    assert a.candidate("stray-marker") == ""


def test_figures_equal_the_hand_computed_ones(tiny):
    result = probe(BenchSuite.load(tiny))
    assert [(e.candidate, e.guard) for e in result.earned] == list(EXPECTED)
    for e in result.earned:
        reward, by_type, by_jsonl = EXPECTED[(e.candidate, e.guard)]
        assert e.reward == pytest.approx(float(reward), abs=1e-12), (e.candidate, e.guard)
        assert {t: (c.passed, c.total) for t, c in e.by_type.items()} == {t: (p, TOTALS[t]) for t, p in zip(TYPES, by_type)}, e
        assert {j: (c.passed, c.total) for j, c in e.by_jsonl.items()} == {"a.jsonl": (by_jsonl[0], 3), "b.jsonl": (by_jsonl[1], 2)}
    over = {(e.candidate, e.guard): e.pages_over_share for e in result.earned}
    # Pages whose reward is above one half: A for own-texts (1) and loop (2/3), B for common-words (1).
    assert over == {k: int(k[0] in ("own-texts", "loop", "common-words")) for k in EXPECTED}


def test_flags_and_details(tiny):
    suite = BenchSuite.load(tiny)
    flags = {(f.candidate, f.guard, f.type) for f in probe(suite).flags}
    assert flags == {
        ("empty", "none", "absent"),
        ("empty", G, "absent"),
        ("newline", "none", "present"),  # the loophole: one newline passes "alpha beta"
        ("newline", G, "absent"),
        ("loop", "none", "present"),
        ("loop", "none", "absent"),
        ("loop", G, "present"),
        ("loop", G, "absent"),
        ("common-words", "none", "absent"),
        ("common-words", "none", "baseline"),
        ("common-words", G, "absent"),
        ("common-words", G, "baseline"),
        ("stray-marker", "none", "absent"),
        ("stray-marker", G, "absent"),
    }  # own-texts, the bound, is never flagged
    # Exploits (present) apart from the expected floors (absent, baseline).
    assert {(f.candidate, f.guard, f.type) for f in probe(suite).flags if not f.expected} == {
        ("newline", "none", "present"),
        ("loop", "none", "present"),
        ("loop", G, "present"),
    }
    assert not probe(suite, flag_share=1.0).flags  # "more than" the share: nothing passes more than all
    rows = details_rows(probe(suite))
    newline = [r for r in rows if (r["candidate"], r["guard"]) == ("newline", "none")]
    assert newline == [
        {"candidate": "newline", "guard": "none", "id": "pA", "type": "present", "jsonl": "a.jsonl", "pdf": "a.pdf", "page": 1}
    ]
    assert sorted(r["id"] for r in rows if r["candidate"] == "common-words") == ["aA", "aA", "aB", "aB", "bB", "bB"]
    assert verdict_line(probe(suite)) == (
        f"verdict: the best degenerate output earns {float(EXPECTED[('common-words', 'none')][0]):.3f} (common-words) against "
        f"{float(EXPECTED[('own-texts', 'none')][0]):.3f} for the page's own texts with guard none (89%: GAMEABLE); "
        f"{float(EXPECTED[('common-words', G)][0]):.3f} (common-words) against {float(EXPECTED[('own-texts', G)][0]):.3f} for the "
        f"page's own texts with guard {G} (89%: GAMEABLE); rule: {RULE}"
    )
    with pytest.raises(ValueError, match="flag_share"):
        probe(suite, flag_share=1.5)


def test_cli_json_details_and_text(tiny, tmp_path):
    details = tmp_path / "flagged.jsonl"
    res = invoke(["probe", tiny, "--json", "--details", details])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["pages"], out["test_count"], out["flag_share"]) == (2, 5, 0.5)
    got = {(e["candidate"], e["guard"]): e for e in out["earned"]}
    assert got[("newline", "none")]["by_type"]["present"] == {"passed": 1, "total": 1, "rate": 1.0}
    assert got[("newline", G)]["reward"] == pytest.approx(5 / 12)
    assert len(out["flags"]) == 14 and sum(not f["expected"] for f in out["flags"]) == 3
    assert out["verdict"]["none"] == {"best_degenerate": "common-words", "reward": pytest.approx(2 / 3), "own_texts": pytest.approx(3 / 4),
                                      "share_of_own_texts": pytest.approx(8 / 9), "judgement": "gameable"}  # fmt: skip
    assert [json.loads(line) for line in details.read_text().splitlines()] == details_rows(probe(BenchSuite.load(tiny)))
    assert out == result_dict(probe(BenchSuite.load(tiny), source=str(tiny)))

    text = invoke(["probe", tiny, "--flag-share", "0.9"], env={"COLUMNS": "400"})
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[1] == verdict_line(probe(BenchSuite.load(tiny)))  # the verdict first
    assert lines[2] == "exploit: newline passes 100.0% (1/1) of the present tests with guard none"
    assert f"exploit: newline passes 100.0% (1/1) of the present tests with guard {G}" not in text.stdout
    assert lines[3].startswith("exploit: loop passes") and lines[4].startswith("exploit: loop passes")
    assert lines[5].startswith("expected floor, absent: empty, newline (guard short-output+footnote), loop, common-words, stray-marker. ")
    assert "absent tests pass on any output without their text" in lines[5]
    assert invoke(["probe", tiny, "--flag-share", "2"]).exit_code == 2
    missing = invoke(["probe", tmp_path / "nowhere"])
    assert missing.exit_code == 1 and missing.stderr.startswith("error: ") and len(missing.stderr.splitlines()) == 1


def test_a_prepared_folder_is_probed_through_its_tests(tiny, tmp_path):
    prepared = tmp_path / "prepared"
    (prepared / "tests").mkdir(parents=True)
    for f in tiny.glob("*.jsonl"):
        (prepared / "tests" / f.name).write_text(f.read_text())
    res = invoke(["probe", prepared, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["test_count"] == 5


def test_bundled_fixtures(tmp_path):
    """On bench_fixtures, figures derived from its JSONL by counting: one newline passes, under
    the published checks, exactly the present tests whose text holds a space (and fails every
    absent test, all of which hold one); the guard turns both around. The empty page passes
    only the absent tests, so its reward is the mean over pages of absent tests / tests."""
    records = [json.loads(line) for f in sorted(FIXTURES.glob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()]
    present = [r for r in records if r["type"] == "present"]
    absent = [r for r in records if r["type"] == "absent"]
    assert all(" " in r["text"] for r in absent) and 0 < sum(" " in r["text"] for r in present) < len(present)
    pages: dict[tuple, list[str]] = {}
    for r in records:
        pages.setdefault((r["pdf"], r["page"]), []).append(r["type"])
    empty_reward = sum(F(types.count("absent"), len(types)) for types in pages.values()) / len(pages)

    result = probe(BenchSuite.load(FIXTURES))
    got = {(e.candidate, e.guard): e for e in result.earned}
    assert len(result.pages) == len(pages)
    nl, nl_guarded = got[("newline", "none")], got[("newline", G)]
    assert (nl.by_type["present"].passed, nl.by_type["present"].total) == (sum(" " in r["text"] for r in present), len(present))
    assert (nl.by_type["absent"].passed, nl_guarded.by_type["absent"].passed, nl_guarded.by_type["present"].passed) == (0, len(absent), 0)
    for guard in ("none", G):
        e = got[("empty", guard)]
        assert e.all.passed == len(absent) and e.reward == pytest.approx(float(empty_reward), abs=1e-12)
    assert nl_guarded.reward == pytest.approx(float(empty_reward), abs=1e-12)
    # The bound passes every present and order test of the fixtures.
    own = got[("own-texts", "none")]
    assert own.by_type["present"].passed == len(present) and own.by_type["order"].rate == 1.0
    assert ("newline", "none", "present") in {(f.candidate, f.guard, f.type) for f in result.flags}
    assert ("newline", G, "present") not in {(f.candidate, f.guard, f.type) for f in result.flags}
    # The footnote exploit (PR #476): a stray letter by each marker passes every footnote test of
    # the fixtures under the published checks, none under the training guard.
    footnotes = sum(r["type"] == "footnote" for r in records)
    assert footnotes and got[("stray-marker", "none")].by_type["footnote"].passed == footnotes
    assert got[("stray-marker", G)].by_type["footnote"].passed == 0
    exploits = {(f.candidate, f.guard, f.type) for f in result.flags if not f.expected}
    assert exploits == {("newline", "none", "present"), ("stray-marker", "none", "footnote")}


# olmOCR-bench's own JSONL files: the fixtures' three renamed to the longest of them.
REAL_NAMES = {"letter_tests.jsonl": "headers_footers.jsonl", "report_tests.jsonl": "old_scans_math.jsonl",
              "text_tests.jsonl": "long_tiny_text.jsonl"}  # fmt: skip


@pytest.fixture(scope="module")
def real_names(tmp_path_factory) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("names") / "bench"
    shutil.copytree(FIXTURES, root)
    for old, new in REAL_NAMES.items():
        (root / old).rename(root / new)
    return root


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("command", [["probe"], ["bench", "-c", "demo_model", "-c", "other_model", "--compare"]])
def test_tables_read_whole_at_80_and_60_columns_in_a_pipe(real_names, command, columns):
    """Issue 37, row 3, and issue 42: piped (a console that is not a terminal) at 80 columns no cell
    is cut or wrapped: no ellipsis, no line wider than 80, olmOCR-bench's file names and every
    figure whole, the tables drawn; at 60 the tables that do not fit are printed row by row, still
    no line wider than 60 and no name or figure split."""
    res = invoke([command[0], real_names, *command[1:]], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    assert "…" not in " ".join(res.stdout.split()).replace(" … ", "")  # the intervals' own "a … b" aside
    assert max(len(line) for line in res.stdout.splitlines()) <= columns, res.stdout
    words = set(res.stdout.split())
    assert set(REAL_NAMES.values()) <= words, res.stdout
    if command[0] == "probe":
        assert {"0.308", "0.719", "90.0%!", "100.0%!"} <= words
    else:
        assert {"91.9%", "74.2%", "-17.8*", "-60.0*"} <= words
        rule = "─" * 40
        drawn = res.stdout.split("B − A with B")[1]
        assert (rule in drawn) == (columns == 80)  # 80: the comparison drawn as a table; 60: row by row
        if columns == 60:
            block = drawn[drawn.index("\nheaders_footers.jsonl\n") + 1 :].splitlines()[1:3]
            assert block == ["  tests 9 · A % 88.9 · B % 77.8 · B − A -11.1", "  95% interval -33.3 … +0.0 · gained 0 · lost 1"], block


@pytest.mark.parametrize("columns", [80, 60])
def test_help_is_whole_in_a_pipe(columns):
    """Every command's --help, piped: no line wider than the console, every option name whole; an
    option's second long names (bench's `--skip_baseline`, the reference runner's spellings) are not
    listed (OneNamePerOption): each option is listed once."""
    import typer

    from olmocr_rl.cli import OneNamePerOption, app

    commands = typer.main.get_command(app).commands
    for name, command in commands.items():
        res = invoke([name, "--help"], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, res.output
        assert max(len(line) for line in res.stdout.splitlines()) <= columns, (name, res.stdout)
        words = set(res.stdout.replace(",", " ").split())
        one_name = isinstance(command, OneNamePerOption)
        for p in command.params:
            if not p.hidden:
                listed = [*(OneNamePerOption.listed(p.opts) if one_name else p.opts), *p.secondary_opts]
                assert all(o in words for o in listed if o.startswith("-")), (name, p.opts, res.stdout)
                assert not {o for o in p.opts if o not in listed} & words, (name, p.opts, res.stdout)
            assert not any(o.startswith("--") and "_" in o and o in words for o in p.opts), (name, p.opts)  # never a second spelling
    listing = invoke(["--help"], env={"COLUMNS": str(columns)}).stdout
    assert "...\n" not in listing.replace("[ARGS]...\n", "") and all(name in listing.split() for name in commands), listing


def test_suite_record_reads_the_line_as_loaded(tmp_path):
    """`BenchSuite.record` (the probe's texts): universal newlines number the lines as the loader
    does, and a duplicate key keeps its last value."""
    f = tmp_path / "t.jsonl"
    lines = ['{"pdf": "a.pdf", "page": 1, "id": "x", "type": "present", "text": "first", "text": "last"}', "", json.dumps(A[0])]
    f.write_bytes("\r\n".join(lines).encode() + b"\r")
    suite = BenchSuite.load(f)
    assert suite.record("x")["text"] == "last" and suite.record("pA") == A[0]
    assert suite.info("pA").line == 3
    with pytest.raises(KeyError):
        suite.record("nope")


def test_the_judgement_follows_its_rule_at_its_bounds():
    """probe's judgement against the page's own texts (RULE): gameable from half of what they earn,
    weak from a quarter, else sound; nothing to compare with when they earn nothing."""
    from olmocr_rl.probe import GAMEABLE_AT, WEAK_AT, judgement

    assert (GAMEABLE_AT, WEAK_AT) == (0.5, 0.25)
    own = 0.8  # a share of 0.8, not of 1: the rule is a ratio
    assert judgement(0.4, own) == "gameable" and judgement(0.3999, own) == "weak"
    assert judgement(0.2, own) == "weak" and judgement(0.1999, own) == "sound"
    assert judgement(None, own) == "sound" and judgement(0.3, 0.0) is None


def test_the_loop_detector_reads_every_candidate(tiny):
    """The candidates as the loop stop's detector reads them (one character a token): under the
    default rule the 50-line loop of "alpha beta" (549 characters) is no loop yet, under a rule of
    100 characters it is, on page A only (B has no text to repeat); no other candidate is one."""
    from olmocr_rl.loops import LoopRule
    from olmocr_rl.probe import loops_line

    suite = BenchSuite.load(tiny)
    default = probe(suite)
    assert default.loops == dict.fromkeys(default.loops, 0) and set(default.loops) == {"empty", "newline", "own-texts", "loop",
                                                                                        "common-words", "stray-marker"}  # fmt: skip
    short = probe(suite, loop_rule=LoopRule(max_period=16, min_span=100))
    assert short.loops == {**dict.fromkeys(short.loops, 0), "loop": 1}
    assert result_dict(short)["loops"] == {"rule": {"max_period": 16, "min_span": 100, "min_repeats": 4}, "token": "character",
                                           "pages": short.loops}  # fmt: skip
    assert "loop 1 of 2 pages" in loops_line(short)
    text = invoke(["probe", tiny], env={"COLUMNS": "400"})
    assert text.stdout.splitlines()[-1] == loops_line(default)
