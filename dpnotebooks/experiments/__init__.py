"""The papers' experiments (sample complexity, stationarity rates, SOSP escape, utility, generalization) and the benchmarks.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
