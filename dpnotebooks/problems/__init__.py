"""What is optimized: the `Problem` protocol and the built-in losses, framework adapters (JAX, PyTorch) with ghost clipping, datasets and their public schema, stationarity measures, the lower-bound instances.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
