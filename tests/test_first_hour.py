"""The first hour of a tabular user (issue 46), as written there: a CSV pair whose headers differ in order or in names, raw
features on large scales, training labels outside the schema, quoted fields. Each gives the right answer, a clear refusal or
a warning; nothing private is printed."""
import json
import numpy as np
import pytest
from cli_runner import dpnb_here

pytest.importorskip("sklearn", reason="scikit-learn is not installed (pip install -e '.[dev]')")
RUN = ["run", "dp-sgd", "--problem", "logistic", "--target", "y", "--epsilon", "1", "--delta", "1e-5", "--seed", "0"]


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    "Wine (cultivar 0 against the others) as a user's CSV pair with a header, split on a public seed; and variants."
    from sklearn.datasets import load_wine
    d = tmp_path_factory.mktemp("wine")
    X, t = load_wine(return_X_y=True)
    names = [f"f{j}" for j in range(X.shape[1])] + ["y"]
    rows = np.c_[X, (t == 0).astype(int)]; idx = np.random.default_rng(0).permutation(len(rows))
    def write(name, data, cols=names, fmt=lambda v: f"{v:g}"):
        order = [names.index(c) for c in cols]
        (d / name).write_text(",".join(cols) + "\n" + "".join(",".join(fmt(r[j]) for j in order) + "\n" for r in data))
    tr, te = rows[idx[:124]], rows[idx[124:]]
    write("train.csv", tr); write("test.csv", te); write("test_reordered.csv", te, cols=names[::-1])
    write("test_missing.csv", te, cols=[c for c in names if c != "f2"]); write("train_quoted.csv", tr, fmt=lambda v: f'"{v:g}"')
    (d / "train_text.csv").write_text((d / "train.csv").read_text().replace(",1\n", ",class_0\n").replace(",0\n", ",other\n"))
    return d


def _run(wine, train, test, tmp_path, *extra):
    out = tmp_path / "r.json"
    r = dpnb_here(*RUN, "--data", wine / train, "--test", wine / test, "--out", out, *extra)
    return r, (json.loads(out.read_text()) if r.returncode == 0 else None)


def test_a_reordered_header_is_read_by_name(wine, tmp_path):
    (_, a), (_, b) = _run(wine, "train.csv", "test.csv", tmp_path), _run(wine, "train.csv", "test_reordered.csv", tmp_path)
    assert a["evaluation"]["loss_out"] == b["evaluation"]["loss_out"] and a["evaluation"]["accuracy_out"] == b["evaluation"]["accuracy_out"]


def test_a_missing_column_is_refused_showing_the_public_header_only(wine, tmp_path):
    "The training file's first line is read as its header because the held-out file has one; it may be a record, so only the public header is shown."
    r, _ = _run(wine, "train.csv", "test_missing.csv", tmp_path)
    assert r.returncode == 2 and "test_missing.csv's header (f0,f1,f3," in r.stderr and "f0,f1,f2" not in r.stderr, r.stderr


def test_quoted_fields_read_as_numbers(wine, tmp_path):
    (_, a), (_, b) = _run(wine, "train.csv", "test.csv", tmp_path), _run(wine, "train_quoted.csv", "test.csv", tmp_path)
    assert a["x_out"] == b["x_out"]


def test_raw_scales_warn_that_nothing_was_learned(wine, tmp_path):
    r, rec = _run(wine, "train.csv", "test.csv", tmp_path)
    assert any("majority class" in w for w in rec["evaluation"]["warnings"]), rec["evaluation"]
    assert "dpnb: features: not scaled (--scale none)" in r.stderr and "--scale public" in r.stderr
    assert "warning: held-out accuracy" in r.stdout


def test_training_labels_outside_the_schema_warn(wine, tmp_path):
    "Text labels in the training file against 0/1 held out: the records are zeroed (nothing about them is printed), and the run warns."
    r, rec = _run(wine, "train_text.csv", "test.csv", tmp_path)
    assert r.returncode == 0 and rec["evaluation"]["warnings"] and "class_0" not in r.stdout + r.stderr


def test_a_users_loss_reads_its_private_file_without_naming_a_record(tmp_path):
    "`--problem MODULE:FUNCTION`: a malformed record of the private file is zeroed by the mechanism; no message names it or its line."
    rs = np.random.default_rng(0); X = rs.normal(size=(300, 3)); y = (X[:, 0] > 0).astype(int)
    rows = [",".join(f"{v:g}" for v in r) + f",{t}" for r, t in zip(X, y)]; rows[5] = "1.0,secret_value_Alice,,1"
    (tmp_path / "tr.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "mine_loss.py").write_text("from dpnotebooks.problems.base import Logistic\ndef make(ds): return Logistic(ds)\n")
    r = dpnb_here("run", "dp-sgd", "--problem", "mine_loss:make", "--data", "tr.csv", "--d", "3", "--epsilon", "1", "--delta", "1e-5", "--seed", "0",
                  "--out", "o.json", cwd=tmp_path)
    assert r.returncode == 0 and "Alice" not in r.stdout + r.stderr and "line 6" not in r.stdout + r.stderr, r.stderr


def test_a_vacuous_public_scale_warns_before_the_run(wine, tmp_path):
    "Declared public bounds far too small for the (held-out, public) records: a warning before the run, in the record too."
    (tmp_path / "tiny.csv").write_text(",".join(["13"] * 13) + "\n" + ",".join(["0.01"] * 13) + "\n")
    r, rec = _run(wine, "train.csv", "test.csv", tmp_path, "--scale", "public", "--scale-with", tmp_path / "tiny.csv")
    assert "the scale is too small" in r.stderr and any("too small" in w for w in rec["data"]["warnings"]), r.stderr


def test_raw_regression_targets_warn_before_the_run(tmp_path):
    from sklearn.datasets import load_diabetes
    X, y = load_diabetes(return_X_y=True)
    np.savetxt(tmp_path / "tr.csv", np.c_[X[:300], y[:300]], delimiter=","); np.savetxt(tmp_path / "te.csv", np.c_[X[300:], y[300:]], delimiter=",")
    r = dpnb_here("run", "dp-sgd", "--problem", "robust-regression", "--data", tmp_path / "tr.csv", "--test", tmp_path / "te.csv",
                  "--epsilon", "1", "--delta", "1e-5", "--seed", "0", "--out", tmp_path / "o.json")
    assert r.returncode == 0 and "held-out targets have median |y|" in r.stderr and "did not change" in r.stdout, r.stderr
