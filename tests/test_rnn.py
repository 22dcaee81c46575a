"""nn.LSTM / nn.GRU / nn.RNN on vkml against the CPU: outputs, final states and every
parameter gradient, and a few optimizer steps. On accelerators PyTorch runs LSTM/GRU
through fused cell ops that have no CPU kernel, so a fallback cannot rescue them."""

import pytest
import torch

import torch_vkml

pytestmark = pytest.mark.usefixtures("no_fallback")

TOL = dict(atol=2e-5, rtol=2e-5)


def pair(cls, **kw):
    torch.manual_seed(0)
    cpu = cls(**kw)
    dev = cls(**kw).to("vkml")
    dev.load_state_dict(cpu.state_dict())
    return cpu, dev


@pytest.mark.parametrize("cls", [torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN])
@pytest.mark.parametrize(
    "kw",
    [
        dict(num_layers=1, batch_first=False, bidirectional=False, bias=True),
        dict(num_layers=2, batch_first=True, bidirectional=True, bias=True),
        dict(num_layers=2, batch_first=True, bidirectional=False, bias=False),
    ],
    ids=["1layer", "2layer-bidir-batch_first", "2layer-nobias"],
)
def test_forward_backward_match_cpu(cls, kw):
    cpu, dev = pair(cls, input_size=6, hidden_size=5, **kw)
    shape = (3, 4, 6) if kw["batch_first"] else (4, 3, 6)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    xd = x.to("vkml").requires_grad_()
    x.requires_grad_()
    out_c, state_c = cpu(x)
    out_d, state_d = dev(xd)
    torch.testing.assert_close(out_d.cpu(), out_c, **TOL)
    states_c = state_c if isinstance(state_c, tuple) else (state_c,)
    states_d = state_d if isinstance(state_d, tuple) else (state_d,)
    for a, b in zip(states_d, states_c, strict=True):
        torch.testing.assert_close(a.cpu(), b, **TOL)
    # A loss that reaches every output and state.
    loss_c = out_c.pow(2).sum() + sum(s.sum() for s in states_c)
    loss_d = out_d.pow(2).sum() + sum(s.sum() for s in states_d)
    loss_c.backward()
    loss_d.backward()
    torch.testing.assert_close(xd.grad.cpu(), x.grad, **TOL)
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters(), strict=True):
        torch.testing.assert_close(q.grad.cpu(), p.grad, **TOL, msg=lambda m, n=name: f"{n}: {m}")


def test_lstm_with_initial_state_and_cell_api():
    cpu, dev = pair(torch.nn.LSTM, input_size=4, hidden_size=3)
    g = torch.Generator().manual_seed(2)
    x, h0, c0 = (
        torch.randn(5, 2, 4, generator=g),
        torch.randn(1, 2, 3, generator=g),
        torch.randn(1, 2, 3, generator=g),
    )
    out_c, (h_c, c_c) = cpu(x, (h0, c0))
    out_d, (h_d, c_d) = dev(x.to("vkml"), (h0.to("vkml"), c0.to("vkml")))
    torch.testing.assert_close(out_d.cpu(), out_c, **TOL)
    torch.testing.assert_close(c_d.cpu(), c_c, **TOL)
    cell_c = torch.nn.GRUCell(4, 3)
    cell_d = torch.nn.GRUCell(4, 3).to("vkml")
    cell_d.load_state_dict(cell_c.state_dict())
    torch.testing.assert_close(cell_d(x[0].to("vkml")).cpu(), cell_c(x[0]), **TOL)


def test_lstm_classifier_trains_like_cpu():
    torch.manual_seed(0)

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(5, 8, batch_first=True)
            self.head = torch.nn.Linear(8, 3)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    cpu = Classifier()
    dev = Classifier().to("vkml")
    dev.load_state_dict(cpu.state_dict())
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(6, 7, 5, generator=g), torch.randint(0, 3, (6,), generator=g)
    opt_c = torch.optim.Adam(cpu.parameters(), lr=1e-2)
    opt_d = torch.optim.Adam(dev.parameters(), lr=1e-2)
    xd, yd = x.to("vkml"), y.to("vkml")
    for _ in range(5):
        for model, opt, a, b in ((cpu, opt_c, x, y), (dev, opt_d, xd, yd)):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(a), b)
            loss.backward()
            opt.step()
            if model is cpu:
                loss_c = loss.item()
            else:
                assert loss.item() == pytest.approx(loss_c, rel=1e-4, abs=1e-5)
    assert torch_vkml.fallback_counts() == {}
