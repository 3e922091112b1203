"""A private training file is read so that nothing about one record leaves the run: two files that differ in one record
(an odd label, a text label, a NaN, a cell that is not a number, a row of another length) give the same exit code, the
same messages and the same JSON record but for the released point, and neither names the record's value or position.
The label set is public schema (--classes, the held-out file, or the default), never read from the private file."""
import json, warnings
import numpy as np
import pytest
from dpnotebooks.interface.cli import main

N, ODD = 400, 123                                          # the record that differs sits at row ODD
BASE = ["run", "dp-sgd", "--problem", "logistic", "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--quiet"]
RELEASED = {"x_out", "seconds", "plan"}                    # the released point; the run's time; the plan's work (a timing)

def _rows():
    rs = np.random.default_rng(0); X = rs.normal(size=(N, 3)); y = (X @ [1.0, -1.0, 0.5] > 0).astype(int)
    return [f"{a:.6f},{b:.6f},{c:.6f},{t}" for (a, b, c), t in zip(X, y)]

NEIGHBOURS = {"an odd label 7": "0.1,0.2,0.3,7", "a text label": "0.1,0.2,0.3,secret_label_Alice",
              "a NaN feature": "nan,0.2,0.3,1", "an inf feature": "0.1,inf,0.3,0", "a cell that is not a number": "0.1,oops,0.3,1",
              "a row of another length": "0.1,0.2,0.3,1,9", "a huge row": "1e200,-1e200,1e200,1"}

def _run(tmp_path, capsys, line, *extra):
    rows = _rows(); rows[ODD] = line if line is not None else rows[ODD]
    d = tmp_path / ("odd" if line is not None else "base"); d.mkdir()
    (d / "train.csv").write_text("a,b,c,y\n" + "\n".join(rows) + "\n")
    with warnings.catch_warnings(record=True) as caught:        # what a terminal would show on stderr, warnings included
        warnings.simplefilter("always")
        code = main(BASE + ["--data", str(d / "train.csv"), "--target", "y", "--out", str(d / "r.json"), *extra])
    err = (capsys.readouterr().err + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)).replace(str(d), "DIR")
    rec = json.loads((d / "r.json").read_text()) if code == 0 else None
    if rec: rec["data"]["source"] = "DIR"
    return code, err, rec

@pytest.mark.parametrize("what", list(NEIGHBOURS))
def test_neighbouring_files_give_the_same_code_messages_and_record(tmp_path, capsys, what):
    code, err, rec = _run(tmp_path, capsys, None)
    code2, err2, rec2 = _run(tmp_path, capsys, NEIGHBOURS[what])
    assert code == code2 == 0 and err == err2, (err, err2)
    assert {k: v for k, v in rec.items() if k not in RELEASED} == {k: v for k, v in rec2.items() if k not in RELEASED}
    text = err2 + json.dumps(rec2)
    assert "secret_label_Alice" not in text and "oops" not in text and f"{ODD + 2}" not in err2 and "index" not in err2
    assert np.all(np.isfinite(rec2["x_out"]))

def test_the_zeroed_record_is_counted_only_when_asked_for(tmp_path, capsys):
    _, _, rec = _run(tmp_path, capsys, NEIGHBOURS["a text label"], "--nonprivate-diagnostics")
    assert rec["nonprivate"]["zeroed_records"] == 1 and "NOT private" in rec["nonprivate"]["data"]

def test_declared_text_classes_and_a_held_out_file_name_the_schema(tmp_path, capsys):
    rows = [r.rsplit(",", 1)[0] + ("," + ("yes" if r.endswith("1") else "no")) for r in _rows()]
    (tmp_path / "t.csv").write_text("a,b,c,y\n" + "\n".join(rows) + "\n")
    (tmp_path / "h.csv").write_text("a,b,c,y\n" + "\n".join(rows[:50]) + "\n")
    out = tmp_path / "r.json"
    assert main(BASE + ["--data", str(tmp_path / "t.csv"), "--classes", "no,yes", "--d", "3", "--out", str(out)]) == 0
    r = json.loads(out.read_text()); assert r["data"]["labels"]["schema"] == dict(negative=["no"], positive="yes")
    assert main(BASE + ["--data", str(tmp_path / "t.csv"), "--test", str(tmp_path / "h.csv"), "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["data"]["labels"]["source"] == "held-out file" and r["evaluation"]["accuracy_out"] > 0.8     # the held-out file's labels: no, yes
    assert main(BASE + ["--data", str(tmp_path / "t.csv"), "--d", "3", "--out", str(out)]) == 0     # undeclared text labels: every record zeroed
    assert "declare classes" in capsys.readouterr().err

@pytest.mark.parametrize("what", ["an odd label 7", "a text label", "a NaN feature", "a huge row"])
def test_k_declared_classes_neighbouring_files_give_the_same_record(tmp_path, capsys, what):
    "Softmax cross-entropy (three classes declared): the odd record is zeroed the same way; code, messages and record agree."
    code, err, rec = _run(tmp_path, capsys, None, "--classes", "0,1,2")
    code2, err2, rec2 = _run(tmp_path, capsys, NEIGHBOURS[what], "--classes", "0,1,2")
    assert code == code2 == 0 and err == err2 and rec["data"]["labels"]["k"] == 3 and rec["d"] == 3 * 4
    assert {k: v for k, v in rec.items() if k not in RELEASED} == {k: v for k, v in rec2.items() if k not in RELEASED}
    assert "secret_label_Alice" not in err2 + json.dumps(rec2) and np.all(np.isfinite(rec2["x_out"]))

@pytest.mark.parametrize("first", ["oops,0.2,0.3,1", "0.1,0.2,0.3,secret_label_Alice", "nan,0.2,0.3,1", "NA,NA,NA,NA", "secret,Alice,x,y"])
@pytest.mark.parametrize("held_out", [False, True])
def test_a_headerless_file_whose_first_record_is_malformed_answers_as_its_neighbour(tmp_path, capsys, first, held_out):
    "Without a header, a bad first record is a malformed record (zeroed), never taken for a header, even one holding no number: n, messages and record agree."
    test = tmp_path / "h.csv"; test.write_text("\n".join(_rows()[:40]) + "\n")
    recs, errs = [], []
    for name, line in (("base", None), ("odd", first)):
        rows = _rows(); rows[0] = line or rows[0]
        d = tmp_path / name; d.mkdir(); (d / "train.csv").write_text("\n".join(rows) + "\n")
        assert main(BASE + ["--data", str(d / "train.csv"), "--out", str(d / "r.json")] + (["--test", str(test)] if held_out else ["--d", "3"])) == 0
        rec = json.loads((d / "r.json").read_text()); rec["data"]["source"] = "DIR"; recs.append(rec)
        errs.append(capsys.readouterr().err.replace(str(d), "DIR"))
    a, b = ({k: v for k, v in r.items() if k not in RELEASED | {"evaluation"}} for r in recs)
    assert a == b and a["n"] == N and errs[0] == errs[1] and "Alice" not in errs[1] + json.dumps(recs[1])

@pytest.mark.parametrize("odd", ['0.1,"ly\u2028on",0.3,1', "0.1,0.2\x0c,0.3,1", "0.1,0.2\r,0.3,1", "", "   ", '0.1,"a\nb",0.3,1'])
def test_a_record_with_an_odd_line_break_or_a_blank_record_keeps_n(tmp_path, capsys, odd):
    "Rows end at \\n only: a record's own \\r, form feed or U+2028 cannot split it, and a blank row is a zeroed record; n is the rows' count."
    rows = _rows(); rows[ODD] = odd
    (tmp_path / "train.csv").write_bytes(("\n".join(rows) + "\n").encode())
    assert main(BASE + ["--data", str(tmp_path / "train.csv"), "--d", "3", "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["n"] == N + odd.count("\n")   # a quoted line break: two rows, both zeroed

def test_a_headerless_near_tie_of_row_lengths_is_decided_by_public_input(tmp_path, capsys):
    "Half the rows 4 cells, half 5 (no header): the most common length would flip with one record; the width comes from the held-out .csv or --d (public), else the file is refused for both."
    rows = _rows()[:N // 2] + [r + ",9" for r in _rows()[N // 2:]]
    test = tmp_path / "h.csv"; test.write_text("\n".join(_rows()[:40]) + "\n")
    recs = {}
    for name, first in (("base", rows[0]), ("odd", rows[0] + ",9")):
        d = tmp_path / name; d.mkdir(); (d / "train.csv").write_text("\n".join([first] + rows[1:]) + "\n")
        assert main(BASE + ["--data", str(d / "train.csv"), "--out", str(d / "r.json")]) == 2
        recs[name] = capsys.readouterr().err.replace(str(d), "DIR"); assert "--d D" in recs[name]
        for extra in (["--d", "3"], ["--test", str(test)]):
            assert main(BASE + ["--data", str(d / "train.csv"), *extra, "--out", str(d / "r.json")]) == 0
            rec = json.loads((d / "r.json").read_text()); recs[name, extra[0]] = (rec["d"], rec["n"])
            assert ("is read without a header, as the held-out file h.csv has none, and its rows at that file's width (4 columns)" in capsys.readouterr().err) == (extra[0] == "--test")
    assert recs["base"] == recs["odd"]                                     # refused alike: nothing read from the rows decides it
    assert recs["base", "--d"] == recs["odd", "--d"] == recs["base", "--test"] == recs["odd", "--test"] == (4, N)   # 3 features + the intercept
