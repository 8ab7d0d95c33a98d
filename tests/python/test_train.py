"""The training API against PyTorch on a small MLP: SGD (momentum, nesterov,
weight decay) and AdamW step by step, gradient accumulation, clipping by
global norm, a learning-rate schedule, checkpoints (round trip, truncated and
mismatched files) and progress output."""
import os

import numpy as np
import pytest
import torch

import lumen
from harness import expect_error
from train_reference import lumen_mlp_loss, mlp_init, torch_mlp_logits, torch_optimizer, torch_params

SIZES = (7, 9, 4)
RNG = np.random.default_rng(0)
XS = RNG.normal(size=(6, 8, 7)).astype(np.float32)  # 6 batches of 8
YS = RNG.integers(0, 4, size=(6, 8)).astype(np.int32)


def make_trainer(backend, optimizer, lr, **options):
    return lumen.train.Trainer(lumen_mlp_loss(2), mlp_init(SIZES), {"x": ((8, 7), lumen.float32), "y": ((8,), lumen.int32)},
                               optimizer=optimizer, lr=lr, backend=backend, **options)


def torch_run(optimizer, lr, steps, clip=0.0, schedule=None, **options):
    params = torch_params(mlp_init(SIZES))
    opt = torch_optimizer(params, optimizer, lr, **options)
    losses = []
    for s in range(steps):
        if schedule:
            for group in opt.param_groups:
                group["lr"] = schedule(s)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(torch_mlp_logits(params, torch.from_numpy(XS[s]), 2),
                                                 torch.from_numpy(YS[s]).long())
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(list(params.values()), clip)
        opt.step()
        losses.append(loss.item())
    return losses, {k: v.detach().numpy() for k, v in params.items()}


OPTIMIZERS = [
    ("sgd", 0.1, {}),
    ("sgd", 0.05, {"momentum": 0.9, "weight_decay": 0.01}),
    ("sgd", 0.05, {"momentum": 0.8, "nesterov": True, "dampening": 0.0}),
    ("sgd", 0.05, {"momentum": 0.9, "dampening": 0.3}),
    ("adamw", 0.01, {"weight_decay": 0.1}),
    ("adamw", 0.02, {"beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "weight_decay": 0.0}),
]


@pytest.mark.parametrize("optimizer,lr,options", OPTIMIZERS, ids=[f"{o}-{i}" for i, (o, _, _) in enumerate(OPTIMIZERS)])
def test_optimizer_matches_torch(backend, optimizer, lr, options):
    trainer = make_trainer(backend, optimizer, lr, **options)
    losses = [trainer.step({"x": XS[s], "y": YS[s]}) for s in range(6)]
    want_losses, want_params = torch_run(optimizer, lr, 6, **options)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for name, value in want_params.items():
        np.testing.assert_allclose(trainer.parameter(name), value, rtol=1e-4, atol=1e-5, err_msg=name)
    assert trainer.steps == 6


def test_clipping_and_lr_schedule_match_torch(backend):
    schedule = lambda s: 0.05 * (1 - s / 6)  # noqa: E731
    trainer = make_trainer(backend, "adamw", 0.05, clip_norm=0.3, weight_decay=0.01)
    losses = []
    for s in range(6):
        trainer.lr = schedule(s)
        losses.append(trainer.step({"x": XS[s], "y": YS[s]}))
    want_losses, want_params = torch_run("adamw", 0.05, 6, clip=0.3, schedule=schedule, weight_decay=0.01)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for name, value in want_params.items():
        np.testing.assert_allclose(trainer.parameter(name), value, rtol=1e-4, atol=1e-5, err_msg=name)
    # The clip really bites: without it the parameters differ.
    _, unclipped = torch_run("adamw", 0.05, 6, schedule=schedule, weight_decay=0.01)
    assert np.abs(unclipped["w0"] - want_params["w0"]).max() > 1e-4


def test_gradient_accumulation_equals_the_big_batch(backend):
    # Two micro-batches of 4 (accumulation 2) update like one batch of 8 (mean losses, equal sizes).
    micro = lumen.train.Trainer(lumen_mlp_loss(2), mlp_init(SIZES), {"x": ((4, 7), lumen.float32), "y": ((4,), lumen.int32)},
                                optimizer="sgd", lr=0.1, momentum=0.9, accumulation=2, backend=backend)
    for s in range(3):
        micro.step({"x": XS[s, :4], "y": YS[s, :4]})
        assert micro.steps == s  # no update yet
        micro.step({"x": XS[s, 4:], "y": YS[s, 4:]})
        assert micro.steps == s + 1
    _, want = torch_run("sgd", 0.1, 3, momentum=0.9)
    for name, value in want.items():
        np.testing.assert_allclose(micro.parameter(name), value, rtol=1e-4, atol=1e-5, err_msg=name)


def test_parameters_do_not_move_between_accumulation_steps(backend):
    micro = lumen.train.Trainer(lumen_mlp_loss(2), mlp_init(SIZES), {"x": ((4, 7), lumen.float32), "y": ((4,), lumen.int32)},
                                optimizer="adamw", lr=0.1, accumulation=3, backend=backend)
    before = micro.parameter("w1")
    micro.step({"x": XS[0, :4], "y": YS[0, :4]})
    micro.step({"x": XS[0, 4:], "y": YS[0, 4:]})
    np.testing.assert_array_equal(micro.parameter("w1"), before)
    assert np.abs(micro.parameter("w1.grad_acc")).max() > 0
    micro.step({"x": XS[1, :4], "y": YS[1, :4]})
    assert np.abs(micro.parameter("w1") - before).max() > 1e-3
    np.testing.assert_array_equal(micro.parameter("w1.grad_acc"), 0)


def test_checkpoint_round_trip_and_errors(tmp_path):
    a = make_trainer("interp", "adamw", 0.01, weight_decay=0.1)
    for s in range(3):
        a.step({"x": XS[s], "y": YS[s]})
    path = str(tmp_path / "ckpt.safetensors")
    a.save(path)
    b = make_trainer("interp", "adamw", 0.01, weight_decay=0.1)
    b.load(path)
    assert b.steps == 3
    for name in a.state_names:
        np.testing.assert_array_equal(b.parameter(name), a.parameter(name), err_msg=name)
    # Continuing from the checkpoint is continuing the run (bias correction uses the restored step).
    np.testing.assert_allclose(b.step({"x": XS[3], "y": YS[3]}), a.step({"x": XS[3], "y": YS[3]}), rtol=1e-6)
    np.testing.assert_array_equal(b.parameter("w0"), a.parameter("w0"))

    fresh = make_trainer("interp", "adamw", 0.01, weight_decay=0.1)
    w0 = fresh.parameter("w0")
    data = open(path, "rb").read()
    truncated = str(tmp_path / "truncated.safetensors")
    with open(truncated, "wb") as f:
        f.write(data[: len(data) - 40])
    expect_error(lambda: fresh.load(truncated), "truncated.safetensors")
    np.testing.assert_array_equal(fresh.parameter("w0"), w0)  # nothing half-loaded
    assert fresh.steps == 0
    sgd = make_trainer("interp", "sgd", 0.01, momentum=0.9)
    expect_error(lambda: sgd.load(path), "optimizer 'adamw'", "'sgd'")
    other = lumen.train.Trainer(lumen_mlp_loss(2), mlp_init((7, 5, 4)), {"x": ((8, 7), lumen.float32), "y": ((8,), lumen.int32)},
                                optimizer="adamw", lr=0.01, backend="interp")
    expect_error(lambda: other.load(path), "tensor 'w0'", "[9, 7]", "[5, 7]")
    assert not os.path.exists(path + ".tmp")


def test_progress_output(capsys):
    trainer = make_trainer("interp", "sgd", 0.1, progress=2)
    for s in range(4):
        trainer.step({"x": XS[s], "y": YS[s]})
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["2", "4"]
    assert "loss" in lines[0] and "steps/s" in lines[0]
    assert trainer.steps_per_second > 0


def test_trainer_errors():
    expect_error(lambda: make_trainer("interp", "rmsprop", 0.1), "unknown optimizer 'rmsprop'")
    expect_error(lambda: make_trainer("interp", "adamw", 0.1, beta1=1.0), "betas")
    expect_error(lambda: make_trainer("interp", "sgd", 0.1, accumulation=0), "accumulation")
    trainer = make_trainer("interp", "sgd", 0.1)
    expect_error(lambda: trainer.step({"x": XS[0], "y": YS[0], "lr": np.float32(1)}), "'lr'")
    expect_error(lambda: trainer.parameter("nope"), "no parameter or optimizer state named 'nope'")
    g = lumen.Graph()
    x = g.input("x", (3,))
    expect_error(lambda: lumen._lumen.train.Trainer(g, lumen.sum(x * x), [x], {}), "whole state tensors")
