"""Which clip should DP-SGD's defaults use? Held-out accuracy of DP-SGD at each clip C (the other settings at their
defaults: 30 epochs, B ≈ 3√n, the step rule η ∝ 1/C) for the linear `logistic` model, `sigmoid-glm` (the same rows,
0/1 targets) and the MLP d-32-1 of 63_utility, on its three tasks (breast-cancer, digits, wine).

The runs use the public split seeds 1-3 only: the figures 63_utility reports use split seed 0, which this choice never
reads. Each cell is the mean over 3 splits x 2 noise seeds. (Issue 21: the default clips of `logistic` and `sigmoid-glm`
are L/10 from this table; the MLP keeps C = L.)

    .venv/bin/python benchmarks/dpsgd_clip.py            # about 2 minutes on 2 cores
"""
import itertools, time, warnings
import numpy as np
from dpnotebooks.experiments.utility import utility_task, utility_problem
from dpnotebooks.planning.tuning import accuracy
from dpnotebooks.planning.minimize import minimize
from dpnotebooks.problems.base import SigmoidGLM
from dpnotebooks.problems.data import code_labels

DATASETS, EPSILONS, SPLITS, SEEDS = ("breast-cancer", "digits", "wine"), (0.5, 1.0, 4.0), (1, 2, 3), (0, 1)
CLIPS = {"logistic": (1.0, 0.3, 0.1, 0.03), "sigmoid-glm": (0.5, 0.15, 0.05, 0.015), "mlp": (1.0, 0.3, 0.1)}   # L first

def problem(model:str, dataset:str, split:int):
    "The training problem: 63_utility's `logistic` or MLP, or `sigmoid-glm` on the same rows with 0/1 targets."
    if model != "sigmoid-glm": return utility_problem(dataset, model, split)
    return SigmoidGLM(code_labels(utility_task(dataset, split).train, "sigmoid-glm", say=False)[0])

def clip_accuracy(model:str, dataset:str, C:float, epsilon:float) -> float:
    "Mean held-out accuracy over the development splits and noise seeds."
    acc = []
    for split, seed in itertools.product(SPLITS, SEEDS):
        task, prob = utility_task(dataset, split), problem(model, dataset, split)
        acc.append(accuracy(prob, minimize(prob, "dp-sgd", epsilon=epsilon, delta=1e-5, seed=seed, C=C).x, task.test))
    return float(np.mean(acc))

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    cols = [(d, e) for d in DATASETS for e in EPSILONS]
    print("| model | C | " + " | ".join(f"{d} ε={e:g}" for d, e in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for model in CLIPS:
        for C in CLIPS[model]:
            t = time.perf_counter()
            row = [clip_accuracy(model, d, C, e) for d, e in cols]
            print(f"| {model} | {C:g} | " + " | ".join(f"{a:.3f}" for a in row) + f" |  ({time.perf_counter() - t:.0f} s)", flush=True)
