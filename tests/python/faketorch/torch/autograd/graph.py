# The caller's side of backward, as in PyTorch 2.2+: the Python thread
# waits here (GIL released by ctypes) while the engine thread runs the
# backward nodes (tests/python/faketorch.cpp ft_backward).


def _engine_run_backward(lib):
    return lib.ft_backward()  # L:engine
