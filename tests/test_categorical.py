"""Categorical columns as public schema: `--categorical COLUMN=A,B,C` (or a .json of them) one-hot codes a .csv column by
its declared categories; a value outside them zeroes its record (never an error, never a category read off the file), so
two training files that differ in one such record answer alike. `Dataset.from_pandas` does the same for a DataFrame."""
import json
import numpy as np
import pytest
from dpnotebooks.interface.cli import main

CITIES = ["lyon", "oslo", "lima"]
BASE = ["run", "dp-sgd", "--problem", "logistic", "--epsilon", "2", "--delta", "1e-5", "--seed", "0", "--quiet",
        "--scale", "public", "--scale-with", "0,2"]

def _table(n, seed, odd=None):
    "Two numeric columns and a city; the class depends mostly on the city (lima: mostly 1, lyon: mostly 0)."
    rs = np.random.default_rng(seed); city = rs.integers(0, 3, n); x = rs.normal(size=(n, 2))
    p = np.array([0.1, 0.5, 0.9])[city] + 0.05 * x[:, 0]; y = (rs.uniform(size=n) < p).astype(int)
    rows = [f"{a:.4f},{b:.4f},{CITIES[c]},{t}" for (a, b), c, t in zip(x, city, y)]
    if odd is not None: rows[7] = odd
    return "x1,x2,city,y\n" + "\n".join(rows) + "\n"

def _run(tmp_path, name, text, *extra):
    d = tmp_path / name; d.mkdir(); (d / "train.csv").write_text(text); (d / "test.csv").write_text(_table(1500, 9))
    code = main(BASE + ["--data", str(d / "train.csv"), "--test", str(d / "test.csv"), "--out", str(d / "r.json"), *extra])
    return code, (json.loads((d / "r.json").read_text()) if code == 0 else None)

def test_declared_categories_carry_the_signal(tmp_path, capsys):
    code, r = _run(tmp_path, "cat", _table(3000, 0), "--categorical", "city=" + ",".join(CITIES))
    assert code == 0 and r["d"] == 2 + 3 + 1                                   # two numbers, three indicators, the intercept
    assert r["evaluation"]["accuracy_out"] > 0.72, r["evaluation"]           # the city is worth ~0.77 here; chance ~0.5
    (tmp_path / "cats.json").write_text(json.dumps({"city": CITIES}))
    code2, r2 = _run(tmp_path, "json", _table(3000, 0), "--categorical", str(tmp_path / "cats.json"))
    assert code2 == 0 and r2["x_out"] == r["x_out"]                          # the .json schema: the same run

@pytest.mark.parametrize("odd", ["0.1,0.2,secret_city,1", "0.1,0.2,,1", "0.1,0.2,lima,secret_label"])
def test_a_record_outside_the_schema_answers_as_its_neighbour(tmp_path, capsys, odd):
    extra = ("--categorical", "city=" + ",".join(CITIES))
    code, r = _run(tmp_path, "base", _table(600, 1), *extra); err = capsys.readouterr().err
    code2, r2 = _run(tmp_path, "odd", _table(600, 1, odd), *extra); err2 = capsys.readouterr().err
    def strip(rec):                                                          # what the released point and the file paths move
        return dict({k: v for k, v in rec.items() if k not in ("x_out", "seconds", "plan", "data", "evaluation")},
                    data={k: v for k, v in rec["data"].items() if k not in ("source", "test")})
    assert code == code2 == 0 and err.replace("base", "X") == err2.replace("odd", "X") and strip(r) == strip(r2)
    assert "secret" not in err2 + json.dumps(r2)

def test_categorical_is_refused_where_there_are_no_columns(tmp_path, capsys):
    assert main(BASE[:11] + ["--data", "digits", "--categorical", "city=a,b"]) == 2
    assert "--categorical names columns" in capsys.readouterr().err
    d = tmp_path / "t.csv"; d.write_text(_table(50, 0))
    assert main(BASE + ["--data", str(d), "--categorical", "town=a,b"]) == 2 and "no header column 'town'" in capsys.readouterr().err
