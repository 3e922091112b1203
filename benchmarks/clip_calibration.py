"""Does the linear models' declared clip (L/10) cost calibrated probabilities? Held-out log-loss and accuracy of DP-SGD's
logistic model at clips C = 0.1 (declared), 0.3 and 1 (= L), on a made-up table whose signal is weak (the best
accuracy is about 0.7) and on breast-cancer, 5 noise seeds each, through `dpnb run` as a user runs it; scikit-learn's
non-private logistic regression (same one-hot coding and standardized numeric columns) beside them.

    .venv/bin/python benchmarks/clip_calibration.py    # a few seconds

Per-sample clipping at C far below the gradients of the misclassified samples weakens their pull on the model, so on data
where many samples stay misclassified the private model grows more confident than the data support. Held-out figures
are not private: this measures the defaults, it chooses nothing.
"""
import contextlib, io, json, math, sys, tempfile, time, warnings
from pathlib import Path
import numpy as np

CLIPS, SEEDS, EPSILON = (0.1, 0.3, 1.0), range(5), 1.0

def weak_table(rs, n:int) -> str:
    "age, income, city and a yes/no label whose log-odds move little with them (public, made up)."
    age, income, city = rs.integers(18, 80, n), rs.normal(50, 15, n).round(1), rs.choice(["paris", "lyon", "nice"], n)
    logit = 0.04 * (age - 40) + 0.05 * (income - 50) + (city == "nice") - 0.8
    y = np.where(rs.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return "age,income,city,y\n" + "\n".join(f"{a},{b},{c},{t}" for a, b, c, t in zip(age, income, city, y)) + "\n"

def tasks(tmp:Path) -> dict:
    rs = np.random.default_rng(1)
    (tmp / "train.csv").write_text(weak_table(rs, 2400)); (tmp / "test.csv").write_text(weak_table(rs, 600))
    table = ["--data", str(tmp / "train.csv"), "--test", str(tmp / "test.csv"), "--target", "y", "--categorical", "city=paris,lyon,nice",
             "--scale", "public", "--scale-with", "50,20"]
    return {"weak table": table, "breast-cancer": ["--data", "breast-cancer", "--test-fraction", "0.3"]}

def private(args:list, C:float, seed:int, out:Path) -> tuple:
    from dpnotebooks.interface.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", "dp-sgd", "--problem", "logistic", *args, "--epsilon", str(EPSILON), "--delta", "1e-5", "--seed", str(seed),
                     "--set", f"C={C}", "--quiet", "--out", str(out)])
    assert code == 0, code
    e = json.loads(out.read_text())["evaluation"]; return e["loss_out"], e["accuracy_out"]

def sklearn_weak(tmp:Path) -> tuple:
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    tr, te = pd.read_csv(tmp / "train.csv"), pd.read_csv(tmp / "test.csv")
    ct = ColumnTransformer([("num", StandardScaler(), ["age", "income"]), ("cat", OneHotEncoder(), ["city"])])
    m = make_pipeline(ct, LogisticRegression()).fit(tr.drop(columns="y"), tr.y)
    return log_loss(te.y, m.predict_proba(te.drop(columns="y"))), m.score(te.drop(columns="y"), te.y)

if __name__ == "__main__":
    if len(sys.argv) > 1: sys.exit("usage: clip_calibration.py")
    warnings.simplefilter("ignore"); t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d); todo = tasks(tmp)
        print(f"| task | clip C | held-out log-loss | held-out accuracy |   (ε = {EPSILON:g}, mean ± SE over {len(SEEDS)} seeds)\n|---|---|---|---|")
        for name, args in todo.items():
            for C in CLIPS:
                r = np.array([private(args, C, s, tmp / "r.json") for s in SEEDS]); m, se = r.mean(0), r.std(0, ddof=1) / math.sqrt(len(r))
                print(f"| {name} | {C:g}{' (declared)' if C == 0.1 else ''} | {m[0]:.3f} ± {se[0]:.3f} | {m[1]:.3f} ± {se[1]:.3f} |", flush=True)
        print("| weak table | scikit-learn, not private | {:.3f} | {:.3f} |".format(*sklearn_weak(tmp)))
    print(f"({time.perf_counter() - t0:.0f} s)")
