"""The papers' algorithms, one module each: O2NC and its oracles (KLT, ZTC), DP-SGD, private SpiderBoost, the SOSP escapes, the convex and GLM routes.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
