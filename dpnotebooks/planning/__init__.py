"""From a request to a run: recipes, `plan` and `minimize` (priced, refused or run), the cost model, private tuning, the rate table.

A layer of dpnotebooks: it imports only itself and the layers below it (tests/test_layers.py)."""
