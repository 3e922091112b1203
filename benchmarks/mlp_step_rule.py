"""How the built-in MLPs' DP-SGD step rule was chosen (issue 43 §8), and where it was checked.

`fit`: on the four tasks of 63_utility's reference comparison (breast-cancer, digits, digits-10, tabular; split 0),
ε ∈ {1, 2, 4, 8}, noise seeds 0-9, the MLP d-32-1 (k outputs for k > 2) with DP-SGD under each candidate rule, against
the reference's test-selected best of its 12 configurations (`REFERENCE_GRID`) over the same seeds. It counts the points
where a rule's mean is within one standard error of that best (the larger SE of the two), the issue's target.

`check`: the old rule against the declared one where the constants were not fitted: split 1 of the four tasks, the
wine task, and a network with two hidden layers of 64 (split 0); 5 seeds, held-out accuracy mean ± SE.

Held-out accuracy is not private; it is used here to choose a public constant of the model class, as 63_utility's
reference best is chosen on the test split. The reported utility figures use seeds 0-4 of split 0.

    .venv/bin/python benchmarks/mlp_step_rule.py fit      # about 6 minutes on 2 cores
    .venv/bin/python benchmarks/mlp_step_rule.py check    # about 3 minutes
    .venv/bin/python benchmarks/mlp_step_rule.py splits   # about half a minute
    .venv/bin/python benchmarks/mlp_step_rule.py rules    # about 9 minutes

`splits`: the declared rule against the reference's test-selected best where the MLP missed the target at ten seeds
(the ten digits at ε = 8), on splits 1 and 2, 5 seeds each: is that miss the seeds' or the rule's?

`rules`: the declared rule against changes of one of its parts (a smaller batch, a longer or shorter distance R, more
passes), on the four tasks' splits 0 and 1 at 10 seeds, each point against the reference's test-selected best on the same
split and seeds: the count within one SE, and each point's gap. Is there a rule that meets the target where it missed?
"""
import math, sys, time, warnings
from concurrent.futures import ProcessPoolExecutor
import numpy as np

TASKS, EPSILONS, DELTA = ("breast-cancer", "digits", "digits-10", "tabular"), (1.0, 2.0, 4.0, 8.0), 1e-5
RULES = {   # name: (the step's distance R as a function of the MLP, passes as a function of n); None: the generic 2Φ/(L·G)
    "generic 2Φ/(L·G), 30 passes": (None, lambda n: 30),
    "R = 0.035·d, 30 passes": (lambda m: 0.035 * m.dim, lambda n: 30),
    "R = 1.25·p, 30 passes": (lambda m: 1.25 * m.p, lambda n: 30),
    "R = 1.25·p, min(30, n/25) passes (the default)": ("declared", None),
}

ALTERNATIVES = {   # name: the `minimize` overrides of a change to the declared rule, as a function of the MLP
    "declared": lambda m: {},
    "B = 2√n": lambda m: dict(batch_size=round(2 * math.sqrt(len(m.data)))),
    "B = 64": lambda m: dict(batch_size=64),
    "R = 1.5·p": lambda m: dict(travel=1.5 * m.p),
    "R = 1.0·p": lambda m: dict(travel=1.0 * m.p),
    "min(45, n/25) passes": lambda m: dict(epochs=max(1, min(45, round(len(m.data) / 25)))),
}

def mlp(task:str, split:int, hidden=32):
    from dpnotebooks.experiments.utility import utility_task, UTILITY_CLASSES
    from dpnotebooks.algorithms.deep_mlp import make_mlp
    t = utility_task(task, split)
    return make_mlp(t.train, hidden, k=UTILITY_CLASSES.get(task, 2), seed=0), t.test

def overrides(rule:str, m, epsilon:float) -> dict:
    "The `minimize` overrides that run `rule` on the MLP `m` (the declared rule needs none)."
    from dpnotebooks.planning.minimize import plan_run
    from dpnotebooks.algorithms.dpsgd import dpsgd_step_size
    travel, passes = RULES[rule]
    if travel == "declared": return {}
    p = plan_run(m, "dp-sgd", epsilon, DELTA, epochs=passes(len(m.data)), travel=1.0).params     # T, B, σ at these passes
    lr = (dpsgd_step_size(m.dim, p.batch, m.L, getattr(m, "Phi", 1.0), p.sigma, p.sampling, p.C) if travel is None
          else dpsgd_step_size(m.dim, p.batch, m.L, 1.0, p.sigma, p.sampling, p.C, travel(m), p.T))
    return dict(epochs=passes(len(m.data)), lr=lr)

def accuracy_of(job) -> float:
    "One seeded run's held-out accuracy: job = (task, split, hidden, ε, seed, rule or a reference method)."
    warnings.simplefilter("ignore")
    from dpnotebooks.experiments.utility import reference_config
    from dpnotebooks.planning.minimize import minimize
    from dpnotebooks.planning.tuning import accuracy
    task, split, hidden, eps, seed, how = job
    m, test = mlp(task, split, hidden)
    over = (reference_config(how) if how.startswith("reference") else ALTERNATIVES[how](m) if how in ALTERNATIVES
            else overrides(how, m, eps))
    return accuracy(m, minimize(m, "dp-sgd", epsilon=eps, delta=DELTA, seed=seed, **over).x, test)

def mean_se(a) -> tuple: return float(np.mean(a)), float(np.std(a, ddof=1) / math.sqrt(len(a)))

def table(ex, cases, how:str, seeds) -> dict:
    "{(task, split, hidden, ε): (mean, SE)} of `how` over `seeds`."
    jobs = [(t, s, h, e, seed, how) for t, s, h in cases for e in EPSILONS for seed in seeds]
    acc = dict(zip(jobs, ex.map(accuracy_of, jobs)))
    return {(t, s, h, e): mean_se([acc[t, s, h, e, seed, how] for seed in seeds]) for t, s, h in cases for e in EPSILONS}

def fit(ex):
    from dpnotebooks.experiments.utility import reference_methods
    cases, seeds, best = [(t, 0, 32) for t in TASKS], range(10), {}
    for ref in reference_methods()[1:]:
        for k, v in table(ex, cases, ref, seeds).items():
            if k not in best or v[0] > best[k][0]: best[k] = v
    print("| rule | within one SE of the reference's best | " + " | ".join(f"{t} ε={e:g}" for t in TASKS for e in EPSILONS) + " |")
    print("|---|---|" + "---|" * len(TASKS) * len(EPSILONS))
    print("| reference best | | " + " | ".join(f"{best[t, 0, 32, e][0]:.3f}" for t in TASKS for e in EPSILONS) + " |")
    for rule in RULES:
        got = table(ex, cases, rule, seeds)
        ok = {k: got[k][0] >= best[k][0] - max(got[k][1], best[k][1]) for k in got}
        print(f"| {rule} | {sum(ok.values())} of {len(ok)} | " + " | ".join(f"{got[k][0]:.3f}{'' if ok[k] else ' ✗'}" for k in got) + " |", flush=True)

def check(ex):
    cases = [("wine", 0, 32)] + [(t, 1, 32) for t in TASKS] + [(t, 0, (64, 64)) for t in TASKS]
    old, new = (table(ex, cases, rule, range(5)) for rule in ("generic 2Φ/(L·G), 30 passes", "R = 1.25·p, min(30, n/25) passes (the default)"))
    print("| task | split | hidden | " + " | ".join(f"ε={e:g} old → declared" for e in EPSILONS) + " |")
    print("|---|---|---|" + "---|" * len(EPSILONS))
    for t, s, h in cases:
        print(f"| {t} | {s} | {h} | " + " | ".join(f"{old[t, s, h, e][0]:.3f} → {new[t, s, h, e][0]:.3f} ± {new[t, s, h, e][1]:.3f}" for e in EPSILONS) + " |", flush=True)

def splits(ex):
    from dpnotebooks.experiments.utility import reference_methods
    hows, seeds, eps = ["R = 1.25·p, min(30, n/25) passes (the default)"] + reference_methods(), range(5), 8.0
    jobs = [("digits-10", s, 32, eps, seed, h) for s in (1, 2) for h in hows for seed in seeds]
    acc = dict(zip(jobs, ex.map(accuracy_of, jobs)))
    print("| split | defaults | reference's best | its configuration | within one SE |\n|---|---|---|---|---|")
    for s in (1, 2):
        m = {h: mean_se([acc["digits-10", s, 32, eps, seed, h] for seed in seeds]) for h in hows}
        best = max(hows[1:], key=lambda h: m[h][0]); d, b = m[hows[0]], m[best]
        print(f"| {s} | {d[0]:.4f} ± {d[1]:.4f} | {b[0]:.4f} ± {b[1]:.4f} | {best.partition(':')[2]} | {'yes' if d[0] >= b[0] - max(d[1], b[1]) else 'no'} |", flush=True)

def rules(ex):
    from dpnotebooks.experiments.utility import reference_methods
    cases, seeds, best = [(t, s, 32) for t in TASKS for s in (0, 1)], range(10), {}
    for ref in reference_methods()[1:]:
        for k, v in table(ex, cases, ref, seeds).items():
            if k not in best or v[0] > best[k][0]: best[k] = v
    print("| rule | within one SE (of 32) | mean accuracy | the points it misses: gap to the reference's best |\n|---|---|---|---|")
    for rule in ALTERNATIVES:
        got = table(ex, cases, rule, seeds)
        ok = {k: got[k][0] >= best[k][0] - max(got[k][1], best[k][1]) for k in got}
        miss = ", ".join(f"{t} {s} ε={e:g}: {got[t, s, h, e][0] - best[t, s, h, e][0]:+.3f}" for (t, s, h, e) in got if not ok[t, s, h, e])
        print(f"| {rule} | {sum(ok.values())} | {np.mean([v[0] for v in got.values()]):.4f} | {miss} |", flush=True)

if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "fit"
    if what not in ("fit", "check", "splits", "rules"): sys.exit("usage: mlp_step_rule.py [fit|check|splits|rules]")
    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as ex: dict(fit=fit, check=check, splits=splits, rules=rules)[what](ex)
    print(f"({time.perf_counter() - t0:.0f} s)")
