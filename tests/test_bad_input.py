"""Every bad input of `dpnotebooks.bad_input.CASES`, and the same mistakes through `dpnb run`: a clear error, nothing read or drawn first."""
import pytest
from dpnotebooks.bad_input import CASES, Case, tripwire, try_case, _data
from dpnotebooks.cli import main

@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_bad_input_is_refused_before_any_data_or_noise(case):
    out = try_case(case)
    assert out.ok, out

def test_the_tripwire_catches_a_run_that_reads_data():
    assert not try_case(Case("a valid run", lambda: __import__("dpnotebooks.bad_input", fromlist=["_run"])._run(), ValueError, "")).ok

@pytest.mark.parametrize("args,says", [
    (["--epsilon", "0", "--delta", "1e-6"], "`epsilon` must be a positive finite number"),
    (["--epsilon", "1", "--delta", "1.5"], "open interval (0, 1)"),
    (["--epsilon", "1"], "give epsilon > 0 and delta in (0, 1)"),
    (["--epsilon", "1", "--delta", "1e-6", "--problem", "svm"], "Unknown problem 'svm'"),
    (["--epsilon", "1", "--delta", "1e-6", "--data", "/nonexistent/x.npz"], "does not exist"),
    (["--epsilon", "1", "--delta", "1e-6", "--alpha", "-1"], "`alpha` must be a positive finite number"),
    (["--epsilon", "1", "--delta", "1e-6", "--data", "{data}", "--beta", "0.01"], "Use at least"),
    (["--epsilon", "1", "--delta", "1e-6", "--set", "learning_rate=0.1"], "Unknown override"),
])
def test_dpnb_run_bad_input_exits_2_with_the_reason(args, says, capsys, tmp_path):
    import numpy as np
    p = _data(); np.savez(tmp_path / "d.npz", X=p.data.A, y=p.data.y)             # user data: loading it draws nothing
    args = [a.replace("{data}", str(tmp_path / "d.npz")) for a in args]
    with tripwire():
        assert main(["run", "klt-single-pass", "--quiet", "--out", str(tmp_path / "r.json")] + args) == 2
    err = capsys.readouterr().err
    assert says in err and "Touched" not in err and not (tmp_path / "r.json").exists()

def test_dpnb_run_bad_csv(tmp_path, capsys):
    f = tmp_path / "bad.csv"; f.write_text("x1,x2,y\n1,2,3\n4,oops,6\n")
    assert main(["run", "klt-single-pass", "--data", str(f), "--epsilon", "1", "--delta", "1e-6", "--quiet"]) == 2
    assert "bad.csv, line 3" in capsys.readouterr().err

def test_dpnb_run_unknown_algorithm(capsys):
    assert main(["run", "sgd", "--epsilon", "1", "--delta", "1e-6", "--quiet"]) == 2
    assert "Unknown algorithm 'sgd'" in capsys.readouterr().err
