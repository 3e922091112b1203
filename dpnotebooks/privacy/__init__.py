"""Privacy accounting: dp-accounting's calibration, the ledger of releases and its events, per-sample clipping, the tree mechanism.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
