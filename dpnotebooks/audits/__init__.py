"""Empirical privacy audits of the mechanisms and of every private algorithm: threshold tests, canaries, one-run audits.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
