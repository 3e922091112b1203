"""The command line `dpnb`.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
