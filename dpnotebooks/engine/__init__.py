"""What every algorithm runs on: the algorithm record and its registry, the run loop, checkpoints, faults.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
