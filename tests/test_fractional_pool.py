"""fractional_max_pool2d / 3d (composite/fractional_pool.cpp), forward and backward,
against the CPU."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_close_to_cpu, assert_grads_close_to_cpu, make

pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize(
    "dims, shape, kernel, out",
    [
        (2, (2, 3, 9, 7), 2, (4, 5)),
        (2, (3, 8, 8), 3, (3, 3)),
        (3, (1, 2, 6, 5, 7), (2, 2, 3), (3, 3, 2)),
    ],
)
def test_fractional_max_pool(dims, shape, kernel, out):
    fn = getattr(F, f"fractional_max_pool{dims}d")
    n = shape[0] if len(shape) == dims + 2 else 1
    samples = torch.rand(n, shape[-dims - 1], dims, generator=torch.Generator().manual_seed(0))
    x = make(shape, unique=True).requires_grad_()

    def pool(t, s):
        return fn(t, kernel, output_size=out, return_indices=True, _random_samples=s)

    assert_close_to_cpu(pool, x.detach(), samples)
    assert_grads_close_to_cpu(lambda t, s: pool(t, s)[0], x, samples)


def test_fractional_max_pool_half_and_nan():
    x = make((1, 2, 6, 6), torch.float16)
    x[0, 0, 1, 1] = float("nan")
    samples = torch.rand(1, 2, 2, generator=torch.Generator().manual_seed(1)).half()
    assert_close_to_cpu(
        lambda t, s: F.fractional_max_pool2d(
            t, 2, output_size=3, return_indices=True, _random_samples=s
        ),
        x,
        samples,
    )


def test_fractional_max_pool_random_samples_as_the_cpu_takes_them():
    """More sample rows than the batch are allowed and the first used (nn.Fractional
    MaxPool3d's own samples with an unbatched input: it raised "expected random samples of
    shape [1, 4, 3]"); a wrong dtype, rank or size raises the CPU's error."""
    from conftest import cpu_error

    gen = torch.Generator().manual_seed(2)
    for dims, shape in ((2, (4, 6, 6)), (3, (4, 5, 5, 5)), (3, (2, 4, 5, 5, 5))):
        fn = getattr(F, f"fractional_max_pool{dims}d")
        samples = torch.rand(3, 4, dims, generator=gen)
        x = make(shape, unique=True).requires_grad_()

        def pool(t, s, fn=fn, dims=dims):
            return fn(t, 2, output_ratio=(0.5,) * dims, _random_samples=s)

        assert_grads_close_to_cpu(pool, x, samples)
        for bad in (samples.double(), samples[:1], samples[:, :3], samples[..., :1], samples[0]):
            if bad.shape[0] == 1 and len(shape) == dims + 1:
                continue  # one row is enough for an unbatched input
            want = cpu_error(pool, x.detach(), bad)
            got = cpu_error(pool, x.detach().to("vkml"), bad.to("vkml"))
            assert got == want, (got, want)
