"""The pipeline tests' torch on one thread: tiny models run faster so, above all on a
busy 2-core machine, where two threads wait for each other at every small operation.
A test file takes it with `from torch_threads import one_thread`, which pytest then
applies to each of its tests."""
import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
