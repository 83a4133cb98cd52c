"""A gated linear recurrence layer trained with prefixscan.linear_recurrence.

The layer computes, per channel, ``h[t] = a[t] * h[t-1] + (1 - a[t]) * u[t]``
with an input-dependent gate ``a[t] = sigmoid(W_a x[t])`` and input
``u[t] = W_u x[t]`` (the recurrence of gated linear RNNs and diagonal
state-space models), then reads out ``y[t] = W_o h[t]``.  The whole sequence
runs as one parallel scan; autograd differentiates through it (the backward is
the same scan run from the end).  A few Adam steps on the CPU teach it an
exponential moving average; then it runs a packed batch of sequences of
different lengths (``offsets``, as ``cu_seqlens``) and returns their final
states.  Run: ``python examples/gated_recurrence.py``.
"""

import torch

import prefixscan as ps


class GatedLinearRecurrence(torch.nn.Module):
    def __init__(self, d_in: int, d_hidden: int, d_out: int):
        super().__init__()
        self.gate = torch.nn.Linear(d_in, d_hidden)
        self.input = torch.nn.Linear(d_in, d_hidden)
        self.readout = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x, offsets=None):
        """x: (batch, time, d_in); returns y (batch, time, d_out) and the final states."""
        a = torch.sigmoid(self.gate(x))  # the decay, per step and channel
        b = (1 - a) * self.input(x)
        h, final = ps.linear_recurrence(a, b, axis=1, offsets=offsets, return_final=True)
        return self.readout(h), final


def moving_average(x, alpha=0.1):
    """The target: an exponential moving average of x along time."""
    return ps.linear_recurrence(torch.full_like(x, 1 - alpha), alpha * x, axis=1)


def main():
    torch.manual_seed(0)
    model = GatedLinearRecurrence(1, 8, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    for step in range(30):
        x = torch.randn(16, 64, 1)
        y, _ = model(x)
        loss = torch.nn.functional.mse_loss(y, moving_average(x))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0 or step == 29:
            print(f"step {step:2d} loss {loss.item():.5f}")

    # Three sequences of lengths 10, 25 and 29 packed along time: the state
    # restarts at each start, and one final state comes back per sequence.
    packed = torch.randn(1, 64, 1)
    with torch.no_grad():
        y, final = model(packed, offsets=torch.tensor([0, 10, 35, 64]))
    print("packed output", tuple(y.shape), "final states", tuple(final.shape))


if __name__ == "__main__":
    main()
