"""Train a small MLP on scikit-learn's 8x8 handwritten digits with torch-vkml.

    python examples/digits_mlp.py                # on the default vkml device
    python examples/digits_mlp.py --device cpu   # the same on the CPU

Exits with status 1 if test accuracy is below 0.95 or any op fell back to
the CPU.
"""

import argparse
import sys
import time

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def main():
    parser = argparse.ArgumentParser(description="Train an MLP on the digits data set.")
    parser.add_argument("--device", choices=["vkml", "cpu"], default="vkml")
    parser.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args()

    if args.device == "vkml":
        import torch_vkml

        device = torch_vkml.device()
        print(f"device: {device} ({torch_vkml.device_name()})")
    else:
        torch_vkml = None
        device = torch.device("cpu")
        print("device: cpu")
    torch.manual_seed(0)

    # Data: 1797 images of 8x8 pixels, standardised with training-set statistics.
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data, digits.target, test_size=0.2, random_state=42
    )
    scaler = StandardScaler().fit(x_train)
    x_train = torch.tensor(scaler.transform(x_train), dtype=torch.float32, device=device)
    x_test = torch.tensor(scaler.transform(x_test), dtype=torch.float32, device=device)
    y_train = torch.tensor(y_train, dtype=torch.int64, device=device)
    y_test = torch.tensor(y_test, dtype=torch.int64, device=device)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=32, shuffle=True)

    model = nn.Sequential(
        nn.Linear(64, 128),
        nn.ReLU(),
        nn.Linear(128, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    ).to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    start = time.perf_counter()
    for epoch in range(args.epochs):
        model.train()
        total_loss = 0.0
        progress = tqdm(loader, desc=f"epoch {epoch + 1}/{args.epochs}")
        for batch, (inputs, targets) in enumerate(progress, start=1):
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            progress.set_postfix(loss=f"{total_loss / batch:.4f}")

    model.eval()
    with torch.no_grad():
        predictions = model(x_test).argmax(dim=1)
        accuracy = (predictions == y_test).float().mean().item()
    elapsed = time.perf_counter() - start

    fallbacks = torch_vkml.fallback_counts() if torch_vkml else {}
    print(f"test accuracy: {accuracy:.4f}")
    print(f"wall time: {elapsed:.1f} s")
    print(f"cpu fallbacks: {sum(fallbacks.values())}")
    for op, calls in sorted(fallbacks.items()):
        print(f"  {op}: {calls}")
    return 0 if accuracy >= 0.95 and not fallbacks else 1


if __name__ == "__main__":
    sys.exit(main())
