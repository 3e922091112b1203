"""The ground floor: the array backend (numpy, cupy, torch, array-api-strict) and its seeded random streams, input validation, the data streams and views an algorithm reads through, and the smoothing samplers.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
