"""What `dpnb run` and `dpnb tune` can check from their arguments is checked before a record is read or ε is spent: the
output path, a held-out file's width, flags the run would ignore, an unknown tuning knob, the arguments of a resumed run.
After a run, the record is written before the summary is printed, so a closed pipe loses nothing."""
import json, subprocess, sys
import numpy as np
import pytest
from dpnotebooks.interface.cli import main

TUNE = ["--problem", "logistic", "--epsilon", "1", "--delta", "1e-5", "--seed", "0"]
BASE = TUNE + ["--quiet"]

@pytest.fixture
def files(tmp_path):
    r = np.random.default_rng(0); X = r.normal(size=(200, 4)); y = (X[:, 0] > 0).astype(int)
    np.savez(tmp_path / "train.npz", X=X, y=y)
    np.savetxt(tmp_path / "narrow.csv", np.c_[X[:40, :3], y[:40]], delimiter=",", fmt="%.4f", header="a,b,c,y", comments="")
    np.savetxt(tmp_path / "test.csv", np.c_[X[:40], y[:40]], delimiter=",", fmt="%.4f", header="a,b,c,d,y", comments="")
    np.savetxt(tmp_path / "train.csv", np.c_[X, y], delimiter=",", fmt="%.4f", header="a,b,c,d,y", comments="")
    return tmp_path

def _refused(argv, capsys, *words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    return err

def test_a_held_out_file_of_another_width_is_refused_before_the_run(files, capsys):
    ck = files / "run.ckpt"
    for extra in ([], ["--dry-run"]):
        _refused(["run", "dp-sgd", "--data", str(files / "train.npz"), "--test", str(files / "narrow.csv"), "--checkpoint", str(ck)] + BASE + extra,
                 capsys, "3 feature columns", "4")
    assert not ck.exists()                                                      # refused before the run began
    _refused(["tune", "dp-sgd", "--data", str(files / "train.npz"), "--test", str(files / "narrow.csv")] + TUNE, capsys, "3 feature columns")

def test_the_output_path_is_checked_before_the_run_and_tune_makes_its_folder(files, capsys):
    _refused(["run", "dp-sgd", "--data", str(files / "train.npz"), "--out", str(files)] + BASE, capsys, "is a folder")
    out = files / "new" / "t.json"
    assert main(["tune", "dp-sgd", "--data", str(files / "train.npz"), "--test", str(files / "test.csv"), "--out", str(out)] + TUNE) == 0
    assert json.loads(out.read_text())["algorithm"] == "dp-sgd"

@pytest.mark.parametrize("flags, word", [(["--scale-with", "0,1"], "--scale-with"), (["--scale-epsilon", "0.2"], "--scale-epsilon"),
                                         (["--split-seed", "3"], "--split-seed")])
def test_a_flag_the_run_would_ignore_is_refused(files, capsys, flags, word):
    _refused(["run", "dp-sgd", "--data", str(files / "train.npz")] + BASE + flags, capsys, f"{word} was given, and nothing in this run uses it")

def test_a_resumed_run_refuses_new_arguments(files, capsys):
    ck, out = files / "r.ckpt", files / "r.json"
    assert main(["run", "dp-sgd", "--data", str(files / "train.npz"), "--checkpoint", str(ck), "--out", str(out)] + BASE) == 0
    _refused(["run", "--resume", str(ck), "--epsilon", "5", "--quiet"], capsys, "drop --epsilon")
    assert main(["run", "--resume", str(ck), "--quiet", "--out", str(files / "again.json")]) == 0
    assert json.loads((files / "again.json").read_text())["x_out"] == json.loads(out.read_text())["x_out"]

def test_labels_that_start_with_a_minus_sign_parse(files, capsys):
    assert main(["run", "dp-sgd", "--data", str(files / "train.npz"), "--classes", "-1,1", "--dry-run"] + BASE) == 0

def test_an_unknown_tuning_knob_is_named_as_such(files, capsys):
    err = _refused(["tune", "dp-sgd", "--data", str(files / "train.npz"), "--grid", "learning_rate=0.1,1"] + TUNE, capsys, "Unknown override(s) ['learning_rate']")
    assert "Raise epsilon" not in err, err                                      # not priced as a budget too small

def test_a_tuned_loss_is_reported_as_a_loss(files):
    out = files / "t.json"
    assert main(["tune", "dp-sgd", "--data", str(files / "train.npz"), "--test", str(files / "test.csv"), "--score", "loss", "--tune-anyway",
                 "--mean-runs", "2", "--out", str(out)] + TUNE) == 0
    s = json.loads(out.read_text())["score"]
    assert s["kind"] == "loss" and 0 <= s["noisy_value"] < 2 and "lower is better" in s["note"]   # the clipped loss in [0, 1], plus noise

def test_the_record_is_written_before_the_summary_meets_a_closed_pipe(files):
    out = files / "piped.json"
    p = subprocess.Popen([sys.executable, "-c", "import sys; from dpnotebooks.interface.cli import main; sys.exit(main())", "run", "dp-sgd",
                          "--data", str(files / "train.npz"), "--out", str(out)] + BASE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.close(); p.wait(timeout=300)                                       # the reader is gone before the summary is printed
    assert json.loads(out.read_text())["algorithm"] == "dp-sgd"

def test_a_csv_named_in_capitals_is_a_csv(files, capsys):
    "TRAIN.CSV is read as train.csv is (it was refused as an unsupported file)."
    for name in ("train", "test"): (files / f"{name.upper()}.CSV").write_text((files / f"{name}.csv").read_text())
    out, out2 = files / "u.json", files / "l.json"
    args = lambda tr, te, o: ["run", "dp-sgd", "--data", str(files / tr), "--test", str(files / te), "--target", "y", "--out", str(o)] + BASE
    assert main(args("TRAIN.CSV", "TEST.CSV", out)) == 0 and main(args("train.csv", "test.csv", out2)) == 0
    assert json.loads(out.read_text())["x_out"] == json.loads(out2.read_text())["x_out"]

def test_a_dry_run_prices_the_training_side_of_a_split(files, capsys):
    "`--test-fraction` holds rows out before the run: the dry run plans for the rows the run trains on (it planned for all n)."
    assert main(["run", "dp-sgd", "--data", str(files / "train.npz"), "--test-fraction", "0.3", "--dry-run"] + BASE) == 0
    assert ", n = 140," in capsys.readouterr().out                          # 200 rows, 60 held out
    assert main(["tune", "dp-sgd", "--data", str(files / "train.npz"), "--test-fraction", "0.3", "--dry-run"] + TUNE) == 0
    assert ", n = 140," in capsys.readouterr().out
