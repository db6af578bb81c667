# A stand-in for the `torch` package (tests/python/bwdfwd.py): only what
# the shim recognises by name, torch/autograd/graph.py's
# _engine_run_backward (docs/PYTHON.md "Work handed to a worker thread").
