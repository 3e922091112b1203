"""A practitioner's DataFrame through the Python path: `Dataset.from_pandas` -> `get_problem("logistic")` -> DP-SGD at
ε = 8, held-out accuracy over 5 noise seeds, beside the majority class and scikit-learn's non-private logistic regression
on the same public coding. A made-up table (2,000 rows: an age in [20, 70], a city among 3, a yes/no label), split
1,400 / 600, with and without public bounds for the age.

    .venv/bin/python benchmarks/pandas_table.py    # a few seconds

Held-out figures are not private: this measures the pipeline's defaults, it chooses nothing.
"""
import warnings
import numpy as np

def table(n:int=2000, seed:int=0):
    "The made-up DataFrame: the label's log-odds rise with age and depend on the city."
    import pandas as pd
    rng = np.random.default_rng(seed); age = rng.uniform(20, 70, n); city = rng.choice(["lyon", "oslo", "lima"], n)
    z = 0.08 * (age - 45) + np.select([city == "lyon", city == "oslo"], [1.0, -1.0], 0.0) + 0.5 * rng.normal(size=n)
    return pd.DataFrame(dict(age=age, city=city, label=np.where(z > 0, "yes", "no")))

def accuracies(bounds, seeds=range(5), epsilon:float=8.0) -> list:
    "Held-out accuracy of DP-SGD's defaults, per noise seed, through from_pandas and get_problem."
    from dpnotebooks.problems.dataset import Dataset, with_data
    from dpnotebooks.problems.base import get_problem
    from dpnotebooks.planning.minimize import minimize
    df = table(); tr, te = df.iloc[:1400], df.iloc[1400:]
    kw = dict(target="label", categorical={"city": ["lyon", "oslo", "lima"]}, classes=["no", "yes"], bounds=bounds)
    p = get_problem("logistic", data=Dataset.from_pandas(tr, **kw)); held = with_data(p, get_problem("logistic", data=Dataset.from_pandas(te, **kw)).data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [held.score(minimize(p, "dp-sgd", epsilon=epsilon, delta=1e-5, seed=s).x) for s in seeds]

def reference() -> tuple:
    "(majority-class accuracy, scikit-learn's held-out accuracy) on the same split and public coding."
    from sklearn.linear_model import LogisticRegression
    df = table(); tr, te = df.iloc[:1400], df.iloc[1400:]
    A = lambda d: np.column_stack([(d.age - 45) / 25] + [d.city == c for c in ["lyon", "oslo", "lima"]])
    return float(max(np.mean(te.label == "yes"), np.mean(te.label == "no"))), float(LogisticRegression().fit(A(tr), tr.label).score(A(te), te.label))

if __name__ == "__main__":
    major, sk = reference()
    print(f"majority class {major:.3f}; scikit-learn (non-private) {sk:.3f}")
    for name, b in (("no bounds (age as it is)", None), ("public bounds age in [20, 70]", {"age": (20, 70)})):
        a = accuracies(b); print(f"DP-SGD, epsilon = 8, {name}: {np.mean(a):.3f} ± {np.std(a, ddof=1) / np.sqrt(len(a)):.3f} (5 seeds)")
